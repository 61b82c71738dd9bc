"""SIGKILL during hooks and the worker, with readers alongside, on SQLite and PostgreSQL.

A live Claude Code transcript grows chunk by chunk; after each chunk a real
``lcm hook Stop`` (inline import) is started and SIGKILLed at a seeded random
point, while ``lcm grep`` and ``lcm status`` read the same store. The
session's end queues its compaction; the worker that then runs (the one the
hooks started, or one started here) is SIGKILLed at random points too. Then:
``lcm verify`` must find the store whole, one uninterrupted worker run must
finish the compaction (its dead predecessors' leases are taken over at once),
and the stored messages must be exactly those of a clean run.

Knobs: ``tests/torture/knobs.py`` (``LCM_TORTURE_LONG=1`` for the long mode).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import time
from pathlib import Path

from tests.torture.knobs import SEED, TRIALS, scaled
from tests.torture.live import lcm_argv, lcm_env

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.process import running_worker_pid

SOURCE = "claude-code/spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
LINES = scaled(240, 360)
SESSION = "s-live-torture"


def _hook(home: Path, event: str, transcript: Path, **extra: str) -> subprocess.Popen[bytes]:
    import json

    payload = {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(transcript.parent),
        "hook_event_name": event,
    }
    if event == "SessionEnd":
        payload["reason"] = "exit"
    proc = subprocess.Popen(
        lcm_argv("hook", event, "--client", "claude-code", "--inline-bytes", str(10**9)),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=lcm_env(home, **extra),
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    return proc


def _contents(home: Path, env: dict[str, str] | None = None) -> list[tuple[str, int, str, str]]:
    config = load_config(home, env=env) if env is not None else load_config(home)
    with Engine.open(config=config) as engine:
        return [
            (c.session_id, m.seq, m.role, m.content)
            for c in engine.store.conversations.list()
            for m in engine.store.messages.iter_all(c.id)
        ]


def _kill_after(proc: subprocess.Popen[bytes], delay: float) -> bool:
    """SIGKILL ``proc`` unless it ends within ``delay``; True if it was killed."""
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True


def _kill_worker(home: Path, delay: float) -> bool:
    """SIGKILL the store's running worker (started by a hook, or by us) after ``delay``."""
    ours = subprocess.Popen(
        lcm_argv("worker", "--once"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=lcm_env(home),
    )
    time.sleep(delay)
    killed = False
    pid = running_worker_pid(home)
    # 0: a worker holds the lock but has not written its pid yet. os.kill(0, ...)
    # would SIGKILL this test's own process group (pytest itself).
    if pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            killed = True
    return _kill_after(ours, 0) or killed


def _wait_for_no_worker(home: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while running_worker_pid(home) is not None:
        assert time.monotonic() < deadline, "a worker kept running"
        time.sleep(0.1)


def test_kills_during_hooks_and_the_worker_leave_a_whole_store(
    backend: str, shared_data: Path, tmp_path: Path
) -> None:
    lines = (shared_data / SOURCE).read_bytes().splitlines(keepends=True)[:LINES]
    assert len(lines) == LINES

    # The clean run: the whole transcript at once, on SQLite.
    clean_home = tmp_path / "clean"
    clean_file = tmp_path / "clean-live" / f"{SESSION}.jsonl"
    clean_file.parent.mkdir()
    clean_file.write_bytes(b"".join(lines))
    sqlite_only = {"LCM_STORAGE_BACKEND": "sqlite"}
    started = time.monotonic()
    assert _hook(clean_home, "SessionEnd", clean_file, **sqlite_only).wait(120) == 0
    hook_s = time.monotonic() - started
    _wait_for_no_worker(clean_home)
    expected = _contents(clean_home, env={})
    assert len(expected) > 50

    rng = random.Random(SEED)
    home = tmp_path / "tortured"
    live = tmp_path / "live" / f"{SESSION}.jsonl"
    live.parent.mkdir()
    live.write_bytes(b"")
    cuts = sorted(rng.sample(range(1, LINES), TRIALS))
    readers_failed: list[str] = []
    kills = 0
    for cut in [*cuts, LINES]:
        live.write_bytes(b"".join(lines[:cut]))
        hook = _hook(home, "Stop", live)
        # Readers beside the writer: they must never fail or see a traceback.
        readers = [
            subprocess.Popen(
                lcm_argv(*args),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=lcm_env(home),
            )
            for args in (("grep", "the", "--time-budget", "1"), ("status",))
        ]
        kills += _kill_after(hook, rng.uniform(0.05, hook_s))
        for reader in readers:
            _, err = reader.communicate(timeout=120)
            # A reader that starts before the store's first write finds no store.
            if reader.returncode not in (0,) and b"no store" not in err:
                readers_failed.append(err.decode(errors="replace")[-500:])
    assert readers_failed == []

    # The session ends: final ingest, compaction requested, a worker woken.
    assert _hook(home, "SessionEnd", live).wait(120) == 0
    for _ in range(TRIALS):
        kills += _kill_worker(home, rng.uniform(0.05, 1.5))
    _wait_for_no_worker(home)
    assert kills, "no process was killed while it worked: the trials proved nothing"

    verify = subprocess.run(lcm_argv("verify"), capture_output=True, text=True, env=lcm_env(home))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # One uninterrupted worker run finishes the compaction at once.
    done = subprocess.run(
        lcm_argv("worker", "--once", "--json"), capture_output=True, text=True, env=lcm_env(home)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"busy": true' not in done.stdout, done.stdout
    assert _contents(home) == expected
    with Engine.open(config=load_config(home)) as engine:
        (conversation,) = engine.store.conversations.list()
        assert engine.store.summaries.list(conversation.id), "never compacted"
    verify = subprocess.run(lcm_argv("verify"), capture_output=True, text=True, env=lcm_env(home))
    assert verify.returncode == 0, verify.stdout + verify.stderr
