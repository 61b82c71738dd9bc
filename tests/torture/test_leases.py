"""Compaction leases after a crash: a dead holder on this machine is taken over at once.

A real ``lcm compact`` is SIGKILLed while its summarizer runs (its lease
would stay valid for minutes); the next ``lcm compact`` must compact at once
and exit 0. While the holder lives, the answer names it (process, host,
since when) and exits 3, not 0: the work asked for did not happen. On SQLite
and PostgreSQL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lossless.engine.engine import Engine

SESSION = "s-lease"


def lcm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lossless", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def conversation(backend: str) -> int:
    with Engine.open() as engine:
        session = engine.conversation(SESSION, project="/w")
        session.ingest(
            [
                {
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": f"turn {i}: " + "word " * 300,
                }
                for i in range(40)
            ]
        )
        conv = engine.store.conversations.find_by_session(SESSION)
        assert conv is not None
        return conv.id


@pytest.fixture
def slow_summarizer(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    marker = tmp_path / "summarizer-started"
    script = tmp_path / "slow.py"
    script.write_text(
        "import os, sys, time\n"
        f"open({str(marker)!r}, 'w').write(str(os.getpid()))\n"
        "sys.stdin.read()\n"
        "time.sleep(120)\n"
    )
    env = {
        "LCM_SUMMARIZER_PROVIDER": "command",
        "LCM_SUMMARIZER_COMMAND": f"{sys.executable} {script}",
        "LCM_SUMMARIZER_RETRIES": "0",
    }
    yield env, marker
    if marker.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(marker.read_text()), signal.SIGKILL)


def _compacting(env: dict[str, str], marker: Path) -> subprocess.Popen[bytes]:
    """An ``lcm compact`` holding the lease, stopped inside its summarizer."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lossless", "compact", SESSION, "--wait", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), "the compaction never reached its summarizer"
    return proc


def test_a_live_holder_is_named_and_the_answer_is_not_success(
    conversation: int, slow_summarizer: tuple[dict[str, str], Path]
) -> None:
    env, marker = slow_summarizer
    holder = _compacting(env, marker)
    try:
        busy = lcm("compact", SESSION, "--wait", "0")
        assert busy.returncode == 3, busy.stdout + busy.stderr
        assert "Traceback" not in busy.stderr
        assert f"process {holder.pid} on {socket.gethostname()} holds" in busy.stderr
        assert " since 20" in busy.stderr and "until 20" in busy.stderr
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)


def test_a_killed_holders_lease_is_taken_over_at_once(
    conversation: int, slow_summarizer: tuple[dict[str, str], Path]
) -> None:
    env, marker = slow_summarizer
    doomed = _compacting(env, marker)
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(10)
    with Engine.open() as engine:
        held = engine.store.leases.holder(conversation)
        assert held is not None and f":{doomed.pid}:" in held.owner  # still valid for minutes
        assert held.expires_at - time.time() > 60
    started = time.monotonic()
    done = lcm("compact", SESSION, "--wait", "0", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert time.monotonic() - started < 60
    with Engine.open() as engine:
        assert engine.store.summaries.list(conversation), "nothing was compacted"
        assert engine.store.leases.holder(conversation) is None
    verify = lcm("verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
