"""The resident hook server (``lossless.hook_server``): real processes, real sockets.

Each test turns the server on for its own home (the suite runs with it off,
tests/conftest.py) and stops it at the end. A hook served by the server must
answer, store and log what the same hook run inline does; anything going
wrong with the server (none yet, killed mid-request, stale code, another
install, turned off) must leave the hook to run inline.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from tests.test_hooks import (
    SPOTTER,
    assert_same_store,
    bulk_import,
    claude_payload,
    claude_turn,
    hooks_log,
    lcm_argv,
    snapshot,
)

from lossless.config import load_config
from lossless.hook_server import wire
from lossless.hook_server.control import ServerState, alive, read_info, state, stop
from lossless.hook_server.identity import CodeIdentity
from lossless.store import open_store
from lossless.worker import running_worker_pid

SESSION = "5e0c9d2a-7f31-4b8e-9a0d-3c6b1e2f4a57"


@pytest.fixture
def serving(monkeypatch: pytest.MonkeyPatch, lcm_home: Path) -> Iterator[Path]:
    """The hook server on for ``lcm_home``; stopped (and checked gone) at the end."""
    monkeypatch.setenv("LCM_HOOKS_SERVER", "true")
    monkeypatch.setenv("LCM_HOOKS_SERVER_IDLE_S", "60")
    # The workers hooks start exit soon after their work: tests wait for that.
    monkeypatch.setenv("LCM_WORKER_IDLE_S", "1")
    yield lcm_home
    pid = (read_info(lcm_home) or {}).get("pid")
    stop(lcm_home)
    if isinstance(pid, int):
        assert not alive(pid) or _zombie(pid), f"hook server {pid} left running"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True


def hook(
    event: str,
    payload: dict[str, Any] | bytes,
    home: Path,
    *,
    env: dict[str, str] | None = None,
    argv0: list[str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    argv = [*(argv0 or lcm_argv()), "--home", str(home), "hook", event, "--client", "claude-code"]
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run(argv, input=data, capture_output=True, timeout=120, env=env)


def wait_for_server(home: Path, timeout_s: float = 60.0) -> ServerState:
    deadline = time.monotonic() + timeout_s
    while True:
        found = state(home)
        if found.running and not found.busy and Path(wire.socket_path(str(home))).exists():
            return found
        assert time.monotonic() < deadline, (home / "logs" / wire.LOG_NAME).read_text()
        time.sleep(0.05)


def wait_gone(pid: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while alive(pid) and not _zombie(pid):
        assert time.monotonic() < deadline, f"hook server {pid} still running"
        time.sleep(0.05)


def same_ids(output: bytes) -> bytes:
    return re.sub(rb"mem_[0-9a-f]{16}", b"mem_", output)


def log_lines(home: Path) -> list[str]:
    return hooks_log(home).splitlines()


def served(line: str) -> bool:
    return line.endswith("; hook server") or " hook server: " in line


def end_session(home: Path, transcript: Path, session: str) -> None:
    """SessionEnd: the final ingest (the last message is held back until then)."""
    done = hook("SessionEnd", claude_payload("SessionEnd", transcript, session), home)
    assert done.returncode == 0 and served(log_lines(home)[-1]), log_lines(home)[-1]


def start_server(home: Path, transcript: Path) -> ServerState:
    """Fire one hook (inline: no server yet), which starts the server; wait for it."""
    claude_turn(transcript, SESSION, 1)
    done = hook("Stop", claude_payload("Stop", transcript, SESSION), home)
    assert done.returncode == 0, done.stderr.decode()
    assert "started hook server" in log_lines(home)[-1], log_lines(home)
    return wait_for_server(home)


# --------------------------------------------------------------------------- the same as inline


def test_a_served_hook_answers_stores_and_logs_as_an_inline_one(
    tmp_path: Path, serving: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inline_home = tmp_path / "inline-home"
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    # A memory to recall at UserPromptSubmit, in both homes.
    for home in (serving, inline_home):
        remembered = subprocess.run(
            [
                *lcm_argv(),
                "--home",
                str(home),
                "remember",
                "--project",
                str(transcript.parent),
                "we deploy with the blue-green script",
            ],
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert remembered.returncode == 0, remembered.stderr.decode()
    off = {**os.environ, "LCM_HOOKS_SERVER": "false"}
    start_server(serving, transcript)
    hook("Stop", claude_payload("Stop", transcript, SESSION), inline_home, env=off)
    events = [
        "UserPromptSubmit",
        "PostToolUse",
        "Stop",
        "UserPromptSubmit",
        "SessionStart",
        "PreCompact",
        "SessionEnd",
    ]
    answers = []
    for turn, event in enumerate(events, 2):
        claude_turn(transcript, SESSION, turn)
        payload = claude_payload(
            event, transcript, SESSION, prompt="how do we deploy?", source="resume"
        )
        via_server = hook(event, payload, serving)
        inline = hook(event, payload, inline_home, env=off)
        assert via_server.returncode == inline.returncode == 0
        # Memory ids are made from the time each home stored its memory.
        assert same_ids(via_server.stdout) == same_ids(inline.stdout), event
        assert via_server.stderr == inline.stderr == b"", event
        answers.append(via_server.stdout)
        assert served(log_lines(serving)[-1]), log_lines(serving)[-1]
        assert not served(log_lines(inline_home)[-1])
    assert b"blue-green" in answers[0]  # recalled, by the server as inline
    assert b"additionalContext" in answers[4]  # the SessionStart view
    assert snapshot(serving) == snapshot(inline_home)

    # The log lines say the same but for the pid, the time and the server's note.
    def shape(line: str) -> str:
        words = [w for w in line.split(" ")[1:] if not w.startswith("pid=")]
        text = " ".join(w for w in words if not w.endswith("ms")).removesuffix("; hook server")
        return re.sub(r"started worker \d+", "started worker", text)

    got = [shape(line) for line in log_lines(serving)[1:]]
    want = [shape(line) for line in log_lines(inline_home)[1:]]
    assert got[: len(want)] == want
    for home in (serving, inline_home):
        wait_for_worker(home)


def wait_for_worker(home: Path) -> None:
    deadline = time.monotonic() + 120
    while running_worker_pid(home) is not None:
        assert time.monotonic() < deadline, "the worker did not finish"
        time.sleep(0.2)


def test_a_failing_request_is_that_requests_failure_and_the_server_goes_on(
    tmp_path: Path, serving: Path
) -> None:
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    first = start_server(serving, transcript)
    for bad in (b"", b"not json", b"[1, 2]", b"\xff\xfe"):
        done = hook("Stop", bad, serving)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert " error " in log_lines(serving)[-1] and served(log_lines(serving)[-1])
    # Refused: not under a folder hooks may read (LCM_TRANSCRIPT_DIRS is tmp_path).
    outside = tmp_path.parent / f"{tmp_path.name}-elsewhere.jsonl"
    claude_turn(outside, SESSION, 1)
    done = hook("Stop", claude_payload("Stop", outside, SESSION), serving)
    assert done.returncode == 0 and " error " in log_lines(serving)[-1]
    claude_turn(transcript, SESSION, 2)
    done = hook("Stop", claude_payload("Stop", transcript, SESSION), serving)
    assert done.returncode == 0 and " ok " in log_lines(serving)[-1]
    assert state(serving).pid == first.pid
    assert state(serving).requests == 6


# --------------------------------------------------------------------------- falling back


def test_with_no_server_the_hook_runs_inline_and_starts_one(tmp_path: Path, serving: Path) -> None:
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    found = start_server(serving, transcript)
    assert found.idle_timeout_s == 60
    assert (Path(wire.run_dir(str(serving))).stat().st_mode & 0o777) == 0o700
    assert (Path(wire.socket_path(str(serving))).stat().st_mode & 0o777) == 0o600
    claude_turn(transcript, SESSION, 2)
    assert hook("Stop", claude_payload("Stop", transcript, SESSION), serving).returncode == 0
    assert served(log_lines(serving)[-1]) and f"pid={found.pid} " in log_lines(serving)[-1]
    shown = subprocess.run(
        [*lcm_argv(), "--home", str(serving), "hook-server", "status"],
        capture_output=True,
        timeout=60,
        check=True,
    ).stdout.decode()
    assert f"running (pid {found.pid}" in shown and "exits after 60 s idle" in shown
    stopped = subprocess.run(
        [*lcm_argv(), "--home", str(serving), "hook-server", "stop"],
        capture_output=True,
        timeout=60,
        check=True,
    ).stdout.decode()
    assert f"stopped (pid {found.pid})" in stopped
    wait_gone(found.pid)
    assert not Path(wire.socket_path(str(serving))).exists()
    assert state(serving) == ServerState(running=False, socket=wire.socket_path(str(serving)))


def test_a_server_killed_mid_request_leaves_the_hook_to_run_inline_storing_nothing_twice(
    tmp_path: Path, serving: Path
) -> None:
    claude = tmp_path / "project" / f"{SESSION}.jsonl"
    claude.parent.mkdir()
    server = start_server(serving, claude)
    assert server.pid is not None
    # One large delta (12,000 messages: six of the importer's batches) keeps
    # the server busy long enough to be killed after it committed part of it.
    other = "0b7d3c1e-2f4a-4c6b-8d9e-1a2b3c4d5e6f"
    live = tmp_path / "project" / f"{other}.jsonl"
    long_transcript(live, other, 6000)
    payload = claude_payload("Stop", live, other)
    argv = [*lcm_argv(), "--home", str(serving), "hook", "Stop", "--client", "claude-code"]
    event = tmp_path / "event.json"
    event.write_text(json.dumps(payload), "utf-8")
    with event.open("rb") as stdin:
        client = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while (stored := _stored(serving, other)) == 0:
        assert client.poll() is None, "the hook ended before the server could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.kill(server.pid, signal.SIGKILL)
    out, err = client.communicate(timeout=120)
    assert (client.returncode, out, err) == (0, b"", b"")
    line = log_lines(serving)[-1]
    assert f" Stop session={other} " in line and " ok " in line and not served(line), line
    assert "started hook server" in line  # for the next hook
    total = _stored(serving, other)
    assert 0 < stored < total, (stored, total)  # killed mid-request, the rest stored inline
    wait_for_server(serving)
    # The last message waits for the final hook (as without a server).
    for path, session in ((live, other), (claude, SESSION)):
        end_session(serving, path, session)
    bulk_import([claude, live], tmp_path / "bulk")
    assert_same_store(serving, tmp_path / "bulk")
    wait_for_worker(serving)


def long_transcript(path: Path, session: str, turns: int) -> None:
    """``turns`` user/assistant pairs, as ``claude_turn`` writes them, with valid times."""
    with path.open("a", encoding="utf-8") as fh:
        for turn in range(1, turns + 1):
            stamp = f"2026-03-02T{9 + turn // 3600:02d}:{turn // 60 % 60:02d}:{turn % 60:02d}"
            user = {
                "type": "user",
                "uuid": f"u-{turn}",
                "sessionId": session,
                "cwd": str(path.parent),
                "timestamp": f"{stamp}.000Z",
                "message": {"role": "user", "content": f"question {turn}"},
            }
            answer = {
                "type": "assistant",
                "uuid": f"a-{turn}",
                "parentUuid": f"u-{turn}",
                "sessionId": session,
                "cwd": str(path.parent),
                "timestamp": f"{stamp}.500Z",
                "message": {
                    "id": f"msg_{turn}",
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"answer {turn}"}],
                },
            }
            fh.write(json.dumps(user) + "\n" + json.dumps(answer) + "\n")


def _stored(home: Path, session: str) -> int:
    """Messages of ``session`` in the store at ``home`` now."""
    try:
        store = open_store(load_config(home))
    except Exception:
        return 0
    try:
        conversation = store.conversations.find_by_session(session)
        return 0 if conversation is None else store.messages.count(conversation.id)
    finally:
        store.close()


def _server_cpu(pid: int) -> float:
    """CPU seconds the process has used since it started (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_stale_server_declines_exits_and_the_next_hook_gets_a_new_one(
    tmp_path: Path, serving: Path
) -> None:
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    old = start_server(serving, transcript)
    assert old.pid is not None
    import lossless

    version_file = Path(lossless.__file__)
    before = version_file.stat()
    # What an upgrade does to the version's file (its content is left alone).
    os.utime(version_file, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    try:
        claude_turn(transcript, SESSION, 2)
        done = hook("Stop", claude_payload("Stop", transcript, SESSION), serving)
    finally:
        os.utime(version_file, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert done.returncode == 0
    line = log_lines(serving)[-1]
    assert " ok " in line and not served(line) and "started hook server" in line, line
    wait_gone(old.pid)
    new = wait_for_server(serving)
    assert new.pid != old.pid


def test_another_installation_is_never_served_by_this_one(tmp_path: Path, serving: Path) -> None:
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    server = start_server(serving, transcript)
    # Another virtualenv that sees this one's packages: another install.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")],
        check=True,
        timeout=120,
    )
    (site,) = (tmp_path / "venv" / "lib").glob("python*/site-packages")
    ours = next(p for p in sys.path if p.endswith("site-packages"))
    (site / "this.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    other = tmp_path / "venv" / "bin" / "python"
    claude_turn(transcript, SESSION, 2)
    done = hook(
        "Stop",
        claude_payload("Stop", transcript, SESSION),
        serving,
        argv0=[str(other), "-m", "lossless"],
    )
    assert done.returncode == 0
    line = log_lines(serving)[-1]
    assert " ok " in line and not served(line) and "started hook server" not in line, line
    assert state(serving).pid == server.pid


def test_turning_the_server_off_stops_it_and_hooks_run_inline(
    tmp_path: Path, serving: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LCM_HOOKS_SERVER")  # on by default; the file decides
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    server = start_server(serving, transcript)
    assert server.pid is not None
    (serving / "config.toml").write_text("[hooks]\nserver = false\n", "utf-8")
    for turn in (2, 3):
        claude_turn(transcript, SESSION, turn)
        assert hook("Stop", claude_payload("Stop", transcript, SESSION), serving).returncode == 0
        line = log_lines(serving)[-1]
        assert " ok " in line and not served(line) and "started hook server" not in line, line
    wait_gone(server.pid)
    assert not state(serving).running
    # The environment variable turns it off without asking any server.
    (serving / "config.toml").unlink()
    off = {**os.environ, "LCM_HOOKS_SERVER": "0"}
    claude_turn(transcript, SESSION, 4)
    assert (
        hook("Stop", claude_payload("Stop", transcript, SESSION), serving, env=off).returncode == 0
    )
    assert "started hook server" not in log_lines(serving)[-1]


def test_the_server_exits_when_idle_or_when_its_socket_or_home_goes(
    tmp_path: Path, serving: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    server = start_server(serving, transcript)
    assert server.pid is not None
    os.unlink(wire.socket_path(str(serving)))
    wait_gone(server.pid, 10)
    monkeypatch.setenv("LCM_HOOKS_SERVER_IDLE_S", "1")
    claude_turn(transcript, SESSION, 2)
    hook("Stop", claude_payload("Stop", transcript, SESSION), serving)
    idle = wait_for_server(serving)
    assert idle.pid is not None and idle.idle_timeout_s == 1
    wait_gone(idle.pid, 10)
    assert "exit: idle for 1 s" in (serving / "logs" / wire.LOG_NAME).read_text()
    monkeypatch.setenv("LCM_HOOKS_SERVER_IDLE_S", "60")
    claude_turn(transcript, SESSION, 3)
    hook("Stop", claude_payload("Stop", transcript, SESSION), serving)
    last = wait_for_server(serving)
    assert last.pid is not None
    moved = tmp_path / "moved-home"
    serving.rename(moved)
    wait_gone(last.pid, 10)
    assert "its home is gone" in (moved / "logs" / wire.LOG_NAME).read_text()
    moved.rename(serving)


# --------------------------------------------------------------------------- concurrency


def test_two_sessions_hooks_at_once_store_each_exactly_once(
    shared_data: Path, tmp_path: Path, serving: Path
) -> None:
    sources = sorted((shared_data / SPOTTER).glob("*.jsonl"), key=lambda p: p.stat().st_size)[:2]
    project = tmp_path / "project"
    project.mkdir()
    lives = [project / source.name for source in sources]
    for live in lives:
        live.write_bytes(b"")
    start_server(serving, project / f"{SESSION}.jsonl")
    chunks = [_chunks(source.read_bytes(), 12) for source in sources]

    def session(index: int) -> list[int]:
        codes = []
        for chunk in chunks[index]:
            with lives[index].open("ab") as fh:
                fh.write(chunk)
            for event in ("PostToolUse", "Stop"):
                payload = claude_payload(event, lives[index], lives[index].stem)
                codes.append(hook(event, payload, serving).returncode)
        payload = claude_payload("SessionEnd", lives[index], lives[index].stem)
        codes.append(hook("SessionEnd", payload, serving).returncode)
        return codes

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(session, range(2)))
    assert all(code == 0 for codes in results for code in codes)
    lines = log_lines(serving)
    assert all(" ok " in line for line in lines), [x for x in lines if " ok " not in x]
    assert sum(served(line) for line in lines) > len(lines) // 2
    end_session(serving, project / f"{SESSION}.jsonl", SESSION)
    bulk_import([project / f"{SESSION}.jsonl", *lives], tmp_path / "bulk")
    assert_same_store(serving, tmp_path / "bulk")


def _chunks(data: bytes, count: int) -> list[bytes]:
    step = max(1, len(data) // count)
    return [data[i : i + step] for i in range(0, len(data), step)]


def test_hooks_while_the_worker_compacts(
    shared_data: Path, tmp_path: Path, serving: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small chunks so that the session's first hooks already ask for compaction.
    monkeypatch.setenv("LCM_LEAF_CHUNK_TOKENS", "400")
    monkeypatch.setenv("LCM_FRESH_TAIL_COUNT", "4")
    source = max((shared_data / SPOTTER).glob("*.jsonl"), key=lambda p: p.stat().st_size)
    live = tmp_path / "project" / source.name
    live.parent.mkdir()
    live.write_bytes(b"")
    start_server(serving, tmp_path / "project" / f"{SESSION}.jsonl")
    for chunk in _chunks(source.read_bytes(), 10):
        with live.open("ab") as fh:
            fh.write(chunk)
        done = hook("Stop", claude_payload("Stop", live, live.stem), serving)
        assert done.returncode == 0
    assert (
        hook("SessionEnd", claude_payload("SessionEnd", live, live.stem), serving).returncode == 0
    )
    lines = log_lines(serving)
    assert any("started worker" in line and served(line) for line in lines), lines
    assert all(" ok " in line for line in lines), [x for x in lines if " ok " not in x]
    end_session(serving, tmp_path / "project" / f"{SESSION}.jsonl", SESSION)
    wait_for_worker(serving)
    bulk_import([tmp_path / "project" / f"{SESSION}.jsonl", live], tmp_path / "bulk")
    assert_same_store(serving, tmp_path / "bulk")


# --------------------------------------------------------------------------- pieces


def test_code_identity_sees_files_added_replaced_and_edited(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("__version__ = '1'\n")
    (root / "sub" / "mod.py").write_text("x = 1\n")
    identity = CodeIdentity(str(root))
    assert not identity.quick_change() and not identity.any_change()
    st = (root / "sub" / "mod.py").stat()
    os.utime(root / "sub" / "mod.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert not identity.quick_change() and identity.any_change()
    identity = CodeIdentity(str(root))
    (root / "sub" / "new.py").write_text("")
    assert identity.quick_change()
    identity = CodeIdentity(str(root))
    shutil.copy(root / "sub" / "mod.py", root / "mod.tmp")
    os.replace(root / "mod.tmp", root / "sub" / "mod.py")
    assert identity.quick_change()


# --------------------------------------------------------------------------- lean client

# What `lcm hook` may load beyond the interpreter's own start when a server
# answers: this package's client and wire format, nothing that builds the
# store, the engine, the configuration or redaction.
CLIENT_MAY_IMPORT = {
    "lossless",
    "lossless.cli",
    "lossless.hook_server",
    "lossless.hook_server.client",
    "lossless.hook_server.invocation",
    "lossless.hook_server.wire",
    "_socket",
}
# Standard library modules the client path must not need (each costs a hook
# start-up time the server exists to save).
CLIENT_MUST_NOT_IMPORT = (
    "typing",
    "re",
    "enum",
    "json",
    "socket",
    "selectors",
    "dataclasses",
    "pathlib",
    "sqlite3",
    "hashlib",
    "functools",
)

_MODULES_AFTER_CLIENT = """
import sys
before = set(sys.modules)
from lossless.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
loaded = sorted(set(sys.modules) - before)
sys.stderr.write(repr(loaded))
"""


@pytest.mark.parametrize("event", ["Stop", "UserPromptSubmit", "PostToolUse"])
def test_the_client_path_stays_lean(tmp_path: Path, serving: Path, event: str) -> None:
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    start_server(serving, transcript)
    claude_turn(transcript, SESSION, 2)
    payload = claude_payload(event, transcript, SESSION, prompt="what did we deploy?")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _MODULES_AFTER_CLIENT,
            "--home",
            str(serving),
            "hook",
            event,
            "--client",
            "claude-code",
        ],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert served(log_lines(serving)[-1]), log_lines(serving)[-1]
    loaded = set(ast.literal_eval(done.stderr.decode()))
    ours = {name for name in loaded if name.startswith("lossless")}
    assert ours <= CLIENT_MAY_IMPORT, sorted(ours - CLIENT_MAY_IMPORT)
    heavy = sorted(
        name
        for name in loaded
        for banned in CLIENT_MUST_NOT_IMPORT
        if name == banned or name.startswith(banned + ".")
    )
    assert heavy == [], f"the hook client imported {heavy}"


def test_status_and_doctor_show_the_server_and_uninstall_stops_it(
    tmp_path: Path, serving: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # lcm doctor's probes can outlast a short idle timeout on a loaded machine.
    monkeypatch.setenv("LCM_HOOKS_SERVER_IDLE_S", "900")
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    server = start_server(serving, transcript)

    def lcm(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*lcm_argv(), "--home", str(serving), *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    shown = json.loads(lcm("status", "--json").stdout)["hook_server"]
    assert shown["running"] and shown["pid"] == server.pid and shown["idle_timeout_s"] == 900
    assert f"hook server:   running (pid {server.pid}" in lcm("status").stdout
    doctor = lcm("doctor", "--no-probe").stdout
    assert f"running (pid {server.pid}, exits after 900 s idle" in doctor, doctor
    assert lcm("install", "claude-code").returncode == 0
    removed = lcm("uninstall", "claude-code")
    assert removed.returncode == 0, removed.stderr
    assert f"stopped the hook server (pid {server.pid})" in removed.stdout
    assert server.pid is not None
    wait_gone(server.pid)
    assert "not running" in lcm("hook-server", "status").stdout
