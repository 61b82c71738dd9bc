"""PostgreSQL backend: one shared store for many machines, same contract as SQLite.

The only module (with its migrations) that speaks SQL to PostgreSQL. A
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
import hashlib
import json
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
import psycopg_pool
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from lossless.errors import (
    InputError,
    LeaseLostError,
    NestedTransactionError,
    NotFoundError,
    StoreClosedError,
    StoreError,
)
from lossless.models import (
    JSON,
    ContextItem,
    Conversation,
    LargeFile,
    Message,
    NativeRecord,
    NewLargeFile,
    NewMessage,
    NewNativeRecord,
    NewSummary,
    Part,
    QuarantinedLine,
    SearchHit,
    SourceCursor,
    Summary,
)
from lossless.store import rows
from lossless.store.contract import (
    AppendResult,
    Capabilities,
    GrepHits,
    GrepQuery,
    Lease,
    PartRewrite,
    Store,
    StoreStats,
)
from lossless.store.migrations import AppliedMigration
from lossless.store.postgres import fulltext
from lossless.store.postgres.connection import (
    DEFAULT_CONNECT_TIMEOUT_S,
    build_conninfo,
    describe_connect_error,
    describe_error,
    translated,
)
from lossless.store.postgres.coordination import PostgresCoordination
from lossless.store.postgres.map_jobs import MapJobs
from lossless.store.postgres.memory import Memories
from lossless.store.postgres.migrate import applied_migrations, check_current, migrate_schema
from lossless.store.regex import (
    ScanBudget,
    compile_user_regex,
    required_literal,
    snippet_around,
)
from lossless.timeutil import utc_now_iso
from lossless.tokens import estimate_tokens

Row = dict[str, Any]
Conn = psycopg.Connection[Row]

# Regex grep reads candidates newest first: LIMIT queries of these sizes
# (most greps are done within the first), then a cursor read in pages of
# REGEX_CURSOR_PAGE rows.
REGEX_PAGES = (100, 1_000)
REGEX_CURSOR_PAGE = 1_000

# As on SQLite: a sub-agent's match ranks below an equal one from the session
# that started it (ranks are negative, best lowest), while a much better
# sub-agent match still comes first.
_SUBAGENT_WEIGHT = "(CASE WHEN c.parent_id IS NULL THEN 1.0 ELSE 0.5 END)"

_MESSAGE_COLUMNS = (
    "m.id, m.conversation_id, m.seq, m.role, m.content, m.token_count, m.created_at, "
    "m.ingest_key, m.metadata"
)
_SUMMARY_COLUMNS = (
    "s.id, s.conversation_id, s.kind, s.depth, s.content, s.token_count, s.earliest_at, "
    "s.latest_at, s.descendant_count, s.source_token_count, s.file_ids, s.metadata, s.created_at"
)


_check_text = rows.check_text
_dumps = rows.dumps_json
_large_file = rows.large_file
_one_line = rows.one_line
_numeric_id = rows.numeric_id
_with_cover = rows.with_cover


def _same(value: Any) -> Any:
    # psycopg decodes json columns already.
    return value


def _conversation(row: Any) -> Conversation:
    return rows.conversation(row, _same)


def _message(row: Any) -> Message:
    return rows.message(row, _same)


def _summary(row: Any) -> Summary:
    return rows.summary(row, _same)


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
        with self.connect() as conn:
            self.server_version = conn.info.server_version
            with translated(self.target, in_transaction=True):
                if migrate:
                    self._history = migrate_schema(conn, where=self.target.where).history
                else:
                    self._history = check_current(conn, where=self.target.where)
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
            if committing and isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
                # The COMMIT may have reached the server before the
                # connection died: claiming either outcome would be a guess.
                raise StoreError(
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
    def conversations(self) -> _Conversations:
        return _Conversations(self)

    @property
    def messages(self) -> _Messages:
        return _Messages(self)

    @property
    def summaries(self) -> _Summaries:
        return _Summaries(self)

    @property
    def context(self) -> _Context:
        return _Context(self)

    @property
    def files(self) -> _Files:
        return _Files(self)

    @property
    def search(self) -> _Search:
        return _Search(self)

    @property
    def quarantine(self) -> _Quarantine:
        return _Quarantine(self)

    @property
    def cursors(self) -> _Cursors:
        return _Cursors(self)

    @property
    def leases(self) -> _Leases:
        return _Leases(self)

    @property
    def memory(self) -> Memories:
        return Memories(self)

    @property
    def map_jobs(self) -> MapJobs:
        return MapJobs(self)

    @property
    def coordination(self) -> PostgresCoordination:
        """The shared job queue and outbox receipts (never None on PostgreSQL)."""
        return PostgresCoordination(self)

    # -- stats -------------------------------------------------------------

    def stats(self) -> StoreStats:
        row = self._q1(
            "SELECT (SELECT count(*) FROM conversations) AS conversations, "
            "(SELECT count(*) FROM messages) AS messages, "
            "(SELECT count(*) FROM message_parts) AS parts, "
            "(SELECT count(*) FROM native_records) AS native_records, "
            "(SELECT count(*) FROM summaries) AS summaries, "
            "(SELECT count(*) FROM context_items) AS context_items, "
            "(SELECT count(*) FROM large_files) AS large_files, "
            "(SELECT count(*) FROM quarantine) AS quarantined, "
            "(SELECT coalesce(sum(token_count), 0) FROM messages) AS message_tokens, "
            "(SELECT coalesce(sum(token_count), 0) FROM summaries) AS summary_tokens"
        )
        assert row is not None
        by_client = {
            r["client"]: int(r["n"])
            for r in self._q("SELECT client, count(*) AS n FROM conversations GROUP BY client")
        }
        return StoreStats(
            conversations=int(row["conversations"]),
            messages=int(row["messages"]),
            parts=int(row["parts"]),
            native_records=int(row["native_records"]),
            summaries=int(row["summaries"]),
            context_items=int(row["context_items"]),
            large_files=int(row["large_files"]),
            quarantined=int(row["quarantined"]),
            message_tokens=int(row["message_tokens"]),
            summary_tokens=int(row["summary_tokens"]),
            by_client=by_client,
        )

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


class _Repo:
    def __init__(self, store: PostgresStore) -> None:
        self.s = store


def _lock_conversation(conn: Conn, conversation_id: int) -> None:
    row = conn.execute(
        "SELECT id FROM conversations WHERE id = %s FOR NO KEY UPDATE", [conversation_id]
    ).fetchone()
    if row is None:
        raise StoreError(f"conversation {conversation_id} does not exist")


class _Conversations(_Repo):
    def get_or_create(
        self,
        *,
        project: str,
        session_id: str,
        client: str,
        title: str | None = None,
        parent_id: int | None = None,
        metadata: JSON | None = None,
        created_at: str | None = None,
    ) -> Conversation:
        for value, what in (
            (project, "project"),
            (session_id, "session id"),
            (client, "client"),
            (title, "title"),
            (created_at, "created_at"),
        ):
            _check_text(value, what)
        meta = _dumps(metadata or {})
        with self.s._atomic() as conn:
            # ON CONFLICT makes concurrent creators converge on one row: the
            # loser waits for the winner's commit, then finds its row.
            row = conn.execute(
                "INSERT INTO conversations(project, session_id, client, title, parent_id, "
                "metadata, created_at) VALUES (%s, %s, %s, %s, %s, %s::json, %s) "
                "ON CONFLICT (project, client, session_id) DO NOTHING RETURNING *",
                [project, session_id, client, title, parent_id, meta, created_at or utc_now_iso()],
            ).fetchone()
            if row is None:
                row = conn.execute(
                    "SELECT * FROM conversations WHERE project = %s AND client = %s "
                    "AND session_id = %s",
                    [project, client, session_id],
                ).fetchone()
            assert row is not None
            return _conversation(row)

    def get(self, conversation_id: int) -> Conversation | None:
        row = self.s._q1("SELECT * FROM conversations WHERE id = %s", [conversation_id])
        return None if row is None else _conversation(row)

    def find_by_session(
        self, session_id: str, *, project: str | None = None
    ) -> Conversation | None:
        _check_text(session_id, "session id")
        _check_text(project, "project")
        sql = "SELECT * FROM conversations WHERE session_id = %s"
        params: list[Any] = [session_id]
        if project is not None:
            sql += " AND project = %s"
            params.append(project)
        row = self.s._q1(sql + " ORDER BY created_at DESC, id DESC LIMIT 1", params)
        return None if row is None else _conversation(row)

    def list(
        self, *, project: str | None = None, client: str | None = None, limit: int | None = None
    ) -> builtins.list[Conversation]:
        _check_text(project, "project")
        _check_text(client, "client")
        sql = "SELECT * FROM conversations WHERE true"
        params: list[Any] = []
        if project is not None:
            sql += " AND project = %s"
            params.append(project)
        if client is not None:
            sql += " AND client = %s"
            params.append(client)
        sql += " ORDER BY created_at, id"
        if limit is not None and limit >= 0:
            sql += " LIMIT %s"
            params.append(limit)
        return [_conversation(r) for r in self.s._q(sql, params)]

    def update_metadata(self, conversation_id: int, metadata: JSON) -> None:
        _dumps(metadata)
        with self.s._atomic() as conn:
            row = conn.execute(
                "SELECT metadata FROM conversations WHERE id = %s FOR NO KEY UPDATE",
                [conversation_id],
            ).fetchone()
            if row is None:
                raise StoreError(f"conversation {conversation_id} does not exist")
            merged = {**row["metadata"], **metadata}
            conn.execute(
                "UPDATE conversations SET metadata = %s::json WHERE id = %s",
                [_dumps(merged), conversation_id],
            )

    def rewrite(self, conversation_id: int, *, title: str | None, metadata: JSON) -> None:
        _check_text(title, "title")
        meta = _dumps(metadata or {})
        with self.s._atomic() as conn:
            cur = conn.execute(
                "UPDATE conversations SET title = %s, metadata = %s::json WHERE id = %s",
                [title, meta, conversation_id],
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no conversation {conversation_id}")


class _Messages(_Repo):
    def append(self, conversation_id: int, messages: Sequence[NewMessage]) -> AppendResult:
        for m in messages:
            _check_text(m.content, "message content")
            _check_text(m.ingest_key, "ingest key")
            _check_text(m.created_at, "created_at")
            _dumps(m.metadata)
            for p in m.parts:
                _check_text(p.kind, "message part kind")
                _check_text(p.text, "message part text")
                _check_text(p.tool_name, "tool name")
                _check_text(p.tool_call_id, "tool call id")
                _dumps(p.metadata)
            _check_records(m.native_records)
        if not messages:
            return AppendResult(inserted=[], skipped=0)
        now = utc_now_iso()
        with self.s._atomic() as conn:
            _lock_conversation(conn, conversation_id)
            row = conn.execute(
                "SELECT coalesce(max(seq), -1) + 1 AS next FROM messages "
                "WHERE conversation_id = %s",
                [conversation_id],
            ).fetchone()
            next_seq = int(row["next"]) if row else 0
            keys = [m.ingest_key for m in messages if m.ingest_key is not None]
            seen: set[str] = set()
            if keys:
                seen = {
                    r["ingest_key"]
                    for r in conn.execute(
                        "SELECT ingest_key FROM messages WHERE conversation_id = %s "
                        "AND ingest_key = ANY(%s)",
                        [conversation_id, keys],
                    )
                }
            planned: list[tuple[int, NewMessage, int, str]] = []
            skipped = 0
            for m in messages:
                if m.ingest_key is not None:
                    # A key repeated within one batch is a duplicate too.
                    if m.ingest_key in seen:
                        skipped += 1
                        continue
                    seen.add(m.ingest_key)
                token_count = (
                    m.token_count if m.token_count is not None else estimate_tokens(m.content)
                )
                planned.append((next_seq, m, token_count, m.created_at or now))
                next_seq += 1
            if not planned:
                return AppendResult(inserted=[], skipped=skipped)
            ids = {
                int(r["seq"]): int(r["id"])
                for r in conn.execute(
                    "INSERT INTO messages(conversation_id, seq, role, content, token_count, "
                    "created_at, ingest_key, metadata) "
                    "SELECT %s, u.* FROM unnest(%s::bigint[], %s::text[], %s::text[], "
                    "%s::bigint[], %s::text[], %s::text[], %s::json[]) AS u "
                    "RETURNING id, seq",
                    [
                        conversation_id,
                        [seq for seq, _, _, _ in planned],
                        [m.role for _, m, _, _ in planned],
                        [m.content for _, m, _, _ in planned],
                        [tokens for _, _, tokens, _ in planned],
                        [at for _, _, _, at in planned],
                        [m.ingest_key for _, m, _, _ in planned],
                        [_dumps(m.metadata) for _, m, _, _ in planned],
                    ],
                )
            }
            parts = [(ids[seq], i, p) for seq, m, _, _ in planned for i, p in enumerate(m.parts)]
            if parts:
                conn.execute(
                    "INSERT INTO message_parts(message_id, ordinal, kind, text, tool_name, "
                    "tool_call_id, metadata) SELECT * FROM unnest(%s::bigint[], %s::bigint[], "
                    "%s::text[], %s::text[], %s::text[], %s::text[], %s::json[])",
                    [
                        [mid for mid, _, _ in parts],
                        [i for _, i, _ in parts],
                        [p.kind for _, _, p in parts],
                        [p.text for _, _, p in parts],
                        [p.tool_name for _, _, p in parts],
                        [p.tool_call_id for _, _, p in parts],
                        [_dumps(p.metadata) for _, _, p in parts],
                    ],
                )
            records = [(ids[seq], r) for seq, m, _, _ in planned for r in m.native_records]
            if records:
                _insert_records(conn, conversation_id, records)
        inserted = [
            Message(
                id=ids[seq],
                conversation_id=conversation_id,
                seq=seq,
                role=m.role,
                content=m.content,
                token_count=tokens,
                created_at=at,
                ingest_key=m.ingest_key,
                metadata=m.metadata,
            )
            for seq, m, tokens, at in planned
        ]
        return AppendResult(inserted=inserted, skipped=skipped)

    def add_native_records(self, conversation_id: int, records: Sequence[NewNativeRecord]) -> int:
        _check_records(records)
        if not records:
            return 0
        with self.s._atomic() as conn:
            return _insert_records(conn, conversation_id, [(None, r) for r in records])

    def get(self, message_id: int) -> Message | None:
        row = self.s._q1(f"SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.id = %s", [message_id])
        return None if row is None else _message(row)

    def get_many(self, message_ids: Sequence[int]) -> builtins.list[Message]:
        if not message_ids:
            return []
        rows = self.s._q(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.id = ANY(%s) "
            "ORDER BY m.conversation_id, m.seq",
            [list(dict.fromkeys(message_ids))],
        )
        return [_message(r) for r in rows]

    def list(
        self, conversation_id: int, *, after_seq: int | None = None, limit: int | None = None
    ) -> builtins.list[Message]:
        if limit == 0:
            return []
        sql = (
            f"SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.conversation_id = %s "
            "AND m.seq > %s ORDER BY m.seq"
        )
        params: list[Any] = [conversation_id, -1 if after_seq is None else after_seq]
        if limit is not None and limit > 0:
            sql += " LIMIT %s"
            params.append(limit)
        return [_message(r) for r in self.s._q(sql, params)]

    def iter_all(self, conversation_id: int, *, batch: int = 1000) -> Iterator[Message]:
        after = -1
        while True:
            page = self.list(conversation_id, after_seq=after, limit=batch)
            if not page:
                return
            yield from page
            after = page[-1].seq

    def parts(self, message_ids: Sequence[int]) -> dict[int, builtins.list[Part]]:
        result: dict[int, builtins.list[Part]] = {mid: [] for mid in message_ids}
        if not result:
            return result
        for r in self.s._q(
            "SELECT * FROM message_parts WHERE message_id = ANY(%s) ORDER BY message_id, ordinal",
            [builtins.list(result)],
        ):
            result[r["message_id"]].append(
                Part(
                    message_id=r["message_id"],
                    ordinal=r["ordinal"],
                    kind=r["kind"],
                    text=r["text"],
                    tool_name=r["tool_name"],
                    tool_call_id=r["tool_call_id"],
                    metadata=r["metadata"],
                )
            )
        return result

    def native_records(
        self, conversation_id: int, *, message_id: int | None = None
    ) -> builtins.list[NativeRecord]:
        sql = "SELECT * FROM native_records WHERE conversation_id = %s"
        params: list[Any] = [conversation_id]
        if message_id is not None:
            sql += " AND message_id = %s"
            params.append(message_id)
        return [
            NativeRecord(
                id=r["id"],
                conversation_id=r["conversation_id"],
                message_id=r["message_id"],
                native_key=r["native_key"],
                record_type=r["record_type"],
                raw=r["raw"],
                source_path=r["source_path"],
                line_no=r["line_no"],
                byte_offset=r["byte_offset"],
            )
            for r in self.s._q(sql + " ORDER BY id", params)
        ]

    def has_native_keys(self, conversation_id: int, keys: Sequence[str]) -> set[str]:
        for key in keys:
            _check_text(key, "native key")
        if not keys:
            return set()
        return {
            r["native_key"]
            for r in self.s._q(
                "SELECT native_key FROM native_records WHERE conversation_id = %s "
                "AND native_key = ANY(%s)",
                [conversation_id, list(dict.fromkeys(keys))],
            )
        }

    def count(self, conversation_id: int | None = None) -> int:
        if conversation_id is None:
            row = self.s._q1("SELECT count(*) AS n FROM messages")
        else:
            row = self.s._q1(
                "SELECT count(*) AS n FROM messages WHERE conversation_id = %s", [conversation_id]
            )
        return int(row["n"]) if row else 0

    def last(self, conversation_id: int) -> Message | None:
        row = self.s._q1(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.conversation_id = %s "
            "ORDER BY m.seq DESC LIMIT 1",
            [conversation_id],
        )
        return None if row is None else _message(row)

    def rewrite(
        self,
        message_id: int,
        content: str,
        metadata: JSON | None,
        parts: Sequence[PartRewrite] = (),
    ) -> None:
        _check_text(content, "message content")
        for p in parts:
            _check_text(p.text, "message part text")
        meta = _dumps(metadata)
        part_rows = [(p.text, _dumps(p.metadata), message_id, p.ordinal) for p in parts]
        with self.s._atomic() as conn:
            cur = conn.execute(
                "UPDATE messages SET content = %s, metadata = %s::json WHERE id = %s",
                [content, meta, message_id],
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no message {message_id}")
            for row in part_rows:
                cur = conn.execute(
                    "UPDATE message_parts SET text = %s, metadata = %s::json "
                    "WHERE message_id = %s AND ordinal = %s",
                    list(row),
                )
                if cur.rowcount == 0:
                    raise NotFoundError(f"message {message_id} has no part {row[3]}")

    def rewrite_native_record(self, record_id: int, raw: str) -> None:
        _check_text(raw, "native record")
        with self.s._atomic() as conn:
            cur = conn.execute("UPDATE native_records SET raw = %s WHERE id = %s", [raw, record_id])
            if cur.rowcount == 0:
                raise NotFoundError(f"no native record {record_id}")


def _check_records(records: Sequence[NewNativeRecord]) -> None:
    for r in records:
        _check_text(r.raw, "native record")
        _check_text(r.native_key, "native key")
        _check_text(r.record_type, "native record type")
        _check_text(r.source_path, "source path")


def _insert_records(
    conn: Conn, conversation_id: int, records: Sequence[tuple[int | None, NewNativeRecord]]
) -> int:
    cur = conn.execute(
        "INSERT INTO native_records(conversation_id, message_id, native_key, record_type, raw, "
        "source_path, line_no, byte_offset) SELECT %s, u.* FROM unnest(%s::bigint[], "
        "%s::text[], %s::text[], %s::text[], %s::text[], %s::bigint[], %s::bigint[]) AS u "
        "ON CONFLICT (conversation_id, native_key) DO NOTHING",
        [
            conversation_id,
            [mid for mid, _ in records],
            [r.native_key for _, r in records],
            [r.record_type for _, r in records],
            [r.raw for _, r in records],
            [r.source_path for _, r in records],
            [r.line_no for _, r in records],
            [r.byte_offset for _, r in records],
        ],
    )
    return max(cur.rowcount, 0)


class _Summaries(_Repo):
    def create(
        self,
        summary: NewSummary,
        *,
        message_ids: Sequence[int] = (),
        source_summary_ids: Sequence[str] = (),
    ) -> Summary:
        stored = rows.new_summary(summary)
        if not self.restore(stored, message_ids=message_ids, source_summary_ids=source_summary_ids):
            raise StoreError(f"summary id {stored.id} already exists")
        return stored

    def rewrite(self, summary_id: str, content: str) -> None:
        _check_text(summary_id, "summary id")
        _check_text(content, "summary content")
        with self.s._atomic() as conn:
            cur = conn.execute(
                "UPDATE summaries SET content = %s WHERE id = %s", [content, summary_id]
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no summary {summary_id!r}")

    def restore(
        self,
        summary: Summary,
        *,
        message_ids: Sequence[int] = (),
        source_summary_ids: Sequence[str] = (),
    ) -> bool:
        for value, what in (
            (summary.id, "summary id"),
            (summary.content, "summary content"),
            (summary.earliest_at, "earliest_at"),
            (summary.latest_at, "latest_at"),
            (summary.created_at, "created_at"),
        ):
            _check_text(value, what)
        for source_id in [*summary.file_ids, *source_summary_ids]:
            _check_text(source_id, "summary or file id")
        metadata = _dumps(summary.metadata)
        with self.s._atomic() as conn:
            inserted = conn.execute(
                "INSERT INTO summaries(id, conversation_id, kind, depth, content, token_count, "
                "earliest_at, latest_at, descendant_count, source_token_count, file_ids, "
                "metadata, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                "%s::json, %s::json, %s) ON CONFLICT (id) DO NOTHING RETURNING id",
                [
                    summary.id,
                    summary.conversation_id,
                    summary.kind,
                    summary.depth,
                    summary.content,
                    summary.token_count,
                    summary.earliest_at,
                    summary.latest_at,
                    summary.descendant_count,
                    summary.source_token_count,
                    json.dumps(list(summary.file_ids)),
                    metadata,
                    summary.created_at,
                ],
            ).fetchone()
            if inserted is None:
                return False
            if message_ids:
                conn.execute(
                    "INSERT INTO summary_messages(summary_id, ordinal, message_id) "
                    "SELECT %s, u.ordinality - 1, u.id "
                    "FROM unnest(%s::bigint[]) WITH ORDINALITY AS u(id, ordinality)",
                    [summary.id, list(message_ids)],
                )
            if source_summary_ids:
                conn.execute(
                    "INSERT INTO summary_parents(summary_id, ordinal, parent_id) "
                    "SELECT %s, u.ordinality - 1, u.id "
                    "FROM unnest(%s::text[]) WITH ORDINALITY AS u(id, ordinality)",
                    [summary.id, list(source_summary_ids)],
                )
        return True

    def get(self, summary_id: str) -> Summary | None:
        _check_text(summary_id, "summary id")
        row = self.s._q1(
            f"SELECT {_SUMMARY_COLUMNS} FROM summaries s WHERE s.id = %s", [summary_id]
        )
        return None if row is None else _summary(row)

    def list(self, conversation_id: int, *, depth: int | None = None) -> builtins.list[Summary]:
        sql = f"SELECT {_SUMMARY_COLUMNS} FROM summaries s WHERE s.conversation_id = %s"
        params: list[Any] = [conversation_id]
        if depth is not None:
            sql += " AND s.depth = %s"
            params.append(depth)
        return [_summary(r) for r in self.s._q(sql + " ORDER BY s.created_seq", params)]

    def source_message_ids(self, summary_id: str) -> builtins.list[int]:
        _check_text(summary_id, "summary id")
        rows = self.s._q(
            "SELECT message_id FROM summary_messages WHERE summary_id = %s ORDER BY ordinal",
            [summary_id],
        )
        return [int(r["message_id"]) for r in rows]

    def source_summary_ids(self, summary_id: str) -> builtins.list[str]:
        _check_text(summary_id, "summary id")
        rows = self.s._q(
            "SELECT parent_id FROM summary_parents WHERE summary_id = %s ORDER BY ordinal",
            [summary_id],
        )
        return [str(r["parent_id"]) for r in rows]

    def covering(self, message_ids: Sequence[int]) -> dict[int, str]:
        if not message_ids:
            return {}
        # A message is normally covered by one leaf; should there be more,
        # the earliest created one is reported, deterministically.
        rows = self.s._q(
            "SELECT DISTINCT ON (sm.message_id) sm.message_id, sm.summary_id "
            "FROM summary_messages sm JOIN summaries s ON s.id = sm.summary_id "
            "WHERE sm.message_id = ANY(%s) ORDER BY sm.message_id, s.created_seq",
            [list(dict.fromkeys(message_ids))],
        )
        return {int(r["message_id"]): str(r["summary_id"]) for r in rows}

    def condensed_into(self, summary_id: str) -> str | None:
        _check_text(summary_id, "summary id")
        row = self.s._q1(
            "SELECT sp.summary_id FROM summary_parents sp JOIN summaries s ON s.id = sp.summary_id "
            "WHERE sp.parent_id = %s ORDER BY s.created_seq LIMIT 1",
            [summary_id],
        )
        return None if row is None else str(row["summary_id"])


class _Context(_Repo):
    def list(self, conversation_id: int) -> builtins.list[ContextItem]:
        return [
            ContextItem(
                conversation_id=r["conversation_id"],
                ordinal=r["ordinal"],
                item_type=r["item_type"],
                message_id=r["message_id"],
                summary_id=r["summary_id"],
                token_count=r["token_count"],
            )
            for r in self.s._q(
                "SELECT * FROM context_items WHERE conversation_id = %s ORDER BY ordinal",
                [conversation_id],
            )
        ]

    def append_messages(self, conversation_id: int, messages: Sequence[Message]) -> None:
        if not messages:
            return
        with self.s._atomic() as conn:
            _lock_conversation(conn, conversation_id)
            row = conn.execute(
                "SELECT coalesce(max(ordinal), -1) + 1 AS next FROM context_items "
                "WHERE conversation_id = %s",
                [conversation_id],
            ).fetchone()
            start = int(row["next"]) if row else 0
            conn.execute(
                "INSERT INTO context_items(conversation_id, ordinal, item_type, message_id, "
                "token_count) SELECT %s, %s + u.ordinality - 1, 'message', u.id, u.tokens "
                "FROM unnest(%s::bigint[], %s::bigint[]) WITH ORDINALITY AS u(id, tokens, "
                "ordinality)",
                [
                    conversation_id,
                    start,
                    [m.id for m in messages],
                    [m.token_count for m in messages],
                ],
            )

    def replace_range(
        self, conversation_id: int, first_ordinal: int, last_ordinal: int, summary: Summary
    ) -> None:
        if last_ordinal < first_ordinal:
            raise StoreError(f"empty context range {first_ordinal}..{last_ordinal}")
        with self.s._atomic() as conn:
            _lock_conversation(conn, conversation_id)
            rows = conn.execute(
                "SELECT ordinal FROM context_items WHERE conversation_id = %s "
                "AND ordinal BETWEEN %s AND %s ORDER BY ordinal",
                [conversation_id, first_ordinal, last_ordinal],
            ).fetchall()
            if not rows or rows[0]["ordinal"] != first_ordinal:
                raise StoreError(
                    f"context items {first_ordinal}..{last_ordinal} of conversation "
                    f"{conversation_id} do not exist (was it compacted concurrently?)"
                )
            conn.execute(
                "DELETE FROM context_items WHERE conversation_id = %s "
                "AND ordinal BETWEEN %s AND %s",
                [conversation_id, first_ordinal, last_ordinal],
            )
            # Ordinals only need to be ordered, not dense: the summary takes
            # the first slot and the gap left behind is harmless.
            conn.execute(
                "INSERT INTO context_items(conversation_id, ordinal, item_type, summary_id, "
                "token_count) VALUES (%s, %s, 'summary', %s, %s)",
                [conversation_id, first_ordinal, summary.id, summary.token_count],
            )

    def token_total(self, conversation_id: int) -> int:
        row = self.s._q1(
            "SELECT coalesce(sum(token_count), 0) AS n FROM context_items "
            "WHERE conversation_id = %s",
            [conversation_id],
        )
        return int(row["n"]) if row else 0

    def restore(self, conversation_id: int, items: Sequence[ContextItem]) -> None:
        for item in items:
            _check_text(item.summary_id, "summary id")
        with self.s._atomic() as conn:
            _lock_conversation(conn, conversation_id)
            conn.execute("DELETE FROM context_items WHERE conversation_id = %s", [conversation_id])
            if not items:
                return
            conn.execute(
                "INSERT INTO context_items(conversation_id, ordinal, item_type, message_id, "
                "summary_id, token_count) SELECT %s, u.* FROM unnest(%s::bigint[], "
                "%s::text[], %s::bigint[], %s::text[], %s::bigint[]) AS u",
                [
                    conversation_id,
                    [i.ordinal for i in items],
                    [i.item_type for i in items],
                    [i.message_id for i in items],
                    [i.summary_id for i in items],
                    [i.token_count for i in items],
                ],
            )


class _Files(_Repo):
    def create(self, large_file: NewLargeFile) -> LargeFile:
        stored = rows.new_large_file(large_file)
        if not self.restore(stored):
            raise StoreError(f"large file id {stored.id} already exists")
        return stored

    def get(self, file_id: str) -> LargeFile | None:
        _check_text(file_id, "file id")
        row = self.s._q1("SELECT * FROM large_files WHERE id = %s", [file_id])
        return None if row is None else _large_file(row)

    def list(self, conversation_id: int) -> builtins.list[LargeFile]:
        rows = self.s._q(
            "SELECT * FROM large_files WHERE conversation_id = %s ORDER BY created_at, id",
            [conversation_id],
        )
        return [_large_file(r) for r in rows]

    def restore(self, large_file: LargeFile) -> bool:
        f = large_file
        for value, what in (
            (f.id, "file id"),
            (f.path, "path"),
            (f.sha256, "sha256"),
            (f.media_type, "media type"),
            (f.exploration_summary, "exploration summary"),
            (f.original_name, "original name"),
            (f.created_at, "created_at"),
        ):
            _check_text(value, what)
        with self.s._atomic() as conn:
            cur = conn.execute(
                "INSERT INTO large_files(id, conversation_id, message_id, path, byte_size, "
                "token_count, sha256, media_type, exploration_summary, original_name, "
                "created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (id) DO NOTHING",
                [
                    f.id,
                    f.conversation_id,
                    f.message_id,
                    f.path,
                    f.byte_size,
                    f.token_count,
                    f.sha256,
                    f.media_type,
                    f.exploration_summary,
                    f.original_name,
                    f.created_at,
                ],
            )
            return cur.rowcount > 0

    def rewrite(
        self,
        file_id: str,
        *,
        path: str,
        sha256: str,
        byte_size: int,
        token_count: int,
        exploration_summary: str,
    ) -> LargeFile:
        for value, what in (
            (file_id, "file id"),
            (path, "path"),
            (sha256, "sha256"),
            (exploration_summary, "exploration summary"),
        ):
            _check_text(value, what)
        row = self.s._q1(
            "UPDATE large_files SET path = %s, sha256 = %s, byte_size = %s, token_count = %s, "
            "exploration_summary = %s WHERE id = %s RETURNING *",
            [path, sha256, byte_size, token_count, exploration_summary, file_id],
        )
        if row is None:
            raise NotFoundError(f"no large file {file_id!r}")
        return _large_file(row)

    def paths_in_use(self, paths: Sequence[str]) -> set[str]:
        for path in paths:
            _check_text(path, "path")
        if not paths:
            return set()
        rows = self.s._q(
            "SELECT DISTINCT path FROM large_files WHERE path = ANY(%s)", [list(paths)]
        )
        return {str(r["path"]) for r in rows}


class _Search(_Repo):
    # pg_trgm's GIN index is maintained by the server as rows are written.
    def index_backlog(self) -> int:
        return 0

    def catch_up(self, max_rows: int) -> int:
        return 0

    def grep(self, query: GrepQuery) -> GrepHits:
        if not query.pattern:
            raise InputError("grep pattern is empty")
        _check_text(query.pattern, "grep pattern")
        _check_text(query.session_id, "session id")
        _check_text(query.project, "project")
        _check_text(query.since, "since")
        words: list[str] = []
        if query.mode == "full_text":
            words = fulltext.query_words(query.pattern)
        else:
            compile_user_regex(query.pattern)
        limit = max(0, query.limit)
        if limit == 0:
            return GrepHits()
        with self.s._pinned():
            return self._grep(query, words, limit)

    def _grep(self, query: GrepQuery, words: builtins.list[str], limit: int) -> GrepHits:
        budget = ScanBudget(query.time_budget_s)
        hits: list[SearchHit] = []
        if query.mode == "full_text":
            if query.scope in ("messages", "both"):
                hits.extend(self._full_text(query, words, limit, kind="message"))
            if query.scope in ("summaries", "both"):
                hits.extend(self._full_text(query, words, limit, kind="summary"))
        else:
            if query.scope in ("messages", "both"):
                hits.extend(self._regex(query, limit, budget, kind="message"))
            if query.scope in ("summaries", "both"):
                hits.extend(self._regex(query, limit, budget, kind="summary"))
        # Stable sorts, least significant key first: id, then time, then rank.
        hits.sort(key=_numeric_id, reverse=True)
        hits.sort(key=lambda h: h.created_at or "", reverse=True)
        if query.mode == "full_text":
            hits.sort(key=lambda h: h.rank)
        hits = hits[:limit]
        message_ids = [int(h.id) for h in hits if h.kind == "message"]
        covering = self.s.summaries.covering(message_ids) if message_ids else {}
        return GrepHits(
            (_with_cover(h, covering.get(int(h.id))) if h.kind == "message" else h for h in hits),
            complete=budget.stopped_at is None,
            scanned_until=budget.stopped_at,
        )

    def _filters(self, query: GrepQuery, kind: str) -> tuple[str, list[Any]]:
        alias = "m" if kind == "message" else "s"
        sql = ""
        params: list[Any] = []
        if query.conversation_id is not None:
            sql += f" AND {alias}.conversation_id = %s"
            params.append(query.conversation_id)
        if query.session_id is not None:
            sql += " AND c.session_id = %s"
            params.append(query.session_id)
        if query.project is not None:
            sql += " AND c.project = %s"
            params.append(query.project)
        if query.since is not None:
            sql += f" AND {alias}.{'created_at' if kind == 'message' else 'latest_at'} >= %s"
            params.append(query.since)
        return sql, params

    def _full_text(
        self, query: GrepQuery, words: builtins.list[str], limit: int, *, kind: str
    ) -> builtins.list[SearchHit]:
        where, params = self._filters(query, kind)
        if kind == "message":
            alias, table, at = "m", "messages", "created_at"
        else:
            alias, table, at = "s", "summaries", "latest_at"
        either = " || ".join(["search_word(%s)"] * len(words))
        every = " && ".join(["search_word(%s)"] * len(words))
        # Ranked by the any-word query in every pass, so that a row's rank
        # does not depend on the pass that found it. ts_rank is
        # higher-is-better; negated so that, as with FTS5's bm25 rank,
        # ascending order puts the best hit first, and halved for a
        # sub-agent's match as on SQLite.
        ranked = (
            f"SELECT {alias}.id, {alias}.{at} AS at, "
            f"-ts_rank({alias}.search_document, q.q, 1)::float8 * {_SUBAGENT_WEIGHT} AS rank "
            f"FROM {table} {alias} JOIN conversations c ON c.id = {alias}.conversation_id, q "
            "WHERE {gate}" + f"{alias}.search_document @@ q.{{match}}{where} "
            f"ORDER BY rank, {alias}.{at} DESC NULLS LAST, {alias}.id DESC LIMIT %s"
        )
        if len(words) == 1:
            passes = f"r AS ({ranked.format(gate='', match='q')})"
            pass_params = [*params, limit]
        else:
            # As on SQLite (full_text_passes): rows holding every word first,
            # then rows holding any word only if that left the page short (the
            # gate is evaluated once; when it fails, that scan never runs).
            # Ranking is the costly part and one common word matches a large
            # share of the store; all the words together match few rows.
            passes = (
                f"every AS ({ranked.format(gate='', match='every')}), "
                "anyword AS ("
                + ranked.format(gate="(SELECT count(*) FROM every) < %s AND ", match="q")
                + "), r AS (SELECT * FROM every UNION ALL "
                "SELECT * FROM anyword WHERE id NOT IN (SELECT id FROM every))"
            )
            pass_params = [*params, limit, limit, *params, limit]
        columns = (
            "m.id, m.conversation_id, m.seq, m.role"
            if kind == "message"
            else "s.id, s.conversation_id, NULL::bigint AS seq, NULL::text AS role"
        )
        # The content (for snippets) is read for the page only: read beside
        # the rank, it was fetched for every candidate.
        sql = (
            f"WITH q AS MATERIALIZED (SELECT {either} AS q"
            + (f", {every} AS every" if len(words) > 1 else "")
            + f"), {passes} "
            f"SELECT {columns}, r.at, left({alias}.content, {fulltext.INDEXED_CHARS}) AS content, "
            f"c.session_id, c.project, r.rank FROM r JOIN {table} {alias} ON {alias}.id = r.id "
            f"JOIN conversations c ON c.id = {alias}.conversation_id "
            f"ORDER BY r.rank, r.at DESC NULLS LAST, r.id DESC"
        )
        query_params = [*words, *words] if len(words) > 1 else [*words]
        rows = self.s._q(sql, [*query_params, *pass_params])
        return [
            SearchHit(
                kind="message" if kind == "message" else "summary",
                id=str(r["id"]),
                conversation_id=r["conversation_id"],
                role=r["role"],
                created_at=r["at"],
                snippet=_one_line(fulltext.snippet(r["content"], words)),
                rank=float(r["rank"]),
                seq=r["seq"],
                session_id=r["session_id"],
                project=r["project"],
            )
            for r in rows
        ]

    def _regex(
        self, query: GrepQuery, limit: int, budget: ScanBudget, *, kind: str
    ) -> builtins.list[SearchHit]:
        """Newest first, Python's ``re`` deciding; the trigram index narrows the rows."""
        regex = compile_user_regex(query.pattern)
        where, params = self._filters(query, kind)
        # LIKE wildcards in the literal are escaped rather than avoided: the
        # longest literal is the most selective one ('request_id=dead', not
        # 'request'), and pg_trgm reads escaped patterns.
        literal = required_literal(query.pattern, avoid="")
        if kind == "message":
            alias, at, table = "m", "m.created_at", "messages m"
            columns = "m.id, m.conversation_id, m.seq, m.role, m.created_at AS at, m.content"
        else:
            alias, at, table = "s", "s.latest_at", "summaries s"
            columns = (
                "s.id, s.conversation_id, NULL::bigint AS seq, NULL::text AS role, "
                "s.latest_at AS at, s.content"
            )
        prefilter = ""
        pre_params: list[Any] = []
        if literal is not None:
            # ILIKE only for (?i) patterns, whose literals are ASCII: the
            # index may then over-select, never under-select, and ``re``
            # makes the final call either way.
            operator = "ILIKE" if regex.flags & re.IGNORECASE else "LIKE"
            prefilter = f" AND {alias}.content {operator} %s"
            pre_params = [f"%{_like_escape(literal)}%"]
        base = (
            f"SELECT {columns}, c.session_id, c.project FROM {table} "
            f"JOIN conversations c ON c.id = {alias}.conversation_id "
            f"WHERE true{prefilter}{where}"
        )
        # A summary without latest_at sorts last, as in SQLite. A message
        # always has a time, and without NULLS LAST its order is the time
        # index's, read backwards.
        nullable = kind == "summary"
        order = f" ORDER BY {at} DESC{' NULLS LAST' if nullable else ''}, {alias}.id DESC"
        base_params = [*pre_params, *params]
        hits: list[SearchHit] = []

        def scan(rows: builtins.list[Row]) -> bool:
            """Match ``rows``; True once the page is full or the time budget spent."""
            for r in rows:
                if budget.spent(r["at"]):
                    return True
                found = regex.search(r["content"])
                if found is None:
                    continue
                hits.append(
                    SearchHit(
                        kind="message" if kind == "message" else "summary",
                        id=str(r["id"]),
                        conversation_id=r["conversation_id"],
                        role=r["role"],
                        created_at=r["at"],
                        snippet=snippet_around(r["content"], found.start(), found.end()),
                        seq=r["seq"],
                        session_id=r["session_id"],
                        project=r["project"],
                    )
                )
                if len(hits) >= limit:
                    return True
            return False

        # First a few LIMIT queries: the planner sees how few rows are wanted
        # and walks the time index backwards when the literal is common (the
        # usual case: done within the first page), or sorts the index's few
        # candidates when it is rare.
        older: tuple[str, builtins.list[Any]] = ("", [])
        for size in REGEX_PAGES:
            rows = self.s._q(base + older[0] + order + f" LIMIT {size}", [*base_params, *older[1]])
            if scan(rows) or len(rows) < size:
                return hits
            older = _older_than(alias, at, rows[-1], nullable=nullable)
        # Then one query for everything older, read through a server-side
        # cursor: more LIMIT queries would each scan the candidates again.
        with (
            self.s._connection() as conn,
            conn.transaction(),
            conn.cursor(name="lcm_grep_regex") as cursor,
        ):
            cursor.execute(base + older[0] + order, [*base_params, *older[1]])
            while True:
                rows = cursor.fetchmany(REGEX_CURSOR_PAGE)
                if scan(rows) or len(rows) < REGEX_CURSOR_PAGE:
                    return hits


def _older_than(
    alias: str, at: str, last: Row, *, nullable: bool
) -> tuple[str, builtins.list[Any]]:
    """The condition for rows after ``last`` in newest-first order (NULL times last)."""
    if not nullable:
        # A row comparison the (time, id) index can start from.
        return f" AND ({at}, {alias}.id) < (%s, %s)", [last["at"], last["id"]]
    if last["at"] is None:
        return f" AND {at} IS NULL AND {alias}.id < %s", [last["id"]]
    return (
        f" AND ({at} < %s OR {at} IS NULL OR ({at} = %s AND {alias}.id < %s))",
        [last["at"], last["at"], last["id"]],
    )


def _like_escape(text: str) -> str:
    """``text`` as a LIKE pattern matching itself (backslash is LIKE's default escape)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class _Quarantine(_Repo):
    def add(
        self,
        *,
        source_path: str,
        line_no: int,
        byte_offset: int,
        error: str,
        raw: bytes,
        created_at: str | None = None,
    ) -> bool:
        _check_text(source_path, "source path")
        _check_text(created_at, "created_at")
        # The raw bytes are kept exactly (bytea); the error is a diagnostic
        # that may quote the offending line, so a NUL in it is spelled out
        # rather than refusing to quarantine the line at all.
        error = error.replace("\x00", "\\x00")
        with self.s._atomic() as conn:
            cur = conn.execute(
                "INSERT INTO quarantine(source_path, line_no, byte_offset, error, raw, "
                "raw_sha256, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (source_path, line_no, raw_sha256) DO NOTHING",
                [
                    source_path,
                    line_no,
                    byte_offset,
                    error,
                    raw,
                    hashlib.sha256(raw).hexdigest(),
                    created_at or utc_now_iso(),
                ],
            )
            return cur.rowcount > 0

    def list(
        self, *, source_path: str | None = None, limit: int = 100, after_id: int | None = None
    ) -> builtins.list[QuarantinedLine]:
        _check_text(source_path, "source path")
        sql = "SELECT * FROM quarantine WHERE id > %s"
        params: list[Any] = [-1 if after_id is None else after_id]
        if source_path is not None:
            sql += " AND source_path = %s"
            params.append(source_path)
        sql += " ORDER BY id"
        if limit >= 0:
            sql += " LIMIT %s"
            params.append(limit)
        return [
            QuarantinedLine(
                id=r["id"],
                source_path=r["source_path"],
                line_no=r["line_no"],
                byte_offset=r["byte_offset"],
                error=r["error"],
                raw=bytes(r["raw"]),
                created_at=r["created_at"],
            )
            for r in self.s._q(sql, params)
        ]

    def count(self) -> int:
        row = self.s._q1("SELECT count(*) AS n FROM quarantine")
        return int(row["n"]) if row else 0

    def rewrite(self, line_id: int, raw: bytes) -> None:
        digest = hashlib.sha256(raw).hexdigest()
        with self.s._atomic() as conn:
            row = conn.execute(
                "SELECT source_path, line_no FROM quarantine WHERE id = %s FOR UPDATE", [line_id]
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no quarantined line {line_id}")
            twin = conn.execute(
                "SELECT id FROM quarantine WHERE source_path = %s AND line_no = %s "
                "AND raw_sha256 = %s AND id <> %s",
                [row["source_path"], row["line_no"], digest, line_id],
            ).fetchone()
            if twin is not None:
                conn.execute("DELETE FROM quarantine WHERE id = %s", [line_id])
                return
            conn.execute(
                "UPDATE quarantine SET raw = %s, raw_sha256 = %s WHERE id = %s",
                [raw, digest, line_id],
            )


class _Cursors(_Repo):
    def get(self, source_path: str) -> SourceCursor | None:
        _check_text(source_path, "source path")
        r = self.s._q1("SELECT * FROM source_cursors WHERE source_path = %s", [source_path])
        if r is None:
            return None
        return SourceCursor(
            source_path=r["source_path"],
            conversation_id=r["conversation_id"],
            byte_offset=r["byte_offset"],
            line_no=r["line_no"],
            anchor_key=r["anchor_key"],
            anchor_sha256=r["anchor_sha256"],
            updated_at=r["updated_at"],
        )

    def put(self, cursor: SourceCursor) -> None:
        for value, what in (
            (cursor.source_path, "source path"),
            (cursor.anchor_key, "anchor key"),
            (cursor.anchor_sha256, "anchor sha256"),
            (cursor.updated_at, "updated_at"),
        ):
            _check_text(value, what)
        with self.s._atomic() as conn:
            conn.execute(
                "INSERT INTO source_cursors(source_path, conversation_id, byte_offset, line_no, "
                "anchor_key, anchor_sha256, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (source_path) DO UPDATE SET "
                "conversation_id = excluded.conversation_id, "
                "byte_offset = excluded.byte_offset, line_no = excluded.line_no, "
                "anchor_key = excluded.anchor_key, anchor_sha256 = excluded.anchor_sha256, "
                "updated_at = excluded.updated_at",
                [
                    cursor.source_path,
                    cursor.conversation_id,
                    cursor.byte_offset,
                    cursor.line_no,
                    cursor.anchor_key,
                    cursor.anchor_sha256,
                    cursor.updated_at,
                ],
            )


class _Leases(_Repo):
    """Per-conversation leases, judged by the database clock, fenced by a sequence."""

    def acquire(self, conversation_id: int, owner: str, ttl_s: float) -> Lease | None:
        _check_text(owner, "lease owner")
        with self.s._atomic() as conn:
            # Make sure the row exists, then lock it: every contender for
            # this conversation queues on the same row lock.
            conn.execute(
                "INSERT INTO leases(conversation_id, owner, fence, expires_at) "
                "VALUES (%s, NULL, 0, '-infinity') ON CONFLICT (conversation_id) DO NOTHING",
                [conversation_id],
            )
            row = conn.execute(
                "SELECT owner, fence, expires_at > clock_timestamp() AS live FROM leases "
                "WHERE conversation_id = %s FOR UPDATE",
                [conversation_id],
            ).fetchone()
            assert row is not None
            if row["owner"] == owner and row["live"]:
                fence_sql = "fence"
            elif row["owner"] is None or not row["live"]:
                fence_sql = "nextval('lease_fences')"
            else:
                return None
            updated = conn.execute(
                f"UPDATE leases SET owner = %s, fence = {fence_sql}, "
                "expires_at = clock_timestamp() + make_interval(secs => %s) "
                "WHERE conversation_id = %s "
                "RETURNING fence, extract(epoch FROM expires_at)::float8 AS expires",
                [owner, ttl_s, conversation_id],
            ).fetchone()
            assert updated is not None
        return Lease(conversation_id, owner, int(updated["fence"]), float(updated["expires"]))

    def renew(self, lease: Lease, ttl_s: float) -> Lease:
        with self.s._atomic() as conn:
            self._check(conn, lease)
            row = conn.execute(
                "UPDATE leases SET expires_at = clock_timestamp() + make_interval(secs => %s) "
                "WHERE conversation_id = %s "
                "RETURNING extract(epoch FROM expires_at)::float8 AS expires",
                [ttl_s, lease.conversation_id],
            ).fetchone()
            assert row is not None
        return Lease(lease.conversation_id, lease.owner, lease.fence, float(row["expires"]))

    def release(self, lease: Lease) -> None:
        with self.s._atomic() as conn:
            conn.execute(
                "UPDATE leases SET owner = NULL, expires_at = '-infinity' "
                "WHERE conversation_id = %s AND owner = %s AND fence = %s",
                [lease.conversation_id, lease.owner, lease.fence],
            )

    def check(self, lease: Lease) -> None:
        # Inside a transaction the row lock is held until commit, so no one
        # can take the lease over between this check and the fenced writes.
        with self.s._atomic() as conn:
            self._check(conn, lease)

    def _check(self, conn: Conn, lease: Lease) -> None:
        row = conn.execute(
            "SELECT owner, fence, expires_at > clock_timestamp() AS live FROM leases "
            "WHERE conversation_id = %s FOR UPDATE",
            [lease.conversation_id],
        ).fetchone()
        if (
            row is None
            or row["owner"] != lease.owner
            or row["fence"] != lease.fence
            or not row["live"]
        ):
            raise LeaseLostError(
                f"lease on conversation {lease.conversation_id} (fence {lease.fence}) "
                "is no longer held by this worker"
            )


def _conforms(store: PostgresStore) -> Store:
    """Never called: makes mypy prove that ``PostgresStore`` satisfies the contract."""
    return store
