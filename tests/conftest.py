"""Fixtures shared by every test module.

Real things only: real SQLite files in temporary folders, a real LCM_HOME.
Tests that need the real transcripts read them in place from ../shared/data
and skip with a message when that folder is absent.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
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
