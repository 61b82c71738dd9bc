"""The worker through a PostgreSQL outage: it stays, backs off, and delivers once it is back.

The module's own embedded server (it is stopped and started: see
tests/pg_fixtures.py). The worker's loop runs on a clock that moves only when
it sleeps, so what it attempts is counted per poll, not raced against time.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from tests.pg_fixtures import ensure_running, own_pg_server, pg_home
from tests.store.postgres_server import EmbeddedPostgres
from tests.test_hook_store_errors import SESSION, contents, turns
from tests.test_hooks import claude_turn
from tests.test_offline_capture import captured_ever, outbox_pending, receipts
from tests.test_worker_outbox_retry import Clock

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.offline_capture import capture_offline
from lossless.worker import Worker

__all__ = ["own_pg_server", "pg_home"]
#: The test stops the server: it is this module's own.
STOPS_PG_SERVER = True


def test_the_worker_outlives_an_outage_and_delivers_what_hooks_captured_meanwhile(
    own_pg_server: EmbeddedPostgres,
    pg_home: str,
    tmp_path: Path,
    lcm_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LCM_POSTGRES_CONNECT_TIMEOUT_S", "1")
    monkeypatch.setenv("LCM_WORKER_OUTBOX_RETRY_MAX_S", "600")
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()

    def stop_and_capture() -> None:
        own_pg_server.stop()
        # What a hook fired now does: the server is down, it captures.
        claude_turn(transcript, SESSION, 1)
        capture_offline(load_config(), [(transcript, "claude-code")], final=False)

    clock = Clock()
    # Poll 1 (t = 60 s): the server stops and a hook captures; poll 2
    # (t = 120 s): it is back.
    clock.at_poll[1] = stop_and_capture
    clock.at_poll[2] = lambda: ensure_running(own_pg_server)
    pool_levels: list[int] = []

    def sleep(seconds: float) -> None:
        pool_levels.append(logging.getLogger("psycopg.pool").getEffectiveLevel())
        clock.sleep(seconds)

    lines: list[str] = []
    try:
        with Engine.open() as engine:
            report = Worker(engine, log=lines.append, clock=clock, sleep=sleep).run(
                idle_s=300, poll_s=60
            )
    finally:
        ensure_running(own_pg_server)

    said = [line for line in lines if line.startswith(("outbox:", "store:"))]
    assert len(said) == 4, lines
    outbox_failing, store_failing, delivered, works = said
    assert outbox_failing.startswith("outbox: delivery failing, 1 event(s) wait: "), said
    assert "cannot connect to PostgreSQL" in outbox_failing or "lost" in outbox_failing, said
    assert store_failing.startswith("store: StoreUnavailableError: "), said
    assert "compaction and indexing wait: next attempt in 60 s" in store_failing
    assert delivered == (
        "outbox: 1 delivered, 0 left: delivery works again after 1 failed attempt(s) over 1.0 min"
    )
    assert works == "store: works again after 1 failed attempt(s) over 1.0 min"
    assert "lcm-test-secret" not in "\n".join(lines)
    # Nor do the pool's own warnings (three or four per attempt in an outage)
    # go to stderr, the detached worker's log, beside them, while it runs.
    assert set(pool_levels) == {logging.ERROR}
    # It stayed past its idle time only while the event waited, then went idle.
    assert report.idle_exit and report.delivered == 1 and report.outbox_error is None
    assert clock.now == 120 + 300
    assert outbox_pending(lcm_home) == 0
    assert receipts(pg_home) == captured_ever(lcm_home) == 1
    assert contents(pg_home) == turns(1)
