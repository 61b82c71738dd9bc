"""SQLite backend: the default store, one database file per ``LCM_HOME``.

The only module (with its migrations) that speaks SQL to SQLite. One
connection per ``SQLiteStore``; writes take the database's write lock up front
(``BEGIN IMMEDIATE``) so concurrent processes queue on ``busy_timeout`` instead
of failing half-way. WAL lets readers proceed while a writer works.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import re
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from lossless.errors import (
    InputError,
    LeaseLostError,
    MigrationError,
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
    Memory,
    MemoryHit,
    MemoryWrite,
    NewMemory,
    PartRewrite,
    StoreStats,
    memory_text_hash,
)
from lossless.store.migrations import (
    AppliedMigration,
    load_migrations,
    pending_migrations,
    split_statements,
)
from lossless.store.regex import (
    GLOB_SPECIAL,
    ScanBudget,
    compile_user_regex,
    is_case_insensitive,
    required_literal,
    snippet_around,
)
from lossless.store.sqlite.map_jobs import MapJobs
from lossless.store.stopwords import content_words
from lossless.timeutil import utc_now_iso
from lossless.tokens import estimate_tokens

BUSY_TIMEOUT_MS = 30_000


def _loads(text: str | None) -> JSON | None:
    return None if text is None else json.loads(text)


_check_text = rows.check_text
_dumps = rows.dumps_json
_large_file = rows.large_file
_one_line = rows.one_line
_numeric_id = rows.numeric_id
_with_cover = rows.with_cover


# A native record is a transcript line kept verbatim for provenance and export,
# never searched. A long one is stored zlib-compressed (a BLOB in its TEXT
# column; short rows, and rows written before, are text and read as they
# are). Native records were the largest table: a real transcript line repeats
# its tool output in several fields. Lines of 4,096+ characters hold half of
# the real transcripts' raw bytes; compressing them saves 37% of all raw bytes
# for ~0.07 s of CPU per 11 MB, where every line would cost 8x that (zlib's
# set-up per call dominates on short lines) to save 57%.
_PACK_MIN_CHARS = 4096


def _pack_raw(raw: str) -> str | bytes:
    if len(raw) < _PACK_MIN_CHARS:
        return raw
    return zlib.compress(raw.encode("utf-8"), 1)


def _unpack_raw(value: str | bytes) -> str:
    return value if isinstance(value, str) else zlib.decompress(value).decode("utf-8")


def _conversation(row: Any) -> Conversation:
    return rows.conversation(row, _loads)


def _message(row: Any) -> Message:
    return rows.message(row, _loads)


def _summary(row: Any) -> Summary:
    return rows.summary(row, _loads)


# bm25 ranks are negative, best lowest: halving a sub-agent's rank puts its
# match below an equal one from the session that started it, while a much
# better sub-agent match still comes first (most transcripts in a real
# history are sub-agents', which would otherwise crowd out the sessions).
_SUBAGENT_WEIGHT = "(CASE WHEN c.parent_id IS NULL THEN 1.0 ELSE 0.5 END)"

_RANKED_MESSAGES = (
    "SELECT m.id, m.conversation_id, m.seq, m.role, m.created_at, c.session_id, "
    "c.project, snippet(messages_fts, 0, '[', ']', ' … ', 16) AS snip, "
    f"messages_fts.rank * {_SUBAGENT_WEIGHT} AS rank"
)
# A regex literal found in at most this many messages fetches them by id.
_RARE_LITERAL_ROWS = 2_000
# Index rows ranked per page row before falling back to ranking them all.
_RANKED_OVERFETCH = 4
# Candidates are passed back as SQL parameters: stay far below SQLite's limit.
_RANKED_MAX_CANDIDATES = 4_000

_FTS_SYNTAX = re.compile(r'["*()^:]|\b(AND|OR|NOT|NEAR)\b')
_WORD = re.compile(r"\w+", re.UNICODE)


def full_text_query(pattern: str) -> str:
    """Turn a user's words into an FTS5 query: every word quoted, OR-ed, ranked by bm25.

    OR rather than AND because a question rarely shares every word with its
    answer; bm25 still ranks messages holding more of the words first. Stop
    words are left out when the query has other words (see ``stopwords``).
    """
    words = _WORD.findall(pattern)
    if not words:
        raise InputError(f"full-text pattern {pattern!r} has no searchable words")
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(content_words(words)))


def full_text_passes(pattern: str) -> builtins.list[str]:
    """The FTS5 queries grep runs in turn: every word (AND), then any word (OR).

    The AND pass is cheap (few rows to rank) and finds the best matches; the
    OR pass runs only when it left the page short. Ranking every message
    that shares one common word with the query is what makes OR slow.
    """
    either = full_text_query(pattern)
    words = either.split(" OR ")
    return [either] if len(words) == 1 else [" AND ".join(words), either]


class SQLiteStore:
    """The SQLite implementation of ``lossless.store.contract.Store``."""

    backend = "sqlite"
    capabilities = Capabilities(
        full_text=True, regex=True, substring_index=True, distributed_coordination=False
    )

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._in_tx = False
        self._closed = False
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not self.path.exists():
                # Created 0600 before SQLite touches it; the WAL and SHM files
                # inherit the database file's permissions.
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            elif self.path.stat().st_mode & 0o077:
                os.chmod(self.path, 0o600)
        try:
            self._db = sqlite3.connect(
                str(self.path), isolation_level=None, check_same_thread=False, timeout=30
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {self.path}: {exc}") from exc
        self._db.row_factory = sqlite3.Row
        try:
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise StoreError(f"cannot use SQLite database {self.path}: {exc}") from exc
        except BaseException:
            self._db.close()
            raise

    # -- lifecycle -------------------------------------------------------

    def _migrate(self) -> None:
        db = self._db
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, "
            "applied_at TEXT NOT NULL)"
        )
        available = load_migrations("lossless.store.sqlite")
        db.execute("BEGIN IMMEDIATE")
        try:
            applied = [
                AppliedMigration(r["version"], r["name"], r["checksum"])
                for r in db.execute("SELECT version, name, checksum FROM schema_migrations")
            ]
            for migration in pending_migrations(available, applied, where=str(self.path)):
                for statement in split_statements(migration.sql):
                    db.execute(statement)
                db.execute(
                    "INSERT INTO schema_migrations(version, name, checksum, applied_at) "
                    "VALUES (?, ?, ?, ?)",
                    (migration.version, migration.name, migration.checksum, utc_now_iso()),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def migrations(self) -> builtins.list[AppliedMigration]:
        rows = self._q("SELECT version, name, checksum FROM schema_migrations ORDER BY version")
        return [AppliedMigration(r["version"], r["name"], r["checksum"]) for r in rows]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
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
            self._db.execute("BEGIN IMMEDIATE")
            self._in_tx = True
            try:
                yield self
            except BaseException:
                self._in_tx = False
                self._db.execute("ROLLBACK")
                raise
            self._in_tx = False
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._db.execute("ROLLBACK")
                raise StoreError(f"commit failed on {self.path}: {exc}") from exc

    @contextmanager
    def _atomic(self) -> Iterator[None]:
        """Make one repository call atomic, joining the open transaction if any."""
        with self._lock:
            self._check_open()
            if self._in_tx:
                yield
                return
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

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
    def memory(self) -> _Memories:
        return _Memories(self)

    @property
    def map_jobs(self) -> MapJobs:
        return MapJobs(self)

    @property
    def coordination(self) -> None:
        """None: one machine uses a SQLite file, so there is no job queue to share
        (the worker scans conversation metadata) and nothing to capture offline."""
        return None

    # -- stats -------------------------------------------------------------

    def stats(self) -> StoreStats:
        def count(table: str) -> int:
            row = self._q1(f"SELECT count(*) AS n FROM {table}")
            return int(row["n"]) if row else 0

        tokens = self._q1("SELECT coalesce(sum(token_count), 0) AS n FROM messages")
        summary_tokens = self._q1("SELECT coalesce(sum(token_count), 0) AS n FROM summaries")
        by_client = {
            r["client"]: r["n"]
            for r in self._q("SELECT client, count(*) AS n FROM conversations GROUP BY client")
        }
        return StoreStats(
            conversations=count("conversations"),
            messages=count("messages"),
            parts=count("message_parts"),
            native_records=count("native_records"),
            summaries=count("summaries"),
            context_items=count("context_items"),
            large_files=count("large_files"),
            quarantined=count("quarantine"),
            message_tokens=int(tokens["n"]) if tokens else 0,
            summary_tokens=int(summary_tokens["n"]) if summary_tokens else 0,
            by_client=by_client,
        )

    def integrity_check(self) -> builtins.list[str]:
        """SQLite's page-level check plus FTS5's check of every full-text index."""
        problems = [
            str(r[0]) for r in self._q("PRAGMA integrity_check") if str(r[0]).lower() != "ok"
        ]
        for table in (
            "messages_fts",
            "messages_trigram",
            "summaries_fts",
            "summaries_trigram",
            "memories_fts",
        ):
            try:
                with self._lock:
                    self._check_open()
                    self._db.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            except sqlite3.DatabaseError as exc:
                problems.append(f"full-text index {table}: {exc}")
        return problems

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
                "summaries_trigram",
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


class _Repo:
    def __init__(self, store: SQLiteStore) -> None:
        self.s = store
        self.db = store._db


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
        for value, what in ((project, "project"), (session_id, "session id"), (title, "title")):
            _check_text(value, what)
        with self.s._atomic():
            row = self.s._q1(
                "SELECT * FROM conversations WHERE project = ? AND client = ? AND session_id = ?",
                (project, client, session_id),
            )
            if row is None:
                cur = self.db.execute(
                    "INSERT INTO conversations(project, session_id, client, title, parent_id, "
                    "metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        project,
                        session_id,
                        client,
                        title,
                        parent_id,
                        _dumps(metadata or {}),
                        created_at or utc_now_iso(),
                    ),
                )
                row = self.s._q1("SELECT * FROM conversations WHERE id = ?", (cur.lastrowid,))
            assert row is not None
            return _conversation(row)

    def get(self, conversation_id: int) -> Conversation | None:
        row = self.s._q1("SELECT * FROM conversations WHERE id = ?", (conversation_id,))
        return None if row is None else _conversation(row)

    def find_by_session(
        self, session_id: str, *, project: str | None = None
    ) -> Conversation | None:
        sql = "SELECT * FROM conversations WHERE session_id = ?"
        params: list[Any] = [session_id]
        if project is not None:
            sql += " AND project = ?"
            params.append(project)
        row = self.s._q1(sql + " ORDER BY created_at DESC, id DESC LIMIT 1", params)
        return None if row is None else _conversation(row)

    def list(
        self, *, project: str | None = None, client: str | None = None, limit: int | None = None
    ) -> builtins.list[Conversation]:
        sql = "SELECT * FROM conversations WHERE 1=1"
        params: list[Any] = []
        if project is not None:
            sql += " AND project = ?"
            params.append(project)
        if client is not None:
            sql += " AND client = ?"
            params.append(client)
        sql += " ORDER BY created_at, id"
        if limit is not None and limit >= 0:
            sql += " LIMIT ?"
            params.append(limit)
        return [_conversation(r) for r in self.s._q(sql, params)]

    def update_metadata(self, conversation_id: int, metadata: JSON) -> None:
        with self.s._atomic():
            row = self.s._q1("SELECT metadata FROM conversations WHERE id = ?", (conversation_id,))
            if row is None:
                raise StoreError(f"conversation {conversation_id} does not exist")
            merged = {**json.loads(row["metadata"]), **metadata}
            self.db.execute(
                "UPDATE conversations SET metadata = ? WHERE id = ?",
                (_dumps(merged), conversation_id),
            )

    def rewrite(self, conversation_id: int, *, title: str | None, metadata: JSON) -> None:
        _check_text(title, "title")
        meta = _dumps(metadata or {})
        with self.s._atomic():
            cur = self.db.execute(
                "UPDATE conversations SET title = ?, metadata = ? WHERE id = ?",
                (title, meta, conversation_id),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no conversation {conversation_id}")


class _Messages(_Repo):
    def append(self, conversation_id: int, messages: Sequence[NewMessage]) -> AppendResult:
        for m in messages:
            _check_text(m.content, "message content")
            _check_text(m.ingest_key, "ingest key")
            for p in m.parts:
                _check_text(p.text, "message part text")
                _check_text(p.tool_name, "tool name")
                _check_text(p.tool_call_id, "tool call id")
            for r in m.native_records:
                _check_text(r.raw, "native record")
        inserted: list[Message] = []
        skipped = 0
        now = utc_now_iso()
        with self.s._atomic():
            row = self.s._q1(
                "SELECT coalesce(max(seq), -1) + 1 AS next FROM messages WHERE conversation_id = ?",
                (conversation_id,),
            )
            next_seq = int(row["next"]) if row else 0
            for m in messages:
                token_count = (
                    m.token_count if m.token_count is not None else estimate_tokens(m.content)
                )
                created_at = m.created_at or now
                # The (conversation, ingest_key) unique index makes a repeat a no-op.
                cur = self.db.execute(
                    "INSERT INTO messages(conversation_id, seq, role, content, token_count, "
                    "created_at, ingest_key, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (conversation_id, ingest_key) DO NOTHING",
                    (
                        conversation_id,
                        next_seq,
                        m.role,
                        m.content,
                        token_count,
                        created_at,
                        m.ingest_key,
                        _dumps(m.metadata),
                    ),
                )
                if cur.rowcount == 0:
                    skipped += 1
                    continue
                message_id = int(cur.lastrowid or 0)
                if m.parts:
                    self.db.executemany(
                        "INSERT INTO message_parts(message_id, ordinal, kind, text, tool_name, "
                        "tool_call_id, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [
                            (
                                message_id,
                                i,
                                p.kind,
                                p.text,
                                p.tool_name,
                                p.tool_call_id,
                                _dumps(p.metadata),
                            )
                            for i, p in enumerate(m.parts)
                        ],
                    )
                if m.native_records:
                    self._insert_records(conversation_id, message_id, m.native_records)
                inserted.append(
                    Message(
                        id=message_id,
                        conversation_id=conversation_id,
                        seq=next_seq,
                        role=m.role,
                        content=m.content,
                        token_count=token_count,
                        created_at=created_at,
                        ingest_key=m.ingest_key,
                        metadata=m.metadata,
                    )
                )
                next_seq += 1
            if inserted:
                self._index(inserted[0].id, inserted[-1].id)
        return AppendResult(inserted=inserted, skipped=skipped)

    def _index(self, first_id: int, last_id: int) -> None:
        """Add messages first_id..last_id to the word index in one pass.

        The trigram index follows later (``search.catch_up``): see migration 0005.
        """
        self.db.execute(
            "INSERT INTO messages_fts(rowid, content) "
            "SELECT id, content FROM messages WHERE id BETWEEN ? AND ?",
            (first_id, last_id),
        )

    def _insert_records(
        self, conversation_id: int, message_id: int | None, records: Sequence[NewNativeRecord]
    ) -> int:
        before = self.db.total_changes
        self.db.executemany(
            "INSERT OR IGNORE INTO native_records(conversation_id, message_id, native_key, "
            "record_type, raw, source_path, line_no, byte_offset) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    conversation_id,
                    message_id,
                    r.native_key,
                    r.record_type,
                    _pack_raw(r.raw),
                    r.source_path,
                    r.line_no,
                    r.byte_offset,
                )
                for r in records
            ],
        )
        return self.db.total_changes - before

    def add_native_records(self, conversation_id: int, records: Sequence[NewNativeRecord]) -> int:
        for r in records:
            _check_text(r.raw, "native record")
        with self.s._atomic():
            return self._insert_records(conversation_id, None, records)

    def get(self, message_id: int) -> Message | None:
        row = self.s._q1("SELECT * FROM messages WHERE id = ?", (message_id,))
        return None if row is None else _message(row)

    def get_many(self, message_ids: Sequence[int]) -> builtins.list[Message]:
        out: list[Message] = []
        ids = list(dict.fromkeys(message_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            out.extend(
                _message(r)
                for r in self.s._q(f"SELECT * FROM messages WHERE id IN ({marks})", chunk)
            )
        out.sort(key=lambda m: (m.conversation_id, m.seq))
        return out

    def list(
        self, conversation_id: int, *, after_seq: int | None = None, limit: int | None = None
    ) -> builtins.list[Message]:
        if limit == 0:
            return []
        sql = "SELECT * FROM messages WHERE conversation_id = ? AND seq > ? ORDER BY seq"
        params: list[Any] = [conversation_id, -1 if after_seq is None else after_seq]
        if limit is not None and limit > 0:
            sql += " LIMIT ?"
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
        ids = builtins.list(result)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for r in self.s._q(
                f"SELECT * FROM message_parts WHERE message_id IN ({marks}) "
                "ORDER BY message_id, ordinal",
                chunk,
            ):
                result[r["message_id"]].append(
                    Part(
                        message_id=r["message_id"],
                        ordinal=r["ordinal"],
                        kind=r["kind"],
                        text=r["text"],
                        tool_name=r["tool_name"],
                        tool_call_id=r["tool_call_id"],
                        metadata=_loads(r["metadata"]),
                    )
                )
        return result

    def native_records(
        self, conversation_id: int, *, message_id: int | None = None
    ) -> builtins.list[NativeRecord]:
        sql = "SELECT * FROM native_records WHERE conversation_id = ?"
        params: list[Any] = [conversation_id]
        if message_id is not None:
            sql += " AND message_id = ?"
            params.append(message_id)
        return [
            NativeRecord(
                id=r["id"],
                conversation_id=r["conversation_id"],
                message_id=r["message_id"],
                native_key=r["native_key"],
                record_type=r["record_type"],
                raw=_unpack_raw(r["raw"]),
                source_path=r["source_path"],
                line_no=r["line_no"],
                byte_offset=r["byte_offset"],
            )
            for r in self.s._q(sql + " ORDER BY id", params)
        ]

    def has_native_keys(self, conversation_id: int, keys: Sequence[str]) -> set[str]:
        found: set[str] = set()
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                r["native_key"]
                for r in self.s._q(
                    f"SELECT native_key FROM native_records WHERE conversation_id = ? "
                    f"AND native_key IN ({marks})",
                    [conversation_id, *chunk],
                )
            )
        return found

    def count(self, conversation_id: int | None = None) -> int:
        if conversation_id is None:
            row = self.s._q1("SELECT count(*) AS n FROM messages")
        else:
            row = self.s._q1(
                "SELECT count(*) AS n FROM messages WHERE conversation_id = ?", (conversation_id,)
            )
        return int(row["n"]) if row else 0

    def last(self, conversation_id: int) -> Message | None:
        row = self.s._q1(
            "SELECT * FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1",
            (conversation_id,),
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
        with self.s._atomic():
            cur = self.db.execute(
                "UPDATE messages SET content = ?, metadata = ? WHERE id = ?",
                (content, meta, message_id),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no message {message_id}")
            for row in part_rows:
                cur = self.db.execute(
                    "UPDATE message_parts SET text = ?, metadata = ? "
                    "WHERE message_id = ? AND ordinal = ?",
                    row,
                )
                if cur.rowcount == 0:
                    raise NotFoundError(f"message {message_id} has no part {row[3]}")

    def rewrite_native_record(self, record_id: int, raw: str) -> None:
        _check_text(raw, "native record")
        with self.s._atomic():
            cur = self.db.execute(
                "UPDATE native_records SET raw = ? WHERE id = ?", (_pack_raw(raw), record_id)
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no native record {record_id}")


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

    def get(self, summary_id: str) -> Summary | None:
        row = self.s._q1("SELECT * FROM summaries WHERE id = ?", (summary_id,))
        return None if row is None else _summary(row)

    def rewrite(self, summary_id: str, content: str) -> None:
        _check_text(content, "summary content")
        with self.s._atomic():
            cur = self.db.execute(
                "UPDATE summaries SET content = ? WHERE id = ?", (content, summary_id)
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
        _check_text(summary.content, "summary content")
        with self.s._atomic():
            if self.s._q1("SELECT 1 FROM summaries WHERE id = ?", (summary.id,)):
                return False
            self.db.execute(
                "INSERT INTO summaries(id, conversation_id, kind, depth, content, token_count, "
                "earliest_at, latest_at, descendant_count, source_token_count, file_ids, "
                "metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
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
                    _dumps(summary.metadata),
                    summary.created_at,
                ),
            )
            self.db.executemany(
                "INSERT INTO summary_messages(summary_id, ordinal, message_id) VALUES (?, ?, ?)",
                [(summary.id, i, mid) for i, mid in enumerate(message_ids)],
            )
            self.db.executemany(
                "INSERT INTO summary_parents(summary_id, ordinal, parent_id) VALUES (?, ?, ?)",
                [(summary.id, i, sid) for i, sid in enumerate(source_summary_ids)],
            )
        return True

    def list(self, conversation_id: int, *, depth: int | None = None) -> builtins.list[Summary]:
        sql = (
            "SELECT s.* FROM summaries s JOIN summary_rowids r ON r.summary_id = s.id "
            "WHERE s.conversation_id = ?"
        )
        params: list[Any] = [conversation_id]
        if depth is not None:
            sql += " AND s.depth = ?"
            params.append(depth)
        return [_summary(r) for r in self.s._q(sql + " ORDER BY r.rowid", params)]

    def source_message_ids(self, summary_id: str) -> builtins.list[int]:
        rows = self.s._q(
            "SELECT message_id FROM summary_messages WHERE summary_id = ? ORDER BY ordinal",
            (summary_id,),
        )
        return [int(r["message_id"]) for r in rows]

    def source_summary_ids(self, summary_id: str) -> builtins.list[str]:
        rows = self.s._q(
            "SELECT parent_id FROM summary_parents WHERE summary_id = ? ORDER BY ordinal",
            (summary_id,),
        )
        return [str(r["parent_id"]) for r in rows]

    def covering(self, message_ids: Sequence[int]) -> dict[int, str]:
        found: dict[int, str] = {}
        ids = list(dict.fromkeys(message_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for r in self.s._q(
                f"SELECT message_id, summary_id FROM summary_messages WHERE message_id IN ({marks})",
                chunk,
            ):
                found.setdefault(int(r["message_id"]), str(r["summary_id"]))
        return found

    def condensed_into(self, summary_id: str) -> str | None:
        row = self.s._q1(
            "SELECT summary_id FROM summary_parents WHERE parent_id = ? LIMIT 1", (summary_id,)
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
                "SELECT * FROM context_items WHERE conversation_id = ? ORDER BY ordinal",
                (conversation_id,),
            )
        ]

    def append_messages(self, conversation_id: int, messages: Sequence[Message]) -> None:
        if not messages:
            return
        with self.s._atomic():
            row = self.s._q1(
                "SELECT coalesce(max(ordinal), -1) + 1 AS next FROM context_items "
                "WHERE conversation_id = ?",
                (conversation_id,),
            )
            start = int(row["next"]) if row else 0
            self.db.executemany(
                "INSERT INTO context_items(conversation_id, ordinal, item_type, message_id, "
                "token_count) VALUES (?, ?, 'message', ?, ?)",
                [(conversation_id, start + i, m.id, m.token_count) for i, m in enumerate(messages)],
            )

    def replace_range(
        self, conversation_id: int, first_ordinal: int, last_ordinal: int, summary: Summary
    ) -> None:
        if last_ordinal < first_ordinal:
            raise StoreError(f"empty context range {first_ordinal}..{last_ordinal}")
        with self.s._atomic():
            rows = self.s._q(
                "SELECT ordinal FROM context_items WHERE conversation_id = ? "
                "AND ordinal BETWEEN ? AND ?",
                (conversation_id, first_ordinal, last_ordinal),
            )
            if not rows or rows[0]["ordinal"] != first_ordinal:
                raise StoreError(
                    f"context items {first_ordinal}..{last_ordinal} of conversation "
                    f"{conversation_id} do not exist (was it compacted concurrently?)"
                )
            self.db.execute(
                "DELETE FROM context_items WHERE conversation_id = ? AND ordinal BETWEEN ? AND ?",
                (conversation_id, first_ordinal, last_ordinal),
            )
            # Ordinals only need to be ordered, not dense: the summary takes
            # the first slot and the gap left behind is harmless.
            self.db.execute(
                "INSERT INTO context_items(conversation_id, ordinal, item_type, summary_id, "
                "token_count) VALUES (?, ?, 'summary', ?, ?)",
                (conversation_id, first_ordinal, summary.id, summary.token_count),
            )

    def token_total(self, conversation_id: int) -> int:
        row = self.s._q1(
            "SELECT coalesce(sum(token_count), 0) AS n FROM context_items WHERE conversation_id = ?",
            (conversation_id,),
        )
        return int(row["n"]) if row else 0

    def restore(self, conversation_id: int, items: Sequence[ContextItem]) -> None:
        with self.s._atomic():
            self.db.execute(
                "DELETE FROM context_items WHERE conversation_id = ?", (conversation_id,)
            )
            self.db.executemany(
                "INSERT INTO context_items(conversation_id, ordinal, item_type, message_id, "
                "summary_id, token_count) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        conversation_id,
                        i.ordinal,
                        i.item_type,
                        i.message_id,
                        i.summary_id,
                        i.token_count,
                    )
                    for i in items
                ],
            )


class _Files(_Repo):
    def create(self, large_file: NewLargeFile) -> LargeFile:
        stored = rows.new_large_file(large_file)
        if not self.restore(stored):
            raise StoreError(f"large file id {stored.id} already exists")
        return stored

    def get(self, file_id: str) -> LargeFile | None:
        row = self.s._q1("SELECT * FROM large_files WHERE id = ?", (file_id,))
        return None if row is None else _large_file(row)

    def list(self, conversation_id: int) -> builtins.list[LargeFile]:
        rows = self.s._q(
            "SELECT * FROM large_files WHERE conversation_id = ? ORDER BY created_at, id",
            (conversation_id,),
        )
        return [_large_file(r) for r in rows]

    def restore(self, large_file: LargeFile) -> bool:
        f = large_file
        for value, what in ((f.path, "path"), (f.exploration_summary, "exploration summary")):
            _check_text(value, what)
        with self.s._atomic():
            cur = self.db.execute(
                "INSERT OR IGNORE INTO large_files(id, conversation_id, message_id, path, "
                "byte_size, token_count, sha256, media_type, exploration_summary, "
                "original_name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
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
                ),
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
        for value, what in ((path, "path"), (exploration_summary, "exploration summary")):
            _check_text(value, what)
        with self.s._atomic():
            cur = self.db.execute(
                "UPDATE large_files SET path = ?, sha256 = ?, byte_size = ?, token_count = ?, "
                "exploration_summary = ? WHERE id = ?",
                (path, sha256, byte_size, token_count, exploration_summary, file_id),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no large file {file_id!r}")
            got = self.get(file_id)
        assert got is not None
        return got

    def paths_in_use(self, paths: Sequence[str]) -> set[str]:
        found: set[str] = set()
        unique = builtins.list(dict.fromkeys(paths))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                str(r["path"])
                for r in self.s._q(
                    f"SELECT DISTINCT path FROM large_files WHERE path IN ({marks})", chunk
                )
            )
        return found


class _Search(_Repo):
    def index_backlog(self) -> int:
        # Ids are handed out in order and messages are never deleted, so the
        # backlog is a difference of two lookups; count(*) would read every
        # page of the table (a second at a million rows, in every hook).
        row = self.s._q1(
            "SELECT coalesce((SELECT max(id) FROM messages), 0) "
            "- (SELECT indexed_upto FROM trigram_progress) AS n"
        )
        return max(0, int(row["n"])) if row else 0

    def catch_up(self, max_rows: int) -> int:
        if max_rows <= 0:
            return 0
        with self.s._atomic():
            row = self.s._q1(
                "SELECT max(id) AS last, count(*) AS n FROM (SELECT id FROM messages "
                "WHERE id > (SELECT indexed_upto FROM trigram_progress) ORDER BY id LIMIT ?)",
                (max_rows,),
            )
            if row is None or row["last"] is None:
                return 0
            self.db.execute(
                "INSERT INTO messages_trigram(rowid, content) SELECT id, content FROM messages "
                "WHERE id > (SELECT indexed_upto FROM trigram_progress) AND id <= ?",
                (row["last"],),
            )
            self.db.execute("UPDATE trigram_progress SET indexed_upto = ?", (row["last"],))
            return int(row["n"])

    def grep(self, query: GrepQuery) -> GrepHits:
        if not query.pattern:
            raise InputError("grep pattern is empty")
        _check_text(query.pattern, "grep pattern")
        limit = max(0, query.limit)
        if limit == 0:
            return GrepHits()
        budget = ScanBudget(query.time_budget_s)
        hits: list[SearchHit] = []
        if query.scope in ("messages", "both"):
            hits.extend(self._messages(query, limit, budget))
        if query.scope in ("summaries", "both"):
            hits.extend(self._summaries(query, limit, budget))
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

    def _filters(self, query: GrepQuery, alias: str) -> tuple[str, list[Any]]:
        sql = ""
        params: list[Any] = []
        if query.conversation_id is not None:
            sql += f" AND {alias}.conversation_id = ?"
            params.append(query.conversation_id)
        if query.session_id is not None:
            sql += " AND c.session_id = ?"
            params.append(query.session_id)
        if query.project is not None:
            sql += " AND c.project = ?"
            params.append(query.project)
        if query.since is not None:
            sql += f" AND {alias}.{'created_at' if alias == 'm' else 'latest_at'} >= ?"
            params.append(query.since)
        return sql, params

    def _messages(
        self, query: GrepQuery, limit: int, budget: ScanBudget
    ) -> builtins.list[SearchHit]:
        where, params = self._filters(query, "m")
        if query.mode == "full_text":
            rows: dict[int, Any] = {}
            for match in full_text_passes(query.pattern):
                # With filters (a project, a session) the best rows may all be
                # filtered out, and a failed attempt would cost a second ranking.
                page: builtins.list[Any] | None = (
                    None if where else self._ranked_from_best(match, limit)
                )
                if page is None:
                    page = self.s._q(
                        f"{_RANKED_MESSAGES} FROM messages_fts "
                        "JOIN messages m ON m.id = messages_fts.rowid "
                        "JOIN conversations c ON c.id = m.conversation_id "
                        f"WHERE messages_fts MATCH ?{where} "
                        "ORDER BY rank, m.created_at DESC, m.id DESC LIMIT ?",
                        [match, *params, limit],
                    )
                for r in page:
                    rows.setdefault(r["id"], r)
                if len(rows) >= limit:
                    break
            return [
                SearchHit(
                    kind="message",
                    id=str(r["id"]),
                    conversation_id=r["conversation_id"],
                    role=r["role"],
                    created_at=r["created_at"],
                    snippet=_one_line(r["snip"]),
                    rank=float(r["rank"]),
                    seq=r["seq"],
                    session_id=r["session_id"],
                    project=r["project"],
                )
                for r in rows.values()
            ]
        regex = compile_user_regex(query.pattern)
        # GLOB keeps the whole literal ('_' and '%' are plain there) and is
        # case-sensitive like the regex; a (?i) regex needs LIKE instead.
        if is_case_insensitive(query.pattern):
            literal, operator, wrap = required_literal(query.pattern), "LIKE", "%"
        else:
            literal, operator, wrap = (
                required_literal(query.pattern, avoid=GLOB_SPECIAL),
                "GLOB",
                "*",
            )
        prefilter = ""
        pre_params: list[Any] = []
        if literal is not None:
            prefilter, pre_params = self._literal_prefilter(f"{wrap}{literal}{wrap}", operator)
        sql = (
            "SELECT m.id, m.conversation_id, m.seq, m.role, m.created_at, m.content, "
            "c.session_id, c.project FROM messages m "
            "JOIN conversations c ON c.id = m.conversation_id "
            f"WHERE 1=1{prefilter}{where} ORDER BY m.created_at DESC, m.id DESC"
        )
        hits: list[SearchHit] = []
        with self.s._lock:
            self.s._check_open()
            for r in self.db.execute(sql, [*pre_params, *params]):
                if budget.spent(r["created_at"]):
                    break
                found = regex.search(r["content"])
                if found is None:
                    continue
                hits.append(
                    SearchHit(
                        kind="message",
                        id=str(r["id"]),
                        conversation_id=r["conversation_id"],
                        role=r["role"],
                        created_at=r["created_at"],
                        snippet=snippet_around(r["content"], found.start(), found.end()),
                        seq=r["seq"],
                        session_id=r["session_id"],
                        project=r["project"],
                    )
                )
                if len(hits) >= limit:
                    break
        return hits

    def _literal_prefilter(self, pattern: str, operator: str) -> tuple[str, builtins.list[Any]]:
        """The WHERE clause narrowing a regex scan to rows whose text holds its literal.

        Rows the trigram index does not hold yet are always candidates. Few
        candidates (a rare literal: an id, an error code) are fetched by id and
        sorted; many (a common word) are better met walking the time index
        newest first until the page is full, which never sorts them all.
        """
        rare = [
            r[0]
            for r in self.s._q(
                f"SELECT rowid FROM messages_trigram WHERE content {operator} ? LIMIT ?",
                (pattern, _RARE_LITERAL_ROWS + 1),
            )
        ]
        if len(rare) <= _RARE_LITERAL_ROWS:
            return (
                " AND m.id IN (SELECT value FROM json_each(?) UNION ALL "
                "SELECT id FROM messages WHERE id > (SELECT indexed_upto FROM trigram_progress))",
                [json.dumps(rare)],
            )
        return (
            f" AND (m.id IN (SELECT rowid FROM messages_trigram WHERE content {operator} ?)"
            " OR m.id > (SELECT indexed_upto FROM trigram_progress))",
            [pattern],
        )

    def _ranked_from_best(self, match: str, limit: int) -> builtins.list[dict[str, Any]] | None:
        """The page of ``match`` from the index's best-ranked rows alone, or None.

        Ranking needs bm25 of every matching row, and joining each one to its
        message and conversation (for filters and tie-breaks) before sorting
        cost as much again. Here FTS5 sorts by bm25 itself, and only its best
        ``limit * 4`` rows are joined and ordered (a sub-agent's weight only
        makes a rank worse). The page is exact when its last row ranks
        strictly better than every row left out; otherwise (ties at the cut)
        None: rank everything. Only unfiltered searches try it (see the caller).
        """
        wanted = limit * _RANKED_OVERFETCH
        if wanted > _RANKED_MAX_CANDIDATES:
            return None  # a page that long: one ranking of everything is as good
        best = self.s._q(
            "SELECT rowid, rank, snippet(messages_fts, 0, '[', ']', ' … ', 16) AS snip "
            "FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank LIMIT ?",
            [match, wanted],
        )
        if not best:
            return []
        found = {r["rowid"]: r for r in best}
        marks = ",".join("?" * len(best))
        page = [
            {**dict(r), "snip": found[r["id"]]["snip"], "rank": found[r["id"]]["rank"] * r["w"]}
            for r in self.s._q(
                "SELECT m.id, m.conversation_id, m.seq, m.role, m.created_at, c.session_id, "
                f"c.project, {_SUBAGENT_WEIGHT} AS w FROM messages m "
                "JOIN conversations c ON c.id = m.conversation_id "
                f"WHERE m.id IN ({marks})",
                list(found),
            )
        ]
        # Stable sorts, least significant key first: id, time, then rank.
        page.sort(key=lambda r: r["id"], reverse=True)
        page.sort(key=lambda r: r["created_at"], reverse=True)
        page.sort(key=lambda r: r["rank"])
        page = page[:limit]
        if len(best) < wanted:
            return page  # every matching row was a candidate
        if len(page) < limit or page[-1]["rank"] >= best[-1]["rank"]:
            return None
        return page

    def _summaries(
        self, query: GrepQuery, limit: int, budget: ScanBudget
    ) -> builtins.list[SearchHit]:
        where, params = self._filters(query, "s")
        if query.mode == "full_text":
            ranked: dict[str, Any] = {}
            for match in full_text_passes(query.pattern):
                for r in self.s._q(
                    "SELECT s.id, s.conversation_id, s.latest_at, c.session_id, c.project, "
                    "snippet(summaries_fts, 0, '[', ']', ' … ', 16) AS snip, "
                    f"summaries_fts.rank * {_SUBAGENT_WEIGHT} AS rank FROM summaries_fts "
                    "JOIN summary_rowids r ON r.rowid = summaries_fts.rowid "
                    "JOIN summaries s ON s.id = r.summary_id "
                    "JOIN conversations c ON c.id = s.conversation_id "
                    f"WHERE summaries_fts MATCH ?{where} ORDER BY rank LIMIT ?",
                    [match, *params, limit],
                ):
                    ranked.setdefault(r["id"], r)
                if len(ranked) >= limit:
                    break
            return [
                SearchHit(
                    kind="summary",
                    id=r["id"],
                    conversation_id=r["conversation_id"],
                    role=None,
                    created_at=r["latest_at"],
                    snippet=_one_line(r["snip"]),
                    rank=float(r["rank"]),
                    session_id=r["session_id"],
                    project=r["project"],
                )
                for r in ranked.values()
            ]
        regex = compile_user_regex(query.pattern)
        hits: list[SearchHit] = []
        for r in self.s._q(
            "SELECT s.id, s.conversation_id, s.latest_at, s.content, c.session_id, c.project "
            "FROM summaries s JOIN conversations c ON c.id = s.conversation_id "
            f"WHERE 1=1{where} ORDER BY s.latest_at DESC, s.id DESC",
            params,
        ):
            if budget.spent(r["latest_at"]):
                break
            found = regex.search(r["content"])
            if found is None:
                continue
            hits.append(
                SearchHit(
                    kind="summary",
                    id=r["id"],
                    conversation_id=r["conversation_id"],
                    role=None,
                    created_at=r["latest_at"],
                    snippet=snippet_around(r["content"], found.start(), found.end()),
                    session_id=r["session_id"],
                    project=r["project"],
                )
            )
            if len(hits) >= limit:
                break
        return hits


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
        with self.s._atomic():
            cur = self.db.execute(
                "INSERT OR IGNORE INTO quarantine(source_path, line_no, byte_offset, error, raw, "
                "raw_sha256, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    source_path,
                    line_no,
                    byte_offset,
                    error,
                    raw,
                    hashlib.sha256(raw).hexdigest(),
                    created_at or utc_now_iso(),
                ),
            )
            return cur.rowcount > 0

    def list(
        self, *, source_path: str | None = None, limit: int = 100, after_id: int | None = None
    ) -> builtins.list[QuarantinedLine]:
        sql = "SELECT * FROM quarantine WHERE id > ?"
        params: list[Any] = [-1 if after_id is None else after_id]
        if source_path is not None:
            sql += " AND source_path = ?"
            params.append(source_path)
        sql += " ORDER BY id LIMIT ?"
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
        with self.s._atomic():
            row = self.s._q1("SELECT source_path, line_no FROM quarantine WHERE id = ?", (line_id,))
            if row is None:
                raise NotFoundError(f"no quarantined line {line_id}")
            digest = hashlib.sha256(raw).hexdigest()
            twin = self.s._q1(
                "SELECT id FROM quarantine WHERE source_path = ? AND line_no = ? "
                "AND raw_sha256 = ? AND id <> ?",
                (row["source_path"], row["line_no"], digest, line_id),
            )
            if twin is not None:
                self.db.execute("DELETE FROM quarantine WHERE id = ?", (line_id,))
                return
            self.db.execute(
                "UPDATE quarantine SET raw = ?, raw_sha256 = ? WHERE id = ?",
                (raw, digest, line_id),
            )


class _Cursors(_Repo):
    def get(self, source_path: str) -> SourceCursor | None:
        r = self.s._q1("SELECT * FROM source_cursors WHERE source_path = ?", (source_path,))
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
        with self.s._atomic():
            self.db.execute(
                "INSERT INTO source_cursors(source_path, conversation_id, byte_offset, line_no, "
                "anchor_key, anchor_sha256, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(source_path) DO UPDATE SET conversation_id = excluded.conversation_id, "
                "byte_offset = excluded.byte_offset, line_no = excluded.line_no, "
                "anchor_key = excluded.anchor_key, anchor_sha256 = excluded.anchor_sha256, "
                "updated_at = excluded.updated_at",
                (
                    cursor.source_path,
                    cursor.conversation_id,
                    cursor.byte_offset,
                    cursor.line_no,
                    cursor.anchor_key,
                    cursor.anchor_sha256,
                    cursor.updated_at,
                ),
            )


class _Leases(_Repo):
    def acquire(self, conversation_id: int, owner: str, ttl_s: float) -> Lease | None:
        now = time.time()
        with self.s._atomic():
            row = self.s._q1(
                "SELECT owner, fence, expires_at FROM leases WHERE conversation_id = ?",
                (conversation_id,),
            )
            if row is None:
                fence = 1
                self.db.execute(
                    "INSERT INTO leases(conversation_id, owner, fence, expires_at) "
                    "VALUES (?, ?, ?, ?)",
                    (conversation_id, owner, fence, now + ttl_s),
                )
            elif row["owner"] == owner and row["expires_at"] > now:
                fence = int(row["fence"])
                self.db.execute(
                    "UPDATE leases SET expires_at = ? WHERE conversation_id = ?",
                    (now + ttl_s, conversation_id),
                )
            elif row["owner"] is None or row["expires_at"] <= now:
                fence = int(row["fence"]) + 1
                self.db.execute(
                    "UPDATE leases SET owner = ?, fence = ?, expires_at = ? WHERE conversation_id = ?",
                    (owner, fence, now + ttl_s, conversation_id),
                )
            else:
                return None
        return Lease(conversation_id, owner, fence, now + ttl_s)

    def renew(self, lease: Lease, ttl_s: float) -> Lease:
        expires = time.time() + ttl_s
        with self.s._atomic():
            self.check(lease)
            self.db.execute(
                "UPDATE leases SET expires_at = ? WHERE conversation_id = ?",
                (expires, lease.conversation_id),
            )
        return Lease(lease.conversation_id, lease.owner, lease.fence, expires)

    def release(self, lease: Lease) -> None:
        with self.s._atomic():
            self.db.execute(
                "UPDATE leases SET owner = NULL, expires_at = 0 "
                "WHERE conversation_id = ? AND owner = ? AND fence = ?",
                (lease.conversation_id, lease.owner, lease.fence),
            )

    def check(self, lease: Lease) -> None:
        row = self.s._q1(
            "SELECT owner, fence, expires_at FROM leases WHERE conversation_id = ?",
            (lease.conversation_id,),
        )
        if (
            row is None
            or row["owner"] != lease.owner
            or row["fence"] != lease.fence
            or row["expires_at"] <= time.time()
        ):
            raise LeaseLostError(
                f"lease on conversation {lease.conversation_id} (fence {lease.fence}) "
                "is no longer held by this worker"
            )


def _memory(row: sqlite3.Row) -> Memory:
    return rows.memory(row, _loads)


_clean_tags = rows.clean_tags


class _Memories(_Repo):
    def create(self, memory: NewMemory) -> MemoryWrite:
        text = memory.text.strip()
        if not text:
            raise InputError("memory text is empty")
        _check_text(text, "memory text")
        _check_text(memory.project, "project")
        if not 0.0 <= memory.confidence <= 1.0:
            raise InputError(f"memory confidence must be within 0..1, got {memory.confidence}")
        tags = _clean_tags(memory.tags)
        text_hash = memory_text_hash(text)
        with self.s._atomic():
            existing = self.s._q1(
                "SELECT * FROM memories WHERE project = ? AND text_hash = ?",
                (memory.project, text_hash),
            )
            if existing is not None:
                found = _memory(existing)
                if found.archived:
                    return MemoryWrite(found, created=False)
                merged = _clean_tags([*found.tags, *tags])
                confidence = max(found.confidence, memory.confidence)
                if merged != builtins.list(found.tags) or confidence != found.confidence:
                    self.db.execute(
                        "UPDATE memories SET tags = ?, tags_text = ?, confidence = ? WHERE id = ?",
                        (json.dumps(merged), " ".join(merged), confidence, found.id),
                    )
                again = self.get(found.id)
                assert again is not None
                return MemoryWrite(again, created=False)
            if (
                memory.source_summary_id is not None
                and self.s._q1("SELECT 1 FROM summaries WHERE id = ?", (memory.source_summary_id,))
                is None
            ):
                raise InputError(f"source summary {memory.source_summary_id} does not exist")
            if (
                memory.source_conversation_id is not None
                and self.s._q1(
                    "SELECT 1 FROM conversations WHERE id = ?", (memory.source_conversation_id,)
                )
                is None
            ):
                raise InputError(
                    f"source conversation {memory.source_conversation_id} does not exist"
                )
            created_at = memory.created_at or utc_now_iso()
            digest = hashlib.sha256(
                f"{memory.project}\x1f{text_hash}\x1f{rows.random_uuid()}".encode()
            ).hexdigest()
            memory_id = f"mem_{digest[:16]}"
            self.db.execute(
                "INSERT INTO memories(id, project, text, text_hash, tags, tags_text, confidence, "
                "source_summary_id, source_conversation_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    memory_id,
                    memory.project,
                    text,
                    text_hash,
                    json.dumps(tags),
                    " ".join(tags),
                    memory.confidence,
                    memory.source_summary_id,
                    memory.source_conversation_id,
                    created_at,
                ),
            )
            got = self.get(memory_id)
        assert got is not None
        return MemoryWrite(got, created=True)

    def get(self, memory_id: str) -> Memory | None:
        row = self.s._q1("SELECT * FROM memories WHERE id = ?", (memory_id,))
        return None if row is None else _memory(row)

    def list(
        self, *, project: str | None = None, include_archived: bool = False
    ) -> builtins.list[Memory]:
        sql = "SELECT * FROM memories WHERE 1=1"
        params: builtins.list[Any] = []
        if project is not None:
            sql += " AND project = ?"
            params.append(project)
        if not include_archived:
            sql += " AND archived = 0"
        return [_memory(r) for r in self.s._q(sql + " ORDER BY created_at, id", params)]

    def search(
        self,
        query: str,
        *,
        project: str | None = None,
        limit: int = 20,
        include_archived: bool = False,
    ) -> builtins.list[MemoryHit]:
        _check_text(query, "memory search query")
        match = full_text_query(query)
        if limit <= 0:
            return []
        where = ""
        params: builtins.list[Any] = [match]
        if project is not None:
            where += " AND m.project = ?"
            params.append(project)
        if not include_archived:
            where += " AND m.archived = 0"
        # Tags are labels someone chose on purpose: a tag hit counts double.
        rows = self.s._q(
            "SELECT m.*, bm25(memories_fts, 1.0, 2.0) AS bm FROM memories_fts "
            "JOIN memories m ON m.seq = memories_fts.rowid "
            f"WHERE memories_fts MATCH ?{where} "
            "ORDER BY bm, m.created_at DESC, m.id DESC LIMIT ?",
            [*params, limit],
        )
        return [MemoryHit(_memory(r), score=-float(r["bm"])) for r in rows]

    def _set_archived(self, memory_id: str, archived: bool) -> Memory:
        with self.s._atomic():
            cur = self.db.execute(
                "UPDATE memories SET archived = ? WHERE id = ?", (int(archived), memory_id)
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no memory {memory_id!r} (use `lcm memories --all`)")
            got = self.get(memory_id)
        assert got is not None
        return got

    def archive(self, memory_id: str) -> Memory:
        return self._set_archived(memory_id, True)

    def revive(self, memory_id: str) -> Memory:
        return self._set_archived(memory_id, False)

    def record_surfaced(self, memory_ids: Sequence[str], at: str) -> None:
        ids = builtins.list(dict.fromkeys(memory_ids))
        if not ids:
            return
        with self.s._atomic():
            self.db.executemany(
                "UPDATE memories SET surfaced_count = surfaced_count + 1, last_surfaced_at = ? "
                "WHERE id = ?",
                [(at, memory_id) for memory_id in ids],
            )

    def record_used(self, memory_id: str, at: str) -> Memory:
        with self.s._atomic():
            cur = self.db.execute(
                "UPDATE memories SET used_count = used_count + 1, last_used_at = ? WHERE id = ?",
                (at, memory_id),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no memory {memory_id!r}")
            got = self.get(memory_id)
        assert got is not None
        return got

    def rewrite(self, memory_id: str, text: str, tags: Sequence[str]) -> Memory:
        text = text.strip()
        if not text:
            raise InputError("memory text is empty")
        _check_text(text, "memory text")
        cleaned = _clean_tags(tags)
        text_hash = memory_text_hash(text)
        with self.s._atomic():
            current = self.get(memory_id)
            if current is None:
                raise NotFoundError(f"no memory {memory_id!r}")
            twin = self.s._q1(
                "SELECT * FROM memories WHERE project = ? AND text_hash = ? AND id <> ?",
                (current.project, text_hash, memory_id),
            )
            if twin is None:
                self.db.execute(
                    "UPDATE memories SET text = ?, text_hash = ?, tags = ?, tags_text = ? "
                    "WHERE id = ?",
                    (text, text_hash, json.dumps(cleaned), " ".join(cleaned), memory_id),
                )
                kept_id = memory_id
            else:
                merged = rows.merged_memories(_memory(twin), current, cleaned)
                self.db.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
                self.db.execute(
                    "UPDATE memories SET tags = ?, tags_text = ?, confidence = ?, "
                    "last_surfaced_at = ?, last_used_at = ?, surfaced_count = ?, used_count = ?, "
                    "archived = ? WHERE id = ?",
                    (
                        json.dumps(merged.tags),
                        " ".join(merged.tags),
                        merged.confidence,
                        merged.last_surfaced_at,
                        merged.last_used_at,
                        merged.surfaced_count,
                        merged.used_count,
                        int(merged.archived),
                        merged.id,
                    ),
                )
                kept_id = merged.id
            got = self.get(kept_id)
        assert got is not None
        return got

    def restore(self, memory: Memory) -> bool:
        _check_text(memory.text, "memory text")
        _check_text(memory.project, "project")
        if not 0.0 <= memory.confidence <= 1.0:
            raise InputError(f"memory confidence must be within 0..1, got {memory.confidence}")
        tags = _clean_tags(memory.tags)
        with self.s._atomic():
            cur = self.db.execute(
                "INSERT OR IGNORE INTO memories(id, project, text, text_hash, tags, tags_text, "
                "confidence, source_summary_id, source_conversation_id, created_at, "
                "last_surfaced_at, last_used_at, surfaced_count, used_count, archived) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    memory.id,
                    memory.project,
                    memory.text,
                    memory_text_hash(memory.text),
                    json.dumps(tags),
                    " ".join(tags),
                    memory.confidence,
                    memory.source_summary_id,
                    memory.source_conversation_id,
                    memory.created_at,
                    memory.last_surfaced_at,
                    memory.last_used_at,
                    memory.surfaced_count,
                    memory.used_count,
                    int(memory.archived),
                ),
            )
            return cur.rowcount > 0


def open_sqlite(path: Path | str) -> SQLiteStore:
    try:
        return SQLiteStore(path)
    except MigrationError:
        raise
    except sqlite3.Error as exc:  # pragma: no cover - defensive: surfaced with the path
        raise StoreError(f"cannot open SQLite database {path}: {exc}") from exc
