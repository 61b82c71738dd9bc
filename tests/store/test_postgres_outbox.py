"""Offline capture: events put in the local outbox while PostgreSQL is down are
delivered after it is back, in order, none twice."""

from __future__ import annotations

import sqlite3
import stat
import time
from pathlib import Path

import pytest
from tests.store.conformance import msg
from tests.store.postgres_server import EmbeddedPostgres, require_psycopg

from lossless.errors import StoreError
from lossless.store.outbox import Outbox, OutboxEvent
from lossless.store.postgres import PostgresStore

require_psycopg()


def append_event(store: PostgresStore, event: OutboxEvent) -> None:
    """A typical effect: append the captured messages to the session's conversation."""
    cid = store.conversations.get_or_create(
        project="p", session_id=event.payload["session"], client="claude-code"
    ).id
    store.messages.append(cid, [msg(text, key) for key, text in event.payload["messages"]])


def test_hooks_fired_while_the_server_is_down_are_delivered_once(
    pg_server: EmbeddedPostgres, pg_url: str, tmp_path: Path
) -> None:
    PostgresStore(pg_url).close()  # the database exists and is migrated
    outbox = Outbox(tmp_path / "outbox.db")
    pg_server.stop()
    try:
        with pytest.raises(StoreError, match="cannot connect"):
            PostgresStore(pg_url, connect_timeout_s=1)
        started = time.monotonic()
        for n in range(20):
            outbox.put("ingest", {"session": "s1", "messages": [[f"k{n}", f"message {n}"]]})
        assert time.monotonic() - started < 1.0  # a hook returns at once
        assert outbox.pending() == 20
    finally:
        pg_server.start()
        pg_server.wait_ready()
    with PostgresStore(pg_url) as store:
        report = outbox.deliver(store, append_event)
        assert (report.delivered, report.duplicates, report.remaining) == (20, 0, 0)
        (conversation,) = store.conversations.list()
        assert [m.content for m in store.messages.list(conversation.id)] == [
            f"message {n}" for n in range(20)
        ]
        assert store.coordination.receipts.count(outbox.origin) == 20
        again = outbox.deliver(store, append_event)
        assert (again.delivered, again.duplicates) == (0, 0)
    assert stat.S_IMODE((tmp_path / "outbox.db").stat().st_mode) == 0o600


def test_a_local_copy_that_survived_a_crash_is_not_applied_twice(
    pg_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "outbox.db"
    outbox = Outbox(path)
    event = outbox.put("ingest", {"session": "s1", "messages": [["k1", "once"]]})
    calls: list[int] = []

    def counting(store: PostgresStore, e: OutboxEvent) -> None:
        calls.append(e.seq)
        store.messages.append(
            store.conversations.get_or_create(project="p", session_id="s1", client="api").id,
            [msg("once", None)],  # not idempotent on its own: no ingest key
        )

    with PostgresStore(pg_url) as store:
        assert outbox.deliver(store, counting).delivered == 1
        # The process died after the server committed, before the local delete.
        raw = sqlite3.connect(path)
        raw.execute(
            "INSERT INTO events(event_id, kind, payload, created_at) VALUES (?, ?, ?, ?)",
            (event.event_id, event.kind, '{"session":"s1","messages":[]}', event.created_at),
        )
        raw.commit()
        raw.close()
        report = outbox.deliver(store, counting)
        assert (report.delivered, report.duplicates, report.remaining) == (0, 1, 0)
        assert calls == [event.seq]
        assert store.messages.count() == 1


def test_delivery_stops_at_a_failure_and_keeps_the_order(pg_url: str, tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox.db")
    for n in range(4):
        outbox.put("ingest", {"session": "s1", "messages": [[f"k{n}", f"m{n}"]], "n": n})
    broken = {"on": True}

    def flaky(store: PostgresStore, event: OutboxEvent) -> None:
        if event.payload["n"] == 2 and broken["on"]:
            raise RuntimeError("summarizer exploded")
        append_event(store, event)

    with PostgresStore(pg_url) as store:
        report = outbox.deliver(store, flaky)
        assert (report.delivered, report.remaining) == (2, 2)
        assert report.error is not None and "summarizer exploded" in report.error
        broken["on"] = False
        assert outbox.deliver(store, flaky).delivered == 2
        (conversation,) = store.conversations.list()
        assert [m.content for m in store.messages.list(conversation.id)] == [
            "m0",
            "m1",
            "m2",
            "m3",
        ]


def test_server_down_during_delivery_keeps_everything(
    pg_server: EmbeddedPostgres, pg_url: str, tmp_path: Path
) -> None:
    outbox = Outbox(tmp_path / "outbox.db")
    outbox.put("ingest", {"session": "s1", "messages": [["k1", "kept"]]})
    store = PostgresStore(pg_url, connect_timeout_s=1)
    try:
        pg_server.stop()
        try:
            report = outbox.deliver(store, append_event)
        finally:
            pg_server.start()
            pg_server.wait_ready()
        assert report.delivered == 0 and report.remaining == 1
        assert report.error is not None and f"127.0.0.1:{pg_server.port}" in report.error
        assert outbox.deliver(store, append_event).delivered == 1
    finally:
        store.close()


def test_idempotent_effects_can_run_outside_the_receipt_transaction(
    pg_url: str, tmp_path: Path
) -> None:
    outbox = Outbox(tmp_path / "outbox.db")
    outbox.put("ingest", {"session": "s1", "messages": [["k1", "a"], ["k2", "b"]]})

    def own_transaction(store: PostgresStore, event: OutboxEvent) -> None:
        with store.transaction() as tx:  # allowed: atomic=False runs it on its own
            append_event(tx, event)

    with PostgresStore(pg_url) as store:
        report = outbox.deliver(store, own_transaction, atomic=False)
        assert report.delivered == 1 and store.messages.count() == 2
