"""An idle connection a long-lived process keeps on a SQLite store, so others close cheaply.

In WAL mode SQLite checkpoints the write-ahead log into the database and
deletes it when the *last* connection closes: two ``fdatasync`` calls, about
9 ms each on this machine's disk, at the end of every short-lived store (a
hook's). A process that opens and closes many of them (the hook server)
keeps one connection that has read the database, which registers it in the
log's shared index, so the others' closes are not the last. The log is still
checkpointed as it grows (``wal_autocheckpoint``, inside a commit) and when
this connection closes. It holds no transaction: nothing waits on it
(``VACUUM`` and ``wal_checkpoint(TRUNCATE)`` included).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path


class WalKeeper:
    """Holds one idle connection on the database at ``path`` while it exists."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None

    @property
    def holding(self) -> bool:
        return self._db is not None

    def refresh(self) -> None:
        """Hold the database now at ``path``: none while it does not exist, the new
        one if it was replaced (never creates it)."""
        try:
            st = os.stat(self.path)
        except OSError:
            self.close()
            return
        identity = (st.st_dev, st.st_ino)
        if self._db is not None and identity == self._identity:
            return
        self.close()
        try:
            db = sqlite3.connect(
                self.path.resolve().as_uri() + "?mode=rw",
                uri=True,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error:
            return
        try:
            db.execute("PRAGMA query_only = 1")
            mode = db.execute("PRAGMA journal_mode").fetchall()
            # Reading registers the connection in the log's index; fetchall
            # ends the statement, so no read transaction stays open.
            db.execute("SELECT count(*) FROM sqlite_master").fetchall()
        except sqlite3.Error:
            db.close()
            return
        if not mode or str(mode[0][0]).lower() != "wal":
            db.close()
            return
        self._db, self._identity = db, identity

    def close(self) -> None:
        db, self._db, self._identity = self._db, None, None
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.close()
