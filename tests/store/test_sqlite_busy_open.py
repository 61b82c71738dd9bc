"""Opening a SQLite store while another process is creating it in place.

A new store is now built under a temporary name and published whole
(store.sqlite.creation, tests/store/test_sqlite_creation.py), so no opener
meets it in rollback mode. It is still created in place where the file
system has no hard links, by an older lossless, or after a failed build;
these tests make the file that way (``_new_file``: a fresh empty file is
opened where it is) to keep testing the retry that such a store needs.

A store file created in place starts in SQLite's rollback-journal mode, and each opener's
first step, ``PRAGMA journal_mode = WAL``, reads the file (a SHARED lock) and
then writes its header (RESERVED). If another process holds RESERVED by then
(its own switch to WAL writing the header: three processes, a hook,
``lcm grep`` and ``lcm status``, start on a new store at once), SQLite
answers SQLITE_BUSY at once instead of calling the busy handler: the opener
holds the SHARED lock that the writer waits for, so waiting could deadlock
(see sqlite3_busy_handler's documentation). The store tries such an open
again until its busy timeout.

The other process here holds the new file's first write transaction
(``BEGIN IMMEDIATE`` on the empty file: the RESERVED lock that its switch to
WAL holds while it writes) until the test releases it: no timing decides
what the opener meets.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from lossless.errors import StoreError
from lossless.store.migrations import load_migrations
from lossless.store.sqlite import SQLiteStore
from lossless.store.sqlite import store as sqlite_store

# Holds the file's write lock until its stdin closes (or, as a bound on a test
# that went wrong, for at most argv[2] seconds), then rolls back and exits.
_HOLDER = """
import select, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("held", flush=True)
select.select([sys.stdin], [], [], float(sys.argv[2]))
db.execute("ROLLBACK")
"""


class _Holder:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    def release(self) -> None:
        """Give up the lock; returns once the holder has exited (its locks are gone)."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


@contextmanager
def _first_write_held(path: Path, *, at_most_s: float = 60) -> Iterator[_Holder]:
    """Another process holding the new file's first write transaction."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path), str(at_most_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    holder = _Holder(proc)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.release()


def _new_file(tmp_path: Path) -> Path:
    """A store file as a creator in place makes it before SQLite touches it (empty,
    0600): the store opens it where it is, as it did every new store before."""
    path = tmp_path / "lcm.db"
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    return path


def _code(exc: BaseException) -> int | None:
    """The SQLite result code of ``exc`` or of the sqlite3 error it was raised from."""
    while exc is not None:
        if isinstance(exc, sqlite3.Error):
            return getattr(exc, "sqlite_errorcode", None)
        exc = exc.__cause__  # type: ignore[assignment]
    return None


def _count_opens(monkeypatch: pytest.MonkeyPatch, ended: threading.Event) -> list[BaseException]:
    """Each attempt ``SQLiteStore`` makes at ``_open``: the errors of those that
    failed are listed, and ``ended`` is set once the first one has ended."""
    failures: list[BaseException] = []
    original = SQLiteStore._open

    def observed(self: SQLiteStore) -> None:
        try:
            original(self)
        except BaseException as exc:
            failures.append(exc)
            raise
        finally:
            ended.set()

    monkeypatch.setattr(SQLiteStore, "_open", observed)
    return failures


def test_sqlite_answers_busy_at_once_to_a_switch_to_wal_beside_the_files_writer(
    tmp_path: Path,
) -> None:
    """The step itself: with another process's write open on the new file,
    ``PRAGMA journal_mode = WAL`` gets SQLITE_BUSY though the busy timeout is
    a minute. The holder lets go by itself after 10 s: had SQLite waited for
    it, the switch would have succeeded then."""
    path = _new_file(tmp_path)
    with _first_write_held(path, at_most_s=10):
        db = sqlite3.connect(path, isolation_level=None, timeout=60)
        try:
            with pytest.raises(sqlite3.OperationalError, match="locked") as caught:
                db.execute("PRAGMA journal_mode = WAL")
        finally:
            db.close()
    assert caught.value.sqlite_errorcode == sqlite3.SQLITE_BUSY


def test_an_open_beside_the_creator_of_a_new_store_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CI failure (``lcm status`` beside the hook creating the store: "database
    is locked"), made certain: the opener's first attempt ends while the other
    process still holds the lock, which is released only then."""
    path = _new_file(tmp_path)
    first_ended = threading.Event()
    failures = _count_opens(monkeypatch, first_ended)
    outcome: dict[str, Any] = {}

    def open_store() -> None:
        try:
            outcome["store"] = SQLiteStore(path)
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            first_ended.set()

    with _first_write_held(path) as holder:
        opener = threading.Thread(target=open_store)
        opener.start()
        assert first_ended.wait(timeout=60)
        holder.release()
        opener.join(timeout=60)
    assert not opener.is_alive()
    assert "error" not in outcome, outcome["error"]
    store: SQLiteStore = outcome["store"]
    try:
        # The attempt made while the lock was held failed, and only as busy.
        assert failures
        assert {_code(exc) for exc in failures} == {sqlite3.SQLITE_BUSY}
        assert len(store.migrations()) == len(load_migrations("lossless.store.sqlite"))
        assert store.stats().conversations == 0
    finally:
        store.close()
    check = sqlite3.connect(path)
    try:
        assert check.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        check.close()


def test_an_open_kept_busy_past_the_busy_timeout_fails_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 500)
    path = _new_file(tmp_path)
    failures = _count_opens(monkeypatch, threading.Event())
    with _first_write_held(path), pytest.raises(StoreError) as caught:
        SQLiteStore(path)
    message = str(caught.value)
    assert str(path) in message
    after_the_path = message.split(str(path), 1)[1]
    assert "database is locked" in after_the_path
    assert "another process kept it busy" in after_the_path
    assert _code(caught.value) == sqlite3.SQLITE_BUSY
    # It was tried again, not given up at the first busy answer.
    assert len(failures) >= 2


@pytest.mark.parametrize("kind", ["not a database", "a folder"])
def test_an_open_that_fails_for_another_reason_is_not_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    path = tmp_path / "lcm.db"
    if kind == "a folder":
        path.mkdir()
    else:
        path.write_bytes(b"this is not a database" * 100)
    failures = _count_opens(monkeypatch, threading.Event())
    with pytest.raises(StoreError, match=str(path)):
        SQLiteStore(path)
    assert len(failures) == 1
    assert _code(failures[0]) in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CANTOPEN)


def test_busy_is_told_by_sqlites_error_code_through_a_wrapping_store_error(
    tmp_path: Path,
) -> None:
    path = _new_file(tmp_path)
    with _first_write_held(path):
        db = sqlite3.connect(path, isolation_level=None, timeout=60)
        try:
            with pytest.raises(sqlite3.OperationalError) as busy:
                db.execute("PRAGMA journal_mode = WAL")
        finally:
            db.close()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"x" * 4096)
    db = sqlite3.connect(garbage)
    try:
        with pytest.raises(sqlite3.DatabaseError) as not_a_database:
            db.execute("SELECT * FROM sqlite_schema")
    finally:
        db.close()

    def wrapped(exc: BaseException) -> StoreError:
        try:
            raise StoreError(f"cannot open SQLite database {path}: {exc}") from exc
        except StoreError as store_error:
            return store_error

    answers_busy = sqlite_store.answers_busy
    assert answers_busy(busy.value)
    assert answers_busy(wrapped(busy.value))
    assert not answers_busy(not_a_database.value)
    assert not answers_busy(wrapped(not_a_database.value))
    # The words alone are not SQLite's answer: no code, no retry.
    assert not answers_busy(sqlite3.OperationalError("database is locked"))
    assert not answers_busy(StoreError("database is locked"))
