"""SQLite backend: the default store, one database file per ``LCM_HOME``.

This package (with its migrations) is the only code that speaks SQL to
SQLite, one module per repository; this module holds the store itself. One
connection per ``SQLiteStore`` serves its calls in turn (long scans read
through connections of their own: ``store.sqlite.readers``); writes take the
database's write lock up front (``BEGIN IMMEDIATE``) so concurrent processes
queue on ``busy_timeout`` instead of failing half-way. WAL lets readers
proceed while a writer works.
"""

from __future__ import annotations

import builtins
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lossless.errors import (
    MigrationError,
    NestedTransactionError,
    StoreClosedError,
    StoreError,
)
from lossless.store import rows, totals
from lossless.store.contract import (
    Capabilities,
    StoreStats,
)
from lossless.store.migrations import (
    AppliedMigration,
    load_migrations,
    pending_migrations,
    split_statements,
)
from lossless.store.raw_packing import RawPacker
from lossless.store.sqlite import faults
from lossless.store.sqlite.dag import Context, Summaries
from lossless.store.sqlite.files import Files
from lossless.store.sqlite.history import Conversations, Messages
from lossless.store.sqlite.readers import ReadConnections
from lossless.store.sqlite.repository import (
    register_hash_functions,
    register_search_functions,
    register_vector_functions,
)
from lossless.store.sqlite.search import Search
from lossless.timeutil import utc_now_iso

# Repositories that grep, status and the hooks' common paths do not use:
# imported when first asked for (see the properties), not at start-up.
if TYPE_CHECKING:
    from lossless.store.sqlite.import_state import Cursors, Quarantine
    from lossless.store.sqlite.leases import Leases
    from lossless.store.sqlite.map_jobs import MapJobs
    from lossless.store.sqlite.memory import Memories
    from lossless.store.sqlite.vectors import Vectors

BUSY_TIMEOUT_MS = 30_000
#: ``SQLiteStore.read_only`` of a store opened read-only because its disk is full.
FULL_DISK = "its disk is full"


class SQLiteStore:
    """The SQLite implementation of ``lossless.store.contract.Store``."""

    backend = "sqlite"
    capabilities = Capabilities(
        full_text=True,
        regex=True,
        substring_index=True,
        distributed_coordination=False,
        vector_search="exact",
    )

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._in_tx = False
        # The thread whose transaction is open (its scans read its writes).
        self._tx_thread: int | None = None
        self._closed = False
        self._readers = ReadConnections(self._connect_reader)
        # Per model: the vectors searched in memory (see store.sqlite.vectors).
        self.vector_matrices: dict[str, Any] = {}
        #: Packs raw lines with the store's dictionary (migration 0015).
        self.raw_packing = RawPacker(self._raw_dictionaries)
        #: Why this store cannot be written (a read-only home), or None.
        self.read_only: str | None = None
        if str(self.path) != ":memory:":
            try:
                self._prepare_file()
            except OSError as exc:
                raise faults.translate(exc, self.path) or StoreError(
                    f"cannot create SQLite database {self.path}: {exc.strerror or exc}"
                ) from None
        try:
            self._open_waiting_out_busy()
        except sqlite3.DatabaseError as exc:
            # On a full disk SQLite cannot even read a WAL store: its shared
            # memory file cannot grow. Nobody can write there either, so the
            # store is read as it is, and writes get the full-disk error.
            if (
                self.read_only
                or str(self.path) == ":memory:"
                or not faults.disk_full(self.path.parent)
            ):
                raise faults.translate(exc, self.path) or StoreError(
                    f"cannot use SQLite database {self.path}: {exc}"
                ) from exc
            self.read_only = FULL_DISK
            try:
                self._open()
            except sqlite3.DatabaseError:
                raise faults.full_disk(self.path, str(exc)) from exc

    def _open_waiting_out_busy(self) -> None:
        """``_open``, tried again while SQLite answers busy, for up to ``BUSY_TIMEOUT_MS``.

        One step of an open gets SQLITE_BUSY without SQLite's busy handler
        waiting: a new file's switch to WAL (``PRAGMA journal_mode = WAL``)
        reads the file, then writes its header; if another process has begun
        writing it meanwhile (its own switch: a hook, ``lcm grep`` and ``lcm
        status`` starting on a new store at once), SQLite answers busy at once,
        since the writer waits for this reader's lock (sqlite3_busy_handler:
        waiting could deadlock). Seen in CI as "database is locked" from
        ``lcm status`` (tests/store/test_sqlite_busy_open.py). A new store
        is now built under another name and published whole
        (store.sqlite.creation), so only a store created in place meets
        this: where hard links fail, after a failed build, or beside an
        older lossless creating it. The open's
        other waits (a killed writer's WAL being recovered by another process,
        the last connection's clean-up, the migration's BEGIN IMMEDIATE) were
        seen to go through the busy handler. The open is idempotent (a
        migration rolls back whole), so it is tried again; any other error is
        raised at once.
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        pause = 0.02
        while True:
            try:
                self._open()
                return
            except (sqlite3.Error, StoreError) as exc:
                if not answers_busy(exc):
                    raise
                if time.monotonic() + pause > deadline:
                    raise StoreError(
                        f"cannot use SQLite database {self.path}: {_sqlite_error(exc)} "
                        f"(another process kept it busy for {BUSY_TIMEOUT_MS / 1000:g} s)"
                    ) from exc
            time.sleep(pause)
            pause = min(pause * 2, 0.5)

    def _open(self, file: Path | None = None) -> None:
        """Connect and prepare; a read-only store is opened read-only, unmigrated.

        ``file``: the new file a store is built in before it takes its name
        (``_build``); the store's own path otherwise.
        """
        try:
            if self.read_only:
                self._db = sqlite3.connect(
                    faults.read_only_uri(self.path, immutable=self.read_only == FULL_DISK),
                    uri=True,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=30,
                )
            else:
                self._db = sqlite3.connect(
                    str(file or self.path),
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=30,
                )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {self.path}: {exc}") from exc
        self._db.row_factory = sqlite3.Row
        try:
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if not self.read_only:
                self._db.execute("PRAGMA journal_mode = WAL")
                self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            register_hash_functions(self._db, self.raw_packing.unpack)
            register_search_functions(self._db)
            register_vector_functions(self._db)
            if self.read_only:
                self._check_schema_current()
            else:
                self._migrate()
        except BaseException:
            self._db.close()
            raise

    def _created_whole(self) -> bool:
        # Imported here: only an open that creates the store needs it, and
        # every read command opens an existing one.
        from lossless.store.sqlite import creation

        return creation.create(self.path, self._build)

    def _prepare_file(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # A new store is built whole under another name and appears at its
        # own only then (store.sqlite.creation): no opener meets it empty,
        # in rollback mode or half-migrated. A symbolic link to a file yet
        # to be made is created through, in place, as before.
        if not self.path.exists() and (os.path.lexists(self.path) or not self._created_whole()):
            # Created in place (no hard links here, or the build failed: the
            # open reports why), 0600 before SQLite touches it; the WAL and
            # SHM files inherit the database file's permissions.
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            return
        # An existing store, or the one just published (here or by another
        # process); a fresh empty file is one another process (an older
        # lossless, or one without hard links) is creating in place.
        _refuse_empty_file(self.path)
        self.read_only = faults.read_only_reason(self.path)
        if not self.read_only and self.path.stat().st_mode & 0o077:
            os.chmod(self.path, 0o600)

    def _build(self, file: Path) -> None:
        """Make the new empty ``file`` a whole store: WAL, every migration, its log
        checkpointed into it and gone (closing the last connection removes it)."""
        self._open(file)
        try:
            busy, _, _ = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy:
                raise StoreError(f"cannot checkpoint the new SQLite database {file}")
        finally:
            self._db.close()
            # Nothing read from the build stays: the store opened next may be
            # another process's.
            self.raw_packing.forget()

    # -- lifecycle -------------------------------------------------------

    def _migrate(self) -> None:
        db = self._db
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, "
            "applied_at TEXT NOT NULL)"
        )
        available = load_migrations("lossless.store.sqlite")
        # Decided first without the write lock: a current store (every hook,
        # every read command) must not wait behind another process's write
        # transaction. Only a pending migration takes the lock, and the
        # ledger is read again under it (another process may have migrated).
        if not pending_migrations(available, _ledger(db), where=str(self.path)):
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            for migration in pending_migrations(available, _ledger(db), where=str(self.path)):
                for statement in split_statements(migration.sql):
                    db.execute(statement)
                db.execute(
                    "INSERT INTO schema_migrations(version, name, checksum, applied_at) "
                    "VALUES (?, ?, ?, ?)",
                    (migration.version, migration.name, migration.checksum, utc_now_iso()),
                )
            db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    def _check_schema_current(self) -> None:
        """A read-only store is used as it is: only if no migration is pending."""
        available = load_migrations("lossless.store.sqlite")
        try:
            applied = _ledger(self._db)
        except sqlite3.OperationalError:
            applied = []
        pending = pending_migrations(available, applied, where=str(self.path))
        if pending:
            raise faults.refuse_write(
                self.path,
                f"{self.read_only}, and it needs migration {pending[0].version:04d} "
                f"({pending[0].name}) for this version of lossless",
            )

    def migrations(self) -> builtins.list[AppliedMigration]:
        rows = self._q("SELECT version, name, checksum FROM schema_migrations ORDER BY version")
        return [AppliedMigration(r["version"], r["name"], r["checksum"]) for r in rows]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._readers.close()
            with suppress(sqlite3.Error):
                self._db.execute("PRAGMA optimize")
            self._db.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions ----------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[SQLiteStore]:
        with self._lock:
            self._check_open()
            if self._in_tx:
                raise NestedTransactionError(
                    "a transaction is already open on this store; nested transactions "
                    "are not supported"
                )
            self._begin()
            self._in_tx = True
            self._tx_thread = threading.get_ident()
            try:
                yield self
            except BaseException as exc:
                self._in_tx = False
                self._tx_thread = None
                self._rollback()
                clear = faults.translate(exc, self.path)
                if clear is not None:
                    raise clear from exc
                raise
            self._in_tx = False
            self._tx_thread = None
            self._commit()

    @contextmanager
    def _atomic(self) -> Iterator[None]:
        """Make one repository call atomic, joining the open transaction if any."""
        with self._lock:
            self._check_open()
            if self._in_tx:
                yield
                return
            self._begin()
            try:
                yield
            except BaseException as exc:
                self._rollback()
                clear = faults.translate(exc, self.path)
                if clear is not None:
                    raise clear from exc
                raise
            self._commit()

    def _begin(self) -> None:
        if self.read_only == FULL_DISK:
            raise faults.full_disk(self.path)
        if self.read_only:
            raise faults.refuse_write(self.path, self.read_only)
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise faults.translate(exc, self.path) or StoreError(
                f"cannot start a write on {self.path}: {exc}"
            ) from exc

    def _commit(self) -> None:
        try:
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise faults.translate(exc, self.path) or StoreError(
                f"commit failed on {self.path}: {exc}"
            ) from exc

    def _rollback(self) -> None:
        # SQLite may already have rolled the transaction back itself (a full
        # disk does): a second ROLLBACK would fail with "no transaction is
        # active" and hide the real error.
        if self._db.in_transaction:
            with suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
        # A dictionary read inside the rolled-back transaction may be gone.
        self.raw_packing.forget()

    def _raw_dictionaries(self) -> dict[int, bytes]:
        return {
            int(r["id"]): bytes(r["dictionary"])
            for r in self._q("SELECT id, dictionary FROM raw_dictionaries")
        }

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A connection for a long read that must not hold up the store's other
        callers (``store.sqlite.readers``); the main one inside this thread's
        transaction, or for an in-memory store (no other connection sees it)."""
        self._check_open()
        own_transaction = self._in_tx and self._tx_thread == threading.get_ident()
        if own_transaction or str(self.path) == ":memory:":
            with self._lock:
                self._check_open()
                yield self._db
            return
        with self._readers.borrowed() as db:
            yield db

    def _connect_reader(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(
                faults.read_only_uri(self.path, immutable=self.read_only == FULL_DISK),
                uri=True,
                isolation_level=None,
                check_same_thread=False,
                timeout=30,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {self.path}: {exc}") from exc
        db.row_factory = sqlite3.Row
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        register_hash_functions(db, self.raw_packing.unpack)
        register_search_functions(db)
        register_vector_functions(db)
        return db

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"store {self.path} is closed")

    def _q(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[sqlite3.Row]:
        with self._lock:
            self._check_open()
            return self._db.execute(sql, params).fetchall()

    def _q1(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        with self._lock:
            self._check_open()
            row: sqlite3.Row | None = self._db.execute(sql, params).fetchone()
            return row

    # One connection, so the transaction-bound repositories and the plain
    # ones are the same: ``transaction()`` yields the store itself.
    @property
    def conversations(self) -> Conversations:
        return Conversations(self)

    @property
    def messages(self) -> Messages:
        return Messages(self)

    @property
    def summaries(self) -> Summaries:
        return Summaries(self)

    @property
    def context(self) -> Context:
        return Context(self)

    @property
    def files(self) -> Files:
        return Files(self)

    @property
    def search(self) -> Search:
        return Search(self)

    @property
    def quarantine(self) -> Quarantine:
        from lossless.store.sqlite.import_state import Quarantine

        return Quarantine(self)

    @property
    def cursors(self) -> Cursors:
        from lossless.store.sqlite.import_state import Cursors

        return Cursors(self)

    @property
    def leases(self) -> Leases:
        from lossless.store.sqlite.leases import Leases

        return Leases(self)

    @property
    def memory(self) -> Memories:
        from lossless.store.sqlite.memory import Memories

        return Memories(self)

    @property
    def map_jobs(self) -> MapJobs:
        from lossless.store.sqlite.map_jobs import MapJobs

        return MapJobs(self)

    @property
    def vectors(self) -> Vectors:
        from lossless.store.sqlite.vectors import Vectors

        return Vectors(self)

    @property
    def coordination(self) -> None:
        """None: one machine uses a SQLite file, so there is no job queue to share
        (the worker scans conversation metadata) and nothing to capture offline."""
        return None

    # -- stats -------------------------------------------------------------

    def stats(self, *, project: str | None = None) -> StoreStats:
        rows.check_text(project, "project")
        scoped = project is not None
        params = [project] if scoped else []
        row = self._q1(totals.stats_sql("?", scoped=scoped), params)
        assert row is not None
        by_client = {
            r["client"]: int(r["n"])
            for r in self._q(totals.by_client_sql("?", scoped=scoped), params)
        }
        return rows.store_stats(row, by_client)

    def integrity_check(self) -> builtins.list[str]:
        """SQLite's page-level check plus FTS5's check of every full-text index."""
        problems = [
            str(r[0]) for r in self._q("PRAGMA integrity_check") if str(r[0]).lower() != "ok"
        ]
        if self.read_only:
            problems.extend(self._full_text_check_of_a_copy())
        else:
            problems.extend(_full_text_problems(self._db, self._lock, self._check_open))
        return problems

    def _full_text_check_of_a_copy(self) -> builtins.list[str]:
        """FTS5's check is an INSERT, refused by a read-only store: run it on a copy.

        The copy goes to the temporary folder and is deleted after; without
        room for it the full-text indexes go unchecked (logged), rather than
        reported broken.
        """
        import logging
        import shutil
        import tempfile

        folder = tempfile.gettempdir()
        size = self.path.stat().st_size if self.path.exists() else 0
        if shutil.disk_usage(folder).free < 2 * size + (64 << 20):
            logging.getLogger(__name__).warning(
                "full-text indexes of the read-only store %s not checked: no room for a copy in %s",
                self.path,
                folder,
            )
            return []
        with tempfile.TemporaryDirectory(prefix="lcm-verify-") as scratch:
            copy = sqlite3.connect(Path(scratch) / "copy.db", isolation_level=None)
            try:
                with self._lock:
                    self._check_open()
                    self._db.backup(copy)
                return _full_text_problems(copy, threading.RLock(), lambda: None)
            finally:
                copy.close()

    def scrub(self) -> None:
        """Rebuild the database so rewritten text leaves no trace in the files.

        FTS5 keeps a deleted row's terms in older index segments until they
        are merged ('optimize'); VACUUM with secure_delete writes a fresh
        file without free pages holding old rows; the WAL would still hold
        the old page images, so it is checkpointed and truncated last.
        """
        with self._lock:
            self._check_open()
            if self._in_tx:
                raise StoreError("scrub cannot run inside a transaction")
            db = self._db
            db.execute("PRAGMA secure_delete = ON")
            for table in (
                "messages_fts",
                "messages_trigram",
                "summaries_fts",
                "memories_fts",
            ):
                db.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def info(self) -> dict[str, Any]:
        size = 0
        for suffix in ("", "-wal", "-shm"):
            candidate = Path(str(self.path) + suffix)
            if candidate.exists():
                size += candidate.stat().st_size
        return {
            "backend": self.backend,
            "path": str(self.path),
            "sqlite_version": sqlite3.sqlite_version,
            "bytes_on_disk": size,
            "migrations": [f"{m.version:04d}_{m.name}" for m in self.migrations()],
        }

    def size_by_table(self) -> dict[str, int]:
        # dbstat names every b-tree; an index belongs to its table, and a
        # full-text index's shadow tables (messages_fts_data, ...) to it.
        schema = self._q("SELECT type, name, tbl_name, sql FROM sqlite_schema")
        virtual = [
            r["name"] for r in schema if (r["sql"] or "").upper().startswith("CREATE VIRTUAL")
        ]
        owner = {r["name"]: r["tbl_name"] for r in schema if r["type"] == "index"}
        for r in schema:
            for table in virtual:
                if r["name"].startswith(table + "_"):
                    owner[r["name"]] = table
        try:
            pages = self._q("SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name")
        except sqlite3.OperationalError as exc:
            raise StoreError(
                f"this SQLite ({sqlite3.sqlite_version}) has no dbstat: {exc}"
            ) from exc
        sizes: dict[str, int] = {}
        for r in pages:
            name = str(r["name"])
            table = owner.get(name, name)
            if table.startswith("sqlite_autoindex_"):
                table = name
            sizes[table] = sizes.get(table, 0) + int(r["bytes"])
        return dict(sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])))


_FULL_TEXT_TABLES = (
    "messages_fts",
    "messages_trigram",
    "summaries_fts",
    "memories_fts",
)


def _full_text_problems(
    db: sqlite3.Connection, lock: threading.RLock, check_open: Callable[[], None]
) -> builtins.list[str]:
    problems: list[str] = []
    for table in _FULL_TEXT_TABLES:
        try:
            with lock:
                check_open()
                db.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
        except sqlite3.DatabaseError as exc:
            problems.append(f"full-text index {table}: {exc}")
    return problems


def _sqlite_error(exc: BaseException) -> sqlite3.Error | None:
    """``exc`` if it is SQLite's, else the sqlite3 error it was raised from (a
    ``StoreError`` naming the file wraps it as its ``__cause__``), or None."""
    seen: BaseException | None = exc
    for _ in range(8):  # a chain of causes is short; never loop on a cycle
        if seen is None or isinstance(seen, sqlite3.Error):
            return seen
        seen = seen.__cause__
    return None


def answers_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite answering busy (SQLITE_BUSY or SQLITE_LOCKED, with
    their extended codes, such as SQLITE_BUSY_RECOVERY), told by its result code:
    a corrupt file, a file that is not a database or a permission error is not."""
    error = _sqlite_error(exc)
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(code, int) and (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _ledger(db: sqlite3.Connection) -> list[AppliedMigration]:
    """The migrations the database's ledger records as applied."""
    return [
        AppliedMigration(r["version"], r["name"], r["checksum"])
        for r in db.execute("SELECT version, name, checksum FROM schema_migrations")
    ]


def open_sqlite(path: Path | str) -> SQLiteStore:
    try:
        return SQLiteStore(path)
    except MigrationError:
        raise
    except sqlite3.Error as exc:  # pragma: no cover - defensive: surfaced with the path
        raise StoreError(f"cannot open SQLite database {path}: {exc}") from exc


#: A 0-byte database younger than this may be one another process has just
#: created and is about to initialise (two hooks starting at once).
_FRESH_EMPTY_FILE_S = 30.0


def _refuse_empty_file(path: Path) -> None:
    """Refuse a database file that is empty but was not just created.

    SQLite treats a 0-byte file as a new, empty database, so a store truncated
    by a full disk, a bad copy or a sync tool would silently start over and
    every later write would go to a store that has lost its history.
    """
    info = path.stat()
    if info.st_size != 0 or time.time() - info.st_mtime < _FRESH_EMPTY_FILE_S:
        return
    for suffix in ("-wal", "-journal"):
        if Path(f"{path}{suffix}").exists():
            return  # the content may still be in the write-ahead log
    raise StoreError(
        f"SQLite database {path} is an empty (0-byte) file, not a store: if its history was "
        "lost, restore it from a backup; to start a new store, delete the file"
    )
