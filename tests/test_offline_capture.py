"""Offline capture: `lcm hook` on PostgreSQL while the server is stopped.

Real hook subprocesses against the embedded PostgreSQL server: hooks fired
while it is down capture into the local outbox and return at once, quietly;
after it is back, the next hook or the worker delivers everything, once, and
the store ends up equal to a bulk import of the same transcript.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.pg_fixtures import ensure_running, own_pg_server, pg_home
from tests.store.postgres_server import EmbeddedPostgres
from tests.test_hooks import (
    MAIN_WITH_AGENTS,
    SPOTTER,
    Grower,
    assert_quiet,
    claude_payload,
    fire,
    hooks_log,
    lcm_argv,
    store_snapshot,
)

from lossless.config import load_config
from lossless.doctor import check_outbox
from lossless.store.outbox import OUTBOX_FILE, Outbox
from lossless.worker import running_worker_pid

__all__ = ["own_pg_server", "pg_home"]
#: The tests stop the server: it is this module's own (see tests/pg_fixtures.py).
STOPS_PG_SERVER = True

EVENTS = ["PostToolUse", "Stop", "UserPromptSubmit", "PostToolUse", "SubagentStop"]


def snapshot(url: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Every conversation's messages, parts and native records, keyed by session."""
    from lossless.store.postgres import PostgresStore

    with PostgresStore(url) as store:
        return store_snapshot(store)


def receipts(url: str) -> int:
    from lossless.store.postgres import PostgresStore

    with PostgresStore(url) as store:
        return store.coordination.receipts.count()


def bulk_import(server: EmbeddedPostgres, paths: list[Path], home: Path) -> str:
    """A bulk `lcm import --complete` of ``paths`` into a new database; its URL."""
    url = server.create_database(prefix="lcm_bulk")
    env = {**os.environ, "LCM_POSTGRES_URL": url}
    result = subprocess.run(
        [*lcm_argv(), "--home", str(home), "import", "--complete", "--quiet", *map(str, paths)],
        capture_output=True,
        timeout=180,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr.decode()
    return url


def assert_same(live: str, bulk: str) -> None:
    got, want = snapshot(live), snapshot(bulk)
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key]["messages"] == want[key]["messages"], key
        assert got[key] == want[key], key
    assert sum(len(v["messages"]) for v in want.values()) > 0


def captured_ever(home: Path) -> int:
    """How many events were ever put into the outbox (its AUTOINCREMENT high-water mark)."""
    import sqlite3

    with sqlite3.connect(home / OUTBOX_FILE) as db:
        row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
    return 0 if row is None else int(row[0])


def delivered_in(home: Path) -> int:
    """The events the hooks' and the worker's logs say they delivered from the outbox."""
    worker_log = home / "logs" / "worker.log"
    logs = hooks_log(home) + (worker_log.read_text("utf-8") if worker_log.exists() else "")
    return sum(int(n) for n in re.findall(r"outbox: (\d+) delivered", logs))


def outbox_pending(home: Path) -> int:
    path = home / OUTBOX_FILE
    if not path.exists():
        return 0
    with Outbox(path) as outbox:
        return outbox.pending()


@pytest.fixture(autouse=True)
def _stop_workers(lcm_home: Path) -> Iterator[None]:
    """Stop the workers hooks started in this test's home (by pid, checked against it)."""
    yield
    pids = {int(w) for w in re.findall(r"started worker (\d+)", hooks_log(lcm_home))}
    running = running_worker_pid(lcm_home)
    if running:
        pids.add(running)
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(lcm_home).encode() in cmdline:
            os.kill(pid, signal.SIGTERM)


def grow_and_fire(growers: list[Grower], live: Path, session: str, steps: int, start: int) -> int:
    """Grow the transcripts ``steps`` times, firing a hook after each; returns the step reached."""
    for step in range(start, start + steps):
        for grower in growers:
            grower.step()
        event = EVENTS[step % len(EVENTS)]
        began = time.monotonic()
        assert_quiet(fire(event, claude_payload(event, live, session), client="claude-code"))
        # A hook on a dead server returns at once (no 10 s connect timeout).
        assert time.monotonic() - began < 8
    return start + steps


def growers_for(source: Path, live_dir: Path, rng: random.Random) -> list[Grower]:
    main = Grower(source, live_dir / source.name, rng, 40, 90)
    found = [main]
    for sub in sorted((source.with_suffix("") / "subagents").glob("*.jsonl")):
        target = live_dir / source.stem / "subagents" / sub.name
        found.append(Grower(sub, target, rng, 2, 12))
    return found


def live_files(live_dir: Path, stem: str) -> list[Path]:
    return [
        live_dir / f"{stem}.jsonl",
        *sorted((live_dir / stem / "subagents").glob("*.jsonl")),
    ]


def test_hooks_fired_while_the_server_is_down_are_delivered_once_by_the_next_hook(
    own_pg_server: EmbeddedPostgres,
    pg_home: str,
    shared_data: Path,
    tmp_path: Path,
    lcm_home: Path,
) -> None:
    source = shared_data / SPOTTER / f"{MAIN_WITH_AGENTS}.jsonl"
    live_dir = tmp_path / "live"
    live = live_dir / source.name
    growers = growers_for(source, live_dir, random.Random(5))
    step = grow_and_fire(growers, live, source.stem, 3, 0)
    assert outbox_pending(lcm_home) == 0
    online = snapshot(pg_home)
    assert online

    own_pg_server.stop()
    try:
        step = grow_and_fire(growers, live, source.stem, 6, step)
        captured = outbox_pending(lcm_home)
        assert captured >= 6
        log = hooks_log(lcm_home)
        assert log.count("captured offline") == 6
        # An outage says so; no store error on a live server is claimed.
        assert (
            log.count(
                f"server unavailable (cannot connect to PostgreSQL at 127.0.0.1:{own_pg_server.port}/"
            )
            == 6
        ), log
        assert "store error" not in log and " warn " not in log, log
        (waiting,) = check_outbox(load_config(lcm_home))
        assert (
            waiting.status == "warn" and f"{captured} event(s) captured offline" in waiting.detail
        )
        assert "server unavailable (cannot connect" in waiting.detail
        # Reads never fall back to the outbox: they fail, naming the server.
        status = subprocess.run(
            [*lcm_argv(), "status"], capture_output=True, timeout=60, check=False
        )
        assert status.returncode != 0
        assert f"127.0.0.1:{own_pg_server.port}" in status.stderr.decode()
        # ... and says that what the hooks captured is safe, and how much.
        assert f"meanwhile the outbox holds {captured} event(s) captured offline" in (
            status.stderr.decode()
        )
        assert "lcm-test-secret" not in status.stderr.decode()
    finally:
        ensure_running(own_pg_server)
    # Nothing captured offline reached the server by another way.
    assert snapshot(pg_home) == online

    while not all(g.done for g in growers):
        step = grow_and_fire(growers, live, source.stem, 1, step)
    assert_quiet(
        fire("SessionEnd", claude_payload("SessionEnd", live, source.stem), client="claude-code")
    )
    assert outbox_pending(lcm_home) == 0
    log = hooks_log(lcm_home)
    # Every event ever captured was delivered, each once. A hook after the
    # restart may capture too (on a loaded machine its 2 s connect can time
    # out, or the server can refuse it for a moment): the count then exceeds
    # what was captured while the server was down, and its log line says why.
    ever = captured_ever(lcm_home)
    assert ever >= captured
    if ever > captured:
        assert log.count("captured offline") > 6, log
    assert receipts(pg_home) == ever, log
    assert delivered_in(lcm_home) == ever, log
    assert " error " not in log
    bulk = bulk_import(own_pg_server, live_files(live_dir, source.stem), tmp_path / "bulk")
    assert_same(pg_home, bulk)


def test_the_worker_delivers_even_when_the_transcript_is_gone(
    own_pg_server: EmbeddedPostgres,
    pg_home: str,
    shared_data: Path,
    tmp_path: Path,
    lcm_home: Path,
) -> None:
    source = shared_data / SPOTTER / f"{MAIN_WITH_AGENTS}.jsonl"
    live_dir = tmp_path / "live"
    live = live_dir / source.name
    growers = growers_for(source, live_dir, random.Random(11))
    step = grow_and_fire(growers, live, source.stem, 2, 0)

    own_pg_server.stop()
    try:
        while not all(g.done for g in growers):
            step = grow_and_fire(growers, live, source.stem, 1, step)
        assert_quiet(
            fire(
                "SessionEnd",
                claude_payload("SessionEnd", live, source.stem),
                client="claude-code",
            )
        )
        captured = outbox_pending(lcm_home)
        assert captured > 2
    finally:
        ensure_running(own_pg_server)
    # The client deleted its transcripts before the server came back: what
    # was captured is all there is.
    kept = tmp_path / "kept"
    shutil.copytree(live_dir, kept)
    shutil.rmtree(live_dir)

    worker = subprocess.run(
        [*lcm_argv(), "worker", "--once"], capture_output=True, timeout=180, check=False
    )
    assert worker.returncode == 0, worker.stderr.decode()
    assert f"outbox: {captured} delivered, 0 left" in worker.stderr.decode()
    assert outbox_pending(lcm_home) == 0
    assert receipts(pg_home) == captured
    again = subprocess.run(
        [*lcm_argv(), "worker", "--once"], capture_output=True, timeout=180, check=False
    )
    assert again.returncode == 0 and "outbox:" not in again.stderr.decode()
    bulk = bulk_import(own_pg_server, live_files(kept, source.stem), tmp_path / "bulk")
    assert_same(pg_home, bulk)
