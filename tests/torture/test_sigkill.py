"""SIGKILL at seeded random points during import and compaction (SQLite and PostgreSQL).

Each trial starts a real ``lcm`` process on the real transcripts and kills it
after a random delay (seeded, so a failure can be replayed). After all trials
``lcm verify`` must find the store whole, and a final uninterrupted run must
converge to exactly what a clean run stores.

Knobs (``tests/torture/knobs.py``): ``LCM_TORTURE_TRIALS`` kills per phase
(default 3, with two transcripts), ``LCM_TORTURE_SEED`` the seed; the long
local mode, 60 kills per phase over four transcripts:
``LCM_TORTURE_LONG=1 .venv/bin/pytest tests/torture -q``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.torture.knobs import SEED, TRIALS, scaled

from lossless.config import load_config
from lossless.engine.engine import Engine


def _lcm(
    home: Path, *args: str, timeout: float = 300, **extra: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LCM_HOME": str(home), **extra}
    return subprocess.run(
        [sys.executable, "-m", "lossless", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def _killed_run(home: Path, delay: float, *args: str) -> bool:
    """Run ``lcm *args`` and SIGKILL it after ``delay`` unless it ended; True if killed."""
    env = {**os.environ, "LCM_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lossless", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True


def _contents(home: Path, env: dict[str, str] | None = None) -> list[tuple[str, int, str, str]]:
    """Every stored message: (session, seq, role, content), through the store contract."""
    config = load_config(home, env=env) if env is not None else load_config(home)
    with Engine.open(config=config) as engine:
        return sorted(
            (c.session_id, m.seq, m.role, m.content)
            for c in engine.store.conversations.list()
            for m in engine.store.messages.iter_all(c.id)
        )


@pytest.fixture
def transcripts(shared_data: Path, tmp_path: Path) -> Path:
    source = shared_data / "claude-code" / "spotter"
    if not source.is_dir():
        pytest.skip(f"real transcripts not found at {source}")
    folder = tmp_path / "transcripts"
    folder.mkdir()
    for path in sorted(source.glob("*.jsonl"))[: scaled(2, 4)]:
        # Links, not copies: the data stays where it is.
        (folder / path.name).symlink_to(path)
    return folder


def test_kills_during_import_and_compaction_leave_a_whole_store(
    backend: str, transcripts: Path, tmp_path: Path
) -> None:
    # The clean run on SQLite (on PostgreSQL the tortured store has the database).
    clean = tmp_path / "clean"
    sqlite_only = {"LCM_STORAGE_BACKEND": "sqlite"}
    started = time.monotonic()
    done = _lcm(clean, "import", str(transcripts), "--complete", **sqlite_only)
    assert done.returncode == 0, done.stderr
    import_s = time.monotonic() - started
    if backend == "postgresql":
        import_s *= 4  # its import is ~0.25x SQLite's throughput
    assert _lcm(clean, "compact", "--all", **sqlite_only).returncode == 0
    expected = _contents(clean, env={})
    assert expected

    rng = random.Random(SEED)
    home = tmp_path / "tortured"
    kills = 0
    for _ in range(TRIALS):
        kills += _killed_run(
            home, rng.uniform(0.05, import_s), "import", str(transcripts), "--complete"
        )
    for _ in range(TRIALS):
        kills += _killed_run(home, rng.uniform(0.05, import_s), "compact", "--all", "--wait", "0")
    assert kills, "no process was killed while it worked: the trials proved nothing"
    verify = _lcm(home, "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr

    # An uninterrupted run converges to the clean store's messages.
    assert _lcm(home, "import", str(transcripts), "--complete").returncode == 0
    compact = _lcm(home, "compact", "--all", "--wait", "0")
    # The killed compactions' leases are taken over at once (their holders
    # are dead on this machine): no "busy", no waiting for their end.
    assert compact.returncode == 0, compact.stdout + compact.stderr
    assert _contents(home) == expected
    verify = _lcm(home, "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
