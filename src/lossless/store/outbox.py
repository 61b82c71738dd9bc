"""Offline capture for a shared store: a small local SQLite outbox.

When a store many machines share (PostgreSQL) is selected but unreachable
(a laptop on a train), a hook
cannot wait for it. It ``put``s what it would have done into this outbox,
a file on the local disk, and returns at once. Later, a worker ``deliver``s
the events to the server in the order they were captured, each exactly once:

- with ``atomic=True`` the event's effect and its receipt (the store's
  ``coordination.receipts``) commit in one store transaction, and the
  local copy is deleted only after that commit. A crash in between leaves a
  local copy whose receipt exists: the next delivery skips it. Two deliverers
  racing on one event serialise on the receipt's key; one applies it.
- with ``atomic=False`` the effect runs on its own (for handlers that open
  their own transactions, such as transcript import) and must be idempotent;
  the receipt is recorded after it.

Delivery stops at the first event that fails, so a later event is never
applied before an earlier one; the failed event stays for the next attempt.

The outbox is never a replica: it has no query API, nothing reads history
from it, and it never stands in for the server. It only holds what has not
reached the server yet. This module imports no driver: a hook can capture
without psycopg being importable.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lossless.errors import InputError, LosslessError, StoreError
from lossless.models import JSON
from lossless.timeutil import utc_now_iso

if TYPE_CHECKING:
    from lossless.store.contract import Coordination, Repositories, Store

OUTBOX_FILE = "outbox.db"
BUSY_TIMEOUT_MS = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id   TEXT NOT NULL UNIQUE,
    kind       TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS marks (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass(frozen=True, slots=True)
class OutboxEvent:
    """One captured event: its place in capture order, its id, kind and payload."""

    seq: int
    event_id: str
    kind: str
    payload: JSON
    created_at: str


@dataclass(slots=True)
class Delivery:
    """What one ``deliver`` call did."""

    delivered: int = 0
    duplicates: int = 0
    remaining: int = 0
    error: str | None = None


Apply = Callable[["Repositories", OutboxEvent], None]


class Outbox:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.path.exists():
            # Private from the start: events hold transcript data.
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        try:
            self._db = sqlite3.connect(
                str(self.path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
            )
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.executescript(_SCHEMA)
            self._db.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('origin', ?)", (uuid.uuid4().hex,)
            )
            row = self._db.execute("SELECT value FROM meta WHERE key = 'origin'").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the outbox {self.path}: {exc}") from exc
        # Names this outbox in receipts, so event ids only need to be unique
        # per machine.
        self.origin: str = row[0]

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Outbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def put(self, kind: str, payload: JSON, *, mark: tuple[str, JSON] | None = None) -> OutboxEvent:
        """Capture one event locally; returns at once, whatever the server's state.

        ``mark`` (key, value) is saved in the same local transaction: how far a
        capturer got, so its next capture starts there and an event is never
        recorded without the mark that says it was.
        """
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        if "\x00" in kind or "\x00" in text:
            raise InputError("outbox events cannot contain U+0000 (NUL)")
        event_id = uuid.uuid4().hex
        created_at = utc_now_iso()
        try:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                cur = self._db.execute(
                    "INSERT INTO events(event_id, kind, payload, created_at) VALUES (?, ?, ?, ?)",
                    (event_id, kind, text, created_at),
                )
                if mark is not None:
                    self._db.execute(
                        "INSERT OR REPLACE INTO marks(key, value) VALUES (?, ?)",
                        (mark[0], json.dumps(mark[1], separators=(",", ":"))),
                    )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to the outbox {self.path}: {exc}") from exc
        return OutboxEvent(int(cur.lastrowid or 0), event_id, kind, payload, created_at)

    def mark(self, key: str) -> JSON | None:
        """The value last saved under ``key`` with ``put(mark=...)``, or None."""
        row = self._db.execute("SELECT value FROM marks WHERE key = ?", (key,)).fetchone()
        value = None if row is None else json.loads(row[0])
        return value if isinstance(value, dict) else None

    def pending(self) -> int:
        row = self._db.execute("SELECT count(*) FROM events").fetchone()
        return int(row[0])

    def backlog(self) -> tuple[int, int, str | None]:
        """Events waiting, the bytes of their payloads, and when the oldest was captured."""
        row = self._db.execute(
            "SELECT count(*), coalesce(sum(length(payload)), 0), min(created_at) FROM events"
        ).fetchone()
        return int(row[0]), int(row[1]), row[2]

    def position(self) -> tuple[int, int]:
        """(the first waiting event's seq, or 0 when none waits; the last seq ever
        captured): it changes exactly when someone captures or delivers, so a
        deliverer waiting out failures can tell when to try again at once."""
        head = self._db.execute("SELECT min(seq) FROM events").fetchone()[0]
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        return int(head or 0), 0 if row is None else int(row[0])

    def note(self, key: str, value: JSON | None) -> None:
        """Keep ``value`` under ``key`` beside the events (None forgets it): what the
        capturers and deliverers want an operator to see (``lcm doctor``)."""
        try:
            if value is None:
                self._db.execute("DELETE FROM meta WHERE key = ?", (f"note:{key}",))
            else:
                self._db.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                    (f"note:{key}", json.dumps(value, ensure_ascii=False, separators=(",", ":"))),
                )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to the outbox {self.path}: {exc}") from exc

    def noted(self, key: str) -> JSON | None:
        """The value last kept with ``note(key, ...)``, or None."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (f"note:{key}",)).fetchone()
        return None if row is None else json.loads(row[0])

    def _head(self, after: int) -> OutboxEvent | None:
        row = self._db.execute(
            "SELECT seq, event_id, kind, payload, created_at FROM events WHERE seq > ? "
            "ORDER BY seq LIMIT 1",
            (after,),
        ).fetchone()
        if row is None:
            return None
        return OutboxEvent(row[0], row[1], row[2], json.loads(row[3]), row[4])

    def deliver(
        self,
        store: Store,
        apply: Apply,
        *,
        atomic: bool = True,
        limit: int | None = None,
    ) -> Delivery:
        """Apply captured events to ``store`` in order, each once; stop at the first failure.

        ``store`` must keep receipts (``store.coordination`` not None), else
        ``StoreError``: without them nothing could tell a delivered event.
        """
        _receipts_of(store)
        report = Delivery()
        after = 0
        while limit is None or report.delivered + report.duplicates < limit:
            event = self._head(after)
            if event is None:
                break
            try:
                fresh = self._deliver_one(store, apply, event, atomic=atomic)
            except LosslessError as exc:
                report.error = f"event {event.seq} ({event.kind}): {exc}"
                break
            except Exception as exc:
                report.error = f"event {event.seq} ({event.kind}): {type(exc).__name__}: {exc}"
                break
            if fresh:
                report.delivered += 1
            else:
                report.duplicates += 1
            # Only now, with the receipt committed on the server, does the
            # local copy go.
            self._db.execute("DELETE FROM events WHERE seq = ?", (event.seq,))
            after = event.seq
        report.remaining = self.pending()
        return report

    def _deliver_one(self, store: Store, apply: Apply, event: OutboxEvent, *, atomic: bool) -> bool:
        if atomic:
            with store.transaction() as tx:
                if not _receipts_of(tx).receipts.record(
                    self.origin, event.event_id, event.kind, event.created_at
                ):
                    return False
                apply(tx, event)
            return True
        receipts = _receipts_of(store).receipts
        if receipts.exists(self.origin, event.event_id):
            return False
        apply(store, event)
        receipts.record(self.origin, event.event_id, event.kind, event.created_at)
        return True


def _receipts_of(store: Repositories) -> Coordination:
    coordination = store.coordination
    if coordination is None:
        raise StoreError(
            "this store keeps no delivery receipts (it is not shared between machines): "
            "an outbox is delivered only to a shared store such as PostgreSQL"
        )
    return coordination
