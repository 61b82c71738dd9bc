"""The background worker: requests, leases, one worker per home, crashes, idle exit."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lossless.engine.engine import Engine
from lossless.process import FileLock
from lossless.worker import (
    DONE_AT,
    LAST_ERROR,
    Worker,
    is_pending,
    request_compaction,
    running_worker_pid,
    worker_lock,
)

SMALL = {
    "LCM_LEAF_CHUNK_TOKENS": "1500",
    "LCM_LEAF_TARGET_TOKENS": "300",
    "LCM_FRESH_TAIL_COUNT": "6",
    "LCM_LEAF_MIN_FANOUT": "3",
}


def lcm(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "lcm"
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "lossless"]
    return subprocess.run(
        [*argv, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in SMALL.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def conversation(small: None, shared_data: Path, lcm_home: Path) -> int:
    """A real session, ingested, with nothing compacted yet."""
    with Engine.open() as engine:
        result = engine.import_file(
            shared_data / "claude-code/spotter/tool_heavy.jsonl", "claude-code", final=True
        )
        assert result.conversation_id is not None and result.messages_added > 10
        assert not engine.store.summaries.list(result.conversation_id)
        return result.conversation_id


def state(conversation_id: int) -> tuple[bool, dict[str, object], int]:
    with Engine.open() as engine:
        conv = engine.store.conversations.get(conversation_id)
        assert conv is not None
        return is_pending(conv), conv.metadata, len(engine.store.summaries.list(conversation_id))


def test_once_serves_pending_requests_then_nothing(conversation: int) -> None:
    with Engine.open() as engine:
        request_compaction(engine.store, conversation, "sweep")
    pending, _, summaries = state(conversation)
    assert pending and summaries == 0

    first = lcm("worker", "--once", "--json")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    (job,) = report["jobs"]
    assert job["conversation_id"] == conversation and job["mode"] == "sweep"
    assert job["passes"] > 0 and job["summaries"] and job["error"] is None
    assert job["tokens_after"] < job["tokens_before"]
    pending, meta, summaries = state(conversation)
    assert not pending and summaries == len(job["summaries"]) and meta[LAST_ERROR] is None

    second = lcm("worker", "--once")
    assert second.returncode == 0 and "nothing to compact" in second.stderr
    # The lease was released: anyone can take it now.
    with Engine.open() as engine:
        lease = engine.store.leases.acquire(conversation, "probe", 5)
        assert lease is not None
        engine.store.leases.release(lease)


def test_a_request_made_during_a_run_stays_pending(conversation: int) -> None:
    with Engine.open() as engine:
        request_compaction(engine.store, conversation, "incremental")
        snapshot = engine.store.conversations.get(conversation)
        assert snapshot is not None
        time.sleep(0.01)
        # A hook asks again while the worker works from its older snapshot.
        request_compaction(engine.store, conversation, "incremental")
        outcome = Worker(engine).compact(snapshot)
        assert outcome.error is None
        after = engine.store.conversations.get(conversation)
        assert after is not None and is_pending(after)
        assert after.metadata[DONE_AT] == snapshot.metadata["lcm_compaction_requested_at"]
        # A later sweep request is never downgraded by an incremental one.
        request_compaction(engine.store, conversation, "sweep")
        request_compaction(engine.store, conversation, "incremental")
        latest = engine.store.conversations.get(conversation)
        assert latest is not None and latest.metadata["lcm_compaction_mode"] == "sweep"


def test_one_worker_per_home(conversation: int, lcm_home: Path) -> None:
    with Engine.open() as engine:
        request_compaction(engine.store, conversation)
    holder = worker_lock(lcm_home)
    assert holder.acquire()
    holder.write_pid()
    try:
        assert running_worker_pid(lcm_home) == os.getpid()
        blocked = lcm("worker", "--once")
        assert blocked.returncode == 0
        assert f"another worker is running (pid {os.getpid()})" in blocked.stderr
        assert state(conversation)[0]
    finally:
        holder.release()
    assert running_worker_pid(lcm_home) is None
    assert lcm("worker", "--once").returncode == 0
    assert not state(conversation)[0]


def test_idle_worker_exits(lcm_home: Path) -> None:
    started = time.monotonic()
    result = lcm("worker", "--idle", "0.5", "--poll", "0.1", "--json", timeout=30)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["idle_exit"] is True
    assert time.monotonic() - started < 10
    assert running_worker_pid(lcm_home) is None


def test_worker_stops_when_its_home_is_deleted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    script = Path(sys.executable).parent / "lcm"
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "lossless"]
    worker = subprocess.Popen(
        [*argv, "--home", str(home), "worker", "--idle", "600", "--poll", "0.1", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while running_worker_pid(home) != worker.pid and time.monotonic() < deadline:
            time.sleep(0.05)
        assert running_worker_pid(home) == worker.pid, "the worker never took its lock"
        shutil.rmtree(home)
        out, err = worker.communicate(timeout=30)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    assert worker.returncode == 0, err
    report = json.loads(out)
    assert report["home_gone"] is True and report["idle_exit"] is False


def test_misconfigured_summarizer_is_reported_not_retried_forever(conversation: int) -> None:
    with Engine.open() as engine:
        request_compaction(engine.store, conversation, "sweep")
    env = {
        "LCM_SUMMARIZER_PROVIDER": "command",
        "LCM_SUMMARIZER_COMMAND": "/nonexistent/summarizer --flag",
    }
    result = lcm("worker", "--once", env=env)
    assert result.returncode == 1
    assert "not found" in result.stderr
    pending, meta, summaries = state(conversation)
    assert not pending and summaries == 0
    assert "not found" in str(meta[LAST_ERROR])


@pytest.fixture
def slow_summarizer(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A summarizer command that announces itself and then hangs."""
    marker = tmp_path / "summarizer.pid"
    script = tmp_path / "hang.py"
    script.write_text(
        "import os, sys, time\n"
        f"open({str(marker)!r}, 'w').write(str(os.getpid()))\n"
        "sys.stdin.read()\n"
        "time.sleep(120)\n"
    )
    yield f"{sys.executable} {script}", marker
    if marker.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(marker.read_text()), signal.SIGKILL)


def test_killed_worker_loses_nothing(
    conversation: int, slow_summarizer: tuple[str, Path], lcm_home: Path
) -> None:
    command, marker = slow_summarizer
    with Engine.open() as engine:
        request_compaction(engine.store, conversation, "sweep")
    script = Path(sys.executable).parent / "lcm"
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "lossless"]
    env = {
        **os.environ,
        "LCM_SUMMARIZER_PROVIDER": "command",
        "LCM_SUMMARIZER_COMMAND": command,
        "LCM_SUMMARIZER_RETRIES": "0",
    }
    doomed = subprocess.Popen(
        [*argv, "worker", "--lease-ttl", "5", "--idle", "60"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the worker never called its summarizer"
        assert running_worker_pid(lcm_home) == doomed.pid
    finally:
        doomed.kill()
        doomed.wait(10)
    killed_at = time.monotonic()
    assert running_worker_pid(lcm_home) is None
    assert state(conversation)[0]

    # The dead worker's compaction lease has not expired yet, but its holder is
    # gone from this machine: taken over at once, no waiting for its end.
    # (Without embedding the backlog after it: --once would, and that is not
    # what is timed here.)
    done = lcm("worker", "--once", "--json", env={"LCM_SEMANTIC_ENABLED": "false"})
    assert time.monotonic() - killed_at < 4.5, "too slow to show the lease was taken over"
    assert done.returncode == 0, done.stdout + done.stderr
    (job,) = json.loads(done.stdout)["jobs"]
    assert job["summaries"] and not job["busy"]
    pending, _, summaries = state(conversation)
    assert not pending and summaries > 0


def test_worker_lock_is_released_by_a_dead_holder(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from lossless.process import FileLock;"
            f"lock = FileLock(Path({str(path)!r})); assert lock.acquire(); lock.write_pid();"
            "print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        assert not FileLock(path).acquire()
    finally:
        child.kill()
        child.wait(10)
    lock = FileLock(path)
    assert lock.acquire(timeout_s=2)
    lock.release()
