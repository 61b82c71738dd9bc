"""Read connections for long scans, so they do not hold up the store's other callers.

A ``SQLiteStore`` serialises every call on its one connection behind a lock.
A regex grep can run for its whole time budget (minutes, if a user gives it
minutes) matching rows in Python; holding that lock so long would keep an
MCP server's ``lcm_status`` (or a hook's write) waiting behind it. So such a
scan reads through a connection of its own: WAL lets it read while others
read and write on the main one. It sees what is committed, which is what a
caller outside a transaction sees on the main connection too.

Connections are kept for reuse (opening one costs a schema parse on its
first statement) and closed with the store. A scan inside a transaction of
its own thread reads the main connection, to see that transaction's writes.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: Idle read connections kept for reuse; more scans at once open more, closed after.
KEPT = 2


class ReadConnections:
    """A small pool of read connections opened by ``connect``."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def borrowed(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._idle.pop() if self._idle else None
        if db is None:
            db = self._connect()
        try:
            yield db
        finally:
            with self._lock:
                keep = not self._closed and len(self._idle) < KEPT and not db.in_transaction
                if keep:
                    self._idle.append(db)
            if not keep:
                db.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for db in idle:
            db.close()
