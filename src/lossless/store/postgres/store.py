"""PostgreSQL backend: one shared store for many machines, same contract as SQLite.

This package (with its migrations) is the only code that speaks SQL to
PostgreSQL, one module per repository; this module holds the store itself. A
``PostgresStore`` owns a small connection pool. ``transaction()`` pins one
pooled connection to the calling thread for the duration of the block, and
every repository call made on that thread joins it (as on SQLite, where the
store has a single connection); calls outside a transaction borrow a pooled
connection and are atomic on their own. Threads do not share transactions, so
several threads can each run one at a time on the same store.

Writers to one conversation are serialised by a ``FOR NO KEY UPDATE`` lock on
its row (sequence numbers and context ordinals are allocated under it); it
does not conflict with the key-share locks foreign keys take, so writes to
other tables that merely reference the conversation are not blocked.

Text inputs are checked for U+0000 before any SQL is sent: PostgreSQL cannot
store it, and the contract says ``InputError``, not a driver error.
"""

from __future__ import annotations

import builtins
import dataclasses
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import psycopg
import psycopg_pool
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from lossless.errors import (
    NestedTransactionError,
    StoreClosedError,
    StoreError,
    StoreUnavailableError,
)
from lossless.store import rows, totals
from lossless.store.contract import (
    Capabilities,
    Store,
    StoreStats,
)
from lossless.store.migrations import AppliedMigration
from lossless.store.postgres.connection import (
    DEFAULT_CONNECT_TIMEOUT_S,
    build_conninfo,
    describe_connect_error,
    describe_error,
    is_disconnect,
    translated,
)
from lossless.store.postgres.coordination import PostgresCoordination
from lossless.store.postgres.dag import Context, Summaries
from lossless.store.postgres.files import Files
from lossless.store.postgres.history import Conversations, Messages
from lossless.store.postgres.migrate import (
    add_vector_tables,
    applied_migrations,
    check_current,
    migrate_schema,
    vector_support,
)
from lossless.store.postgres.repository import Conn, Row
from lossless.store.postgres.search import Search

# Repositories that grep, status and the hooks' common paths do not use:
# imported when first asked for (see the properties), not at start-up.
if TYPE_CHECKING:
    from lossless.store.postgres.import_state import Cursors, Quarantine
    from lossless.store.postgres.leases import Leases
    from lossless.store.postgres.map_jobs import MapJobs
    from lossless.store.postgres.memory import Memories
    from lossless.store.postgres.vectors import Vectors


class PostgresStore:
    """The PostgreSQL implementation of ``lossless.store.contract.Store``."""

    backend = "postgresql"
    capabilities = Capabilities(
        full_text=True, regex=True, substring_index=True, distributed_coordination=True
    )

    def __init__(
        self,
        url: str,
        *,
        ca_file: str | None = None,
        min_connections: int = 1,
        max_connections: int = 8,
        statement_timeout_ms: int | None = None,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        migrate: bool = True,
    ) -> None:
        """Connect, bring the schema up to date (or check it), and open the pool.

        ``connect_timeout_s`` bounds each connection attempt (libpq's
        ``connect_timeout``, whole seconds, at least 2, unless the URL sets
        one) and the wait for a pooled connection.
        With ``migrate=False`` a database that is not at this version's latest
        migration is refused with ``MigrationError`` (``lcm postgres migrate``
        brings it up to date).
        """
        self._conninfo, self.target = build_conninfo(
            url,
            ca_file=ca_file,
            statement_timeout_ms=statement_timeout_ms,
            connect_timeout_s=connect_timeout_s,
        )
        self._local = threading.local()
        self._closed = False
        self._connect_timeout_s = connect_timeout_s
        # The session's own statement timeout (None: the server's), which a
        # regex grep's per-statement budget never exceeds.
        self.statement_timeout_ms = statement_timeout_ms
        with self.connect() as conn:
            self.server_version = conn.info.server_version
            with translated(self.target, in_transaction=True):
                if migrate:
                    self._history = migrate_schema(conn, where=self.target.where).history
                else:
                    self._history = check_current(conn, where=self.target.where)
            # Migration 0011 creates the vector tables only where pgvector exists
            # and this role may create it; an extension installed (or a
            # privilege granted) since then gets its tables now. Where nothing
            # would change, the open takes no lock and runs no DDL.
            with translated(self.target, in_transaction=False):
                vectors = vector_support(conn)
            has_vectors, off = vectors.present, vectors.reason
            if vectors.pending and migrate:
                with translated(self.target, in_transaction=True):
                    has_vectors = add_vector_tables(conn)
                if not has_vectors:
                    # The catalogs said it could; the server refused all the same.
                    off = (
                        "creating pgvector or lossless's vector tables was refused for a "
                        "privilege this role lacks: as a superuser in this database run "
                        "CREATE EXTENSION vector; then lossless adds its tables at the next open"
                    )
            elif vectors.pending:
                off = "the vector tables are not created by a store opened without migrating"
            if has_vectors:
                self.capabilities = dataclasses.replace(
                    PostgresStore.capabilities, vector_search="hnsw"
                )
            else:
                self.capabilities = dataclasses.replace(
                    PostgresStore.capabilities, vector_search_off=off
                )
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            self._conninfo,
            connection_class=psycopg.Connection[Row],
            kwargs={"autocommit": True, "row_factory": dict_row},
            min_size=min_connections,
            max_size=max(min_connections, max_connections),
            open=False,
            # A connection killed by the server (restart, pg_terminate_backend)
            # is noticed when borrowed and replaced, not handed to a caller.
            check=ConnectionPool.check_connection,
            name=f"lossless {self.target.where}",
            timeout=connect_timeout_s,
            # Give up a failing reconnection early; the next request starts a
            # fresh attempt instead of waiting out a long backoff.
            reconnect_timeout=max(connect_timeout_s, 1.0),
            num_workers=1,
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout_s)
        except psycopg.Error as exc:
            self._pool.close()
            raise describe_connect_error(exc, self.target) from None

    # -- lifecycle -------------------------------------------------------

    def _open_direct(self) -> Conn:
        try:
            conn: Conn = psycopg.Connection.connect(
                self._conninfo, autocommit=True, row_factory=dict_row
            )
        except psycopg.Error as exc:
            raise describe_connect_error(exc, self.target) from None
        return conn

    @contextmanager
    def connect(self) -> Iterator[Conn]:
        """A fresh connection outside the pool (migrations, administration)."""
        conn = self._open_direct()
        try:
            yield conn
        finally:
            conn.close()

    def migrations(self) -> builtins.list[AppliedMigration]:
        with self._connection() as conn:
            return applied_migrations(conn)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connections and transactions --------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"store {self.target.where} is closed")

    def _current(self) -> Conn | None:
        conn: Conn | None = getattr(self._local, "conn", None)
        return conn

    @contextmanager
    def transaction(self) -> Iterator[PostgresStore]:
        self._check_open()
        if self._current() is not None:
            raise NestedTransactionError(
                "a transaction is already open on this store; nested transactions are not supported"
            )
        with self._begin() as conn:
            self._local.conn = conn
            try:
                yield self
            finally:
                self._local.conn = None

    @contextmanager
    def _begin(self) -> Iterator[Conn]:
        """Borrow a connection and run the block as one transaction on it."""
        committing = False
        try:
            with self._borrow() as conn, conn.transaction():
                yield conn
                committing = True
        except psycopg.Error as exc:
            if (
                committing
                and isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
                and (not exc.sqlstate or is_disconnect(exc))
            ):
                # The COMMIT may have reached the server before the
                # connection died: claiming either outcome would be a guess.
                # (Any other error the server answered with: it rolled back.)
                raise StoreUnavailableError(
                    f"the connection to {self.target.where} was lost while committing: the "
                    "transaction may or may not have been committed; check before retrying"
                ) from exc
            raise describe_error(exc, self.target, in_transaction=True) from exc

    @contextmanager
    def _pinned(self) -> Iterator[None]:
        """Run this thread's calls in the block on one pooled connection.

        Outside a transaction every call borrows a connection of its own, and
        the pool checks each one with a round trip; a search that makes a few
        calls makes them on one connection instead. Statements still commit
        one by one.
        """
        self._check_open()
        if self._current() is not None or getattr(self._local, "pinned", None) is not None:
            yield
            return
        with translated(self.target, in_transaction=False), self._borrow() as conn:
            self._local.pinned = conn
            try:
                yield
            finally:
                self._local.pinned = None

    @contextmanager
    def _connection(self) -> Iterator[Conn]:
        """The thread's transaction (or pinned) connection if it has one, else a pooled one."""
        self._check_open()
        current = self._current()
        if current is not None:
            with translated(self.target, in_transaction=True):
                yield current
            return
        pinned: Conn | None = getattr(self._local, "pinned", None)
        if pinned is not None:
            with translated(self.target, in_transaction=False):
                yield pinned
            return
        with translated(self.target, in_transaction=False), self._borrow() as conn:
            yield conn

    @contextmanager
    def _borrow(self) -> Iterator[Conn]:
        """A pooled connection or, if the pool has none to give in time, a direct one.

        After an outage the pool waits out its reconnection backoff before it
        tries again; a direct attempt tells at once whether the server is back
        (and if not, fails with the server's host and port). The direct
        connection serves this one call and is closed.
        """
        try:
            conn = self._pool.getconn()
        except psycopg_pool.PoolTimeout:
            direct = self._open_direct()
            try:
                yield direct
            finally:
                direct.close()
            return
        try:
            yield conn
        finally:
            self._pool.putconn(conn)

    @contextmanager
    def _atomic(self) -> Iterator[Conn]:
        """Make one repository call atomic, joining the thread's open transaction if any."""
        self._check_open()
        current = self._current()
        if current is not None:
            with translated(self.target, in_transaction=True):
                yield current
            return
        with self._begin() as conn:
            yield conn

    def _q(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[Row]:
        with self._connection() as conn:
            return conn.execute(sql, params).fetchall()

    def _q1(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        with self._connection() as conn:
            return conn.execute(sql, params).fetchone()

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
        from lossless.store.postgres.import_state import Quarantine

        return Quarantine(self)

    @property
    def cursors(self) -> Cursors:
        from lossless.store.postgres.import_state import Cursors

        return Cursors(self)

    @property
    def leases(self) -> Leases:
        from lossless.store.postgres.leases import Leases

        return Leases(self)

    @property
    def memory(self) -> Memories:
        from lossless.store.postgres.memory import Memories

        return Memories(self)

    @property
    def vectors(self) -> Vectors:
        from lossless.store.postgres.vectors import Vectors

        return Vectors(self)

    @property
    def map_jobs(self) -> MapJobs:
        from lossless.store.postgres.map_jobs import MapJobs

        return MapJobs(self)

    @property
    def coordination(self) -> PostgresCoordination:
        """The shared job queue and outbox receipts (never None on PostgreSQL)."""
        return PostgresCoordination(self)

    # -- stats -------------------------------------------------------------

    def stats(self, *, project: str | None = None) -> StoreStats:
        rows.check_text(project, "project")
        scoped = project is not None
        params = [project] if scoped else []
        row = self._q1(totals.stats_sql("%s", scoped=scoped), params)
        assert row is not None
        by_client = {
            r["client"]: int(r["n"])
            for r in self._q(totals.by_client_sql("%s", scoped=scoped), params)
        }
        return rows.store_stats(row, by_client)

    # Tables whose rows ``rewrite``/``restore`` can change in place.
    _SCRUBBED_TABLES = (
        "conversations",
        "messages",
        "message_parts",
        "native_records",
        "summaries",
        "large_files",
        "quarantine",
        "memories",
    )

    def integrity_check(self) -> list[str]:
        """Cheap server-side checks: the schema's tables are present and readable.

        PostgreSQL verifies pages with checksums as it reads them (when the
        cluster has them enabled); a full B-tree check needs the amcheck
        extension, which lossless does not require.
        """
        problems: list[str] = []
        for table in self._SCRUBBED_TABLES:
            try:
                self._q1(f"SELECT count(*) AS n FROM lcm.{table}")
            except StoreError as exc:
                problems.append(f"table lcm.{table}: {exc}")
        return problems

    def scrub(self) -> None:
        """VACUUM FULL the rewritable tables: each is copied to new files (indexes
        rebuilt) and the old files, with the dead row versions, are removed.

        A plain VACUUM only marks dead tuples' space reusable; their bytes stay
        in the table file until overwritten. WAL segments, replicas and backups
        keep old versions until they are recycled: that is the operator's part.
        """
        self._check_open()
        if self._current() is not None:
            raise StoreError("scrub cannot run inside a transaction")
        # VACUUM refuses to run in a transaction block; pooled connections
        # are autocommit, so each statement runs on its own.
        with self._connection() as conn:
            for table in self._SCRUBBED_TABLES:
                conn.execute(f"VACUUM (FULL, ANALYZE) lcm.{table}")

    def info(self) -> dict[str, Any]:
        row = self._q1(
            "SELECT current_setting('server_version') AS version, "
            "pg_database_size(current_database()) AS size"
        )
        stats = self._pool.get_stats()
        return {
            "backend": self.backend,
            # "path" is where status and doctor look for a store's location.
            "path": self.target.scrub(self.target.url),
            "url": self.target.scrub(self.target.url),
            "host": self.target.host,
            "port": self.target.port,
            "database": self.target.database,
            "server_version": row["version"] if row else None,
            "bytes_on_disk": int(row["size"]) if row else 0,
            "migrations": [f"{m.version:04d}_{m.name}" for m in self.migrations()],
            "pool": {
                "size": stats.get("pool_size", 0),
                "available": stats.get("pool_available", 0),
                "max": self._pool.max_size,
                "waiting": stats.get("requests_waiting", 0),
                "errors": stats.get("connections_errors", 0),
                "lost": stats.get("connections_lost", 0),
            },
        }

    def size_by_table(self) -> dict[str, int]:
        found = self._q(
            "SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'lcm' AND c.relkind IN ('r', 'p', 'm')"
        )
        sizes = {str(r["name"]): int(r["bytes"]) for r in found}
        return dict(sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])))


def _conforms(store: PostgresStore) -> Store:
    """Never called: makes mypy prove that ``PostgresStore`` satisfies the contract."""
    return store
