"""Concurrent hooks, a worker and readers on one store, on SQLite and PostgreSQL.

Three live sessions grow at once; for each growth step every session fires
two ``lcm hook`` processes at the same moment (as a client's PostToolUse and
Stop can), while a worker compacts and ``lcm grep`` / ``lcm search`` /
``lcm status`` read. Nothing may fail, nothing be lost or duplicated: the
store ends with exactly the messages of a clean import, ``lcm verify`` is
clean, and the hook log holds no error ("database is locked" included).

``LCM_TORTURE_TRIALS`` sets the growth steps (default 3; ``tests/torture/knobs.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from tests.torture.knobs import TRIALS, scaled
from tests.torture.live import lcm_argv, lcm_env

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.process import running_worker_pid

STEPS = max(2, TRIALS)
SOURCES = [
    "claude-code/spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "claude-code/spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
    "claude-code/spotter/tool_heavy.jsonl",
]
LINES = scaled(150, 240)


def _hook(home: Path, event: str, transcript: Path) -> subprocess.Popen[bytes]:
    payload = {
        "session_id": transcript.stem,
        "transcript_path": str(transcript),
        "cwd": str(transcript.parent),
        "hook_event_name": event,
    }
    proc = subprocess.Popen(
        lcm_argv("hook", event, "--client", "claude-code", "--inline-bytes", str(10**9)),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=lcm_env(home),
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    proc.stdin = None  # communicate() must not flush it again
    return proc


def _contents(config_home: Path, env: dict[str, str] | None = None) -> list[tuple[str, int, str]]:
    config = load_config(config_home, env=env) if env is not None else load_config(config_home)
    with Engine.open(config=config) as engine:
        return sorted(
            (c.session_id, m.seq, m.content)
            for c in engine.store.conversations.list()
            for m in engine.store.messages.iter_all(c.id)
        )


def test_concurrent_hooks_worker_and_readers(
    backend: str, shared_data: Path, tmp_path: Path
) -> None:
    sessions = {}
    for i, source in enumerate(SOURCES):
        lines = (shared_data / source).read_bytes().splitlines(keepends=True)[:LINES]
        sessions[f"s-concurrent-{i}"] = lines

    clean = tmp_path / "clean-files"
    clean.mkdir()
    for name, lines in sessions.items():
        (clean / f"{name}.jsonl").write_bytes(b"".join(lines))
    clean_home = tmp_path / "clean"
    imported = subprocess.run(
        lcm_argv("import", str(clean), "--complete"),
        capture_output=True,
        text=True,
        env=lcm_env(clean_home, LCM_STORAGE_BACKEND="sqlite"),
    )
    assert imported.returncode == 0, imported.stderr
    expected = _contents(clean_home, env={})

    home = tmp_path / "home"
    live = tmp_path / "live"
    live.mkdir()
    worker = subprocess.Popen(
        lcm_argv("worker", "--idle", "30"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=lcm_env(home),
    )
    failures: list[str] = []
    try:
        for step in range(1, STEPS + 1):
            for name, lines in sessions.items():
                cut = len(lines) * step // STEPS
                (live / f"{name}.jsonl").write_bytes(b"".join(lines[:cut]))
            event = "SessionEnd" if step == STEPS else "Stop"
            procs = [
                (f"hook {e} {path.name}", _hook(home, e, path))
                for path in sorted(live.glob("*.jsonl"))
                for e in ("PostToolUse", event)
            ]
            procs += [
                (
                    " ".join(args),
                    subprocess.Popen(
                        lcm_argv(*args),
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE,
                        env=lcm_env(home),
                    ),
                )
                for args in (
                    ("grep", "the", "--time-budget", "1"),
                    ("search", "error", "--all-projects"),
                    ("status",),
                )
            ]
            for what, proc in procs:
                _, err = proc.communicate(timeout=300)
                if proc.returncode != 0 and b"no store" not in err:
                    failures.append(f"{what}: rc {proc.returncode}: {err.decode()[-400:]}")
        assert failures == []
        # The worker compacts what the sessions' ends asked for, then idles.
        deadline = time.monotonic() + 180
        while True:
            with Engine.open(config=load_config(home)) as engine:
                waiting = engine.status().compaction_pending
            if not waiting:
                break
            assert time.monotonic() < deadline, f"{waiting} conversation(s) never compacted"
            time.sleep(0.5)
    finally:
        worker.terminate()
        worker.wait(30)
        other = running_worker_pid(home)
        # 0: running, pid not written yet; os.kill(0, ...) would signal pytest's group.
        if other:
            os.kill(other, 15)
    assert _contents(home) == expected
    verify = subprocess.run(lcm_argv("verify"), capture_output=True, text=True, env=lcm_env(home))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    log = (home / "logs" / "hooks.log").read_text()
    assert " error " not in log and "locked" not in log, log[-2000:]
