"""Fixtures shared by every test module.

Real things only: real SQLite files in temporary folders, a real LCM_HOME.
Tests that need the real transcripts read them in place from ../shared/data
and skip with a message when that folder is absent.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from tests.pg_fixtures import running_server
from tests.store.postgres_server import EmbeddedPostgres

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"

# Hundreds of tests run hooks in homes of their own: a resident hook server per
# home would outlive its test. The tests of the server (and a run of the hook
# tests with it, LCM_TEST_HOOK_SERVER=1) turn it on.
SERVING = os.environ.get("LCM_TEST_HOOK_SERVER", "") not in ("", "0")
# Settings for every process the suite starts, set for the whole session so
# that module- and session-scoped fixtures (which run outside a test's own
# environment below) get them too; fixtures that start from an environment
# without LCM_* add them back. Embedding a test's history costs CPU minutes
# where the `semantic` extra is installed (an import starts a worker for it);
# the semantic tests turn it on for themselves.
SUITE_ENV = {"LCM_SEMANTIC_ENABLED": "false"}
if not SERVING:
    SUITE_ENV["LCM_HOOKS_SERVER"] = "false"
os.environ.update(SUITE_ENV)
# The commands fit their tables to COLUMNS when it is set; a test that wants a
# width sets it. Inherited, it would cut every table the others read: a
# shell's, or pytest-xdist's workers', which start with COLUMNS=80, LINES=24.
for _inherited in ("COLUMNS", "LINES"):
    os.environ.pop(_inherited, None)
# CI (``.ci/run`` sets LCM_CI=1) draws the same property-test examples on every
# run: Hypothesis's "ci" profile (derandomized, no example database), so that a
# fresh clone's run cannot pass or fail by luck. Everywhere else each run draws
# new examples; a failure one finds is kept as an ``@example`` of its test.
if os.environ.get("LCM_CI"):
    settings.load_profile("ci")


def processes_started_under(base: str) -> dict[int, str]:
    """Processes whose command line or environment names a path under ``base``
    (this run's temporary folders: a test's home, profile or transcripts)."""
    marker = (base.rstrip("/") + "/").encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue  # gone, or not ours to read
        if marker in cmdline or marker in environ:
            found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace")[:160]
    return found


def stop_processes_started_under(base: str) -> dict[int, str]:
    """SIGTERM each of ``processes_started_under(base)``; the ones it found."""
    found = processes_started_under(base)
    for pid in found:
        with contextlib.suppress(OSError):  # it may have ended meanwhile
            os.kill(pid, signal.SIGTERM)
    return found


#: What ``_nothing_left_running`` found and stopped, for the terminal summary.
LEFT_RUNNING: dict[int, str] = {}


@pytest.fixture(scope="session", autouse=True)
def _nothing_left_running(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[None]:
    """After the run, nothing it started may go on (a worker, a hook server, a
    browser, a client's app-server): each is stopped, and named in the summary
    so the test that left it can be found (torn down last of all fixtures)."""
    yield
    if not Path("/proc/self/environ").exists():
        return
    found = stop_processes_started_under(str(tmp_path_factory.getbasetemp()))
    LEFT_RUNNING.update(found)
    # An xdist worker's summary is never shown: its list goes to the controller.
    output = getattr(pytestconfig, "workeroutput", None)
    if output is not None:
        output["left_running"] = {str(pid): command for pid, command in found.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """The controller gathers what each xdist worker found left running."""
    left = getattr(node, "workeroutput", {}).get("left_running", {})
    LEFT_RUNNING.update({int(pid): command for pid, command in left.items()})


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if LEFT_RUNNING:
        terminalreporter.section("processes left running by the tests (now stopped)")
        for pid, command in sorted(LEFT_RUNNING.items()):
            terminalreporter.write_line(f"{pid}: {command}")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test ever touches the user's ~/.lcm, ~/.claude or ~/.codex."""
    home = tmp_path / "lcm-home"
    monkeypatch.setenv("LCM_HOME", str(home))
    monkeypatch.setenv("LCM_CLAUDE_HOME", str(tmp_path / "claude-home"))
    monkeypatch.setenv("LCM_CODEX_HOME", str(tmp_path / "codex-home"))
    # Hooks read transcripts only from the clients' folders and these: tests
    # write theirs anywhere under their temporary folder.
    monkeypatch.setenv("LCM_TRANSCRIPT_DIRS", str(tmp_path))
    for name in ("LCM_STORAGE_BACKEND", "LCM_SUMMARIZER_PROVIDER", "LCM_POSTGRES_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in SUITE_ENV.items():
        monkeypatch.setenv(name, value)
    if SERVING:
        monkeypatch.setenv("LCM_HOOKS_SERVER_IDLE_S", "60")
    yield
    if SERVING:
        # The test's hooks may have started a server in its home: never leave it behind.
        from lossless.hook_server.control import stop

        stop(home)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[EmbeddedPostgres]:
    """The session's one real PostgreSQL 18 server (tests/store and ``own_pg_server``)."""
    yield from running_server()


@pytest.fixture
def lcm_home(tmp_path: Path) -> Path:
    return tmp_path / "lcm-home"


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real transcripts not found at {SHARED_DATA} (../shared/data)")
    return SHARED_DATA
