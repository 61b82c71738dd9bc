"""Durable memory on PostgreSQL: the contract's ``MemoryRepository``, as on SQLite.

Near-duplicates (same project, same ``memory_text_hash``) are one row; a
concurrent creator of the same memory waits on the unique key and then
reinforces the row the other one wrote. Search is the same word-OR full-text
query as message search, over the text and the tags (a tag weighs twice a
word of the text), best first, then newest, then id.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lossless.errors import InputError, NotFoundError
from lossless.store import inputs, lexical, rows
from lossless.store.contract import (
    Memory,
    MemoryHit,
    MemoryWrite,
    NewMemory,
    memory_text_hash,
)
from lossless.timeutil import utc_now_iso

if TYPE_CHECKING:
    from lossless.store.postgres.repository import Conn
    from lossless.store.postgres.store import PostgresStore

_COLUMNS = (
    "id, project, text, text_hash, tags, confidence, source_summary_id, "
    "source_conversation_id, created_at, last_surfaced_at, last_used_at, surfaced_count, "
    "used_count, archived"
)
# ts_rank weights for {D, C, B, A}: text is B, tags are A.
_WEIGHTS = "'{0, 0, 0.5, 1.0}'"


def _memory(row: dict[str, Any]) -> Memory:
    # psycopg decodes json columns already.
    return rows.memory(row, lambda value: value)


class Memories:
    def __init__(self, store: PostgresStore) -> None:
        self.s = store

    def create(self, memory: NewMemory) -> MemoryWrite:
        text = memory.text.strip()
        if not text:
            raise InputError("memory text is empty")
        inputs.new_memory(memory, text)
        if not 0.0 <= memory.confidence <= 1.0:
            raise InputError(f"memory confidence must be within 0..1, got {memory.confidence}")
        tags = rows.clean_tags(memory.tags)
        text_hash = memory_text_hash(text)
        with self.s._atomic() as conn:
            existing = self._locked(conn, memory.project, text_hash)
            if existing is not None:
                return self._reinforce(conn, existing, tags, memory.confidence)
            if memory.source_summary_id is not None and (
                conn.execute(
                    "SELECT 1 FROM summaries WHERE id = %s", [memory.source_summary_id]
                ).fetchone()
                is None
            ):
                raise InputError(f"source summary {memory.source_summary_id} does not exist")
            if memory.source_conversation_id is not None and (
                conn.execute(
                    "SELECT 1 FROM conversations WHERE id = %s", [memory.source_conversation_id]
                ).fetchone()
                is None
            ):
                raise InputError(
                    f"source conversation {memory.source_conversation_id} does not exist"
                )
            digest = hashlib.sha256(
                f"{memory.project}\x1f{text_hash}\x1f{uuid.uuid4()}".encode()
            ).hexdigest()
            row = conn.execute(
                "INSERT INTO memories(id, project, text, text_hash, tags, tags_text, confidence, "
                "source_summary_id, source_conversation_id, created_at) "
                "VALUES (%s, %s, %s, %s, %s::json, %s, %s, %s, %s, %s) "
                f"ON CONFLICT (project, text_hash) DO NOTHING RETURNING {_COLUMNS}",
                [
                    f"mem_{digest[:16]}",
                    memory.project,
                    text,
                    text_hash,
                    json.dumps(tags),
                    " ".join(tags),
                    memory.confidence,
                    memory.source_summary_id,
                    memory.source_conversation_id,
                    memory.created_at or utc_now_iso(),
                ],
            ).fetchone()
            if row is None:
                # Another writer created it between our look and our insert.
                again = self._locked(conn, memory.project, text_hash)
                assert again is not None
                return self._reinforce(conn, again, tags, memory.confidence)
        return MemoryWrite(_memory(row), created=True)

    def _locked(self, conn: Conn, project: str, text_hash: str) -> Memory | None:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE project = %s AND text_hash = %s FOR UPDATE",
            [project, text_hash],
        ).fetchone()
        return None if row is None else _memory(row)

    def _reinforce(
        self, conn: Conn, found: Memory, tags: builtins.list[str], confidence: float
    ) -> MemoryWrite:
        if found.archived:
            return MemoryWrite(found, created=False)
        merged = rows.clean_tags([*found.tags, *tags])
        best = max(found.confidence, confidence)
        if merged == builtins.list(found.tags) and best == found.confidence:
            return MemoryWrite(found, created=False)
        row = conn.execute(
            "UPDATE memories SET tags = %s::json, tags_text = %s, confidence = %s "
            f"WHERE id = %s RETURNING {_COLUMNS}",
            [json.dumps(merged), " ".join(merged), best, found.id],
        ).fetchone()
        assert row is not None
        return MemoryWrite(_memory(row), created=False)

    def get(self, memory_id: str) -> Memory | None:
        rows.check_text(memory_id, "memory id")
        row = self.s._q1(f"SELECT {_COLUMNS} FROM memories WHERE id = %s", [memory_id])
        return None if row is None else _memory(row)

    def list(
        self, *, project: str | None = None, include_archived: bool = False
    ) -> builtins.list[Memory]:
        rows.check_text(project, "project")
        sql = f"SELECT {_COLUMNS} FROM memories WHERE true"
        params: builtins.list[Any] = []
        if project is not None:
            sql += " AND project = %s"
            params.append(project)
        if not include_archived:
            sql += " AND NOT archived"
        return [_memory(r) for r in self.s._q(sql + " ORDER BY created_at, id", params)]

    def search(
        self,
        query: str,
        *,
        project: str | None = None,
        limit: int = 20,
        include_archived: bool = False,
    ) -> builtins.list[MemoryHit]:
        rows.check_text(query, "memory search query")
        rows.check_text(project, "project")
        words = lexical.words(query)
        if limit <= 0:
            return []
        tsquery = " || ".join("search_prefix(%s)" if w.prefix else "search_word(%s)" for w in words)
        where = ""
        params: builtins.list[Any] = []
        if project is not None:
            where += " AND m.project = %s"
            params.append(project)
        if not include_archived:
            where += " AND NOT m.archived"
        found_rows = self.s._q(
            f"SELECT {', '.join('m.' + c.strip() for c in _COLUMNS.split(','))}, "
            f"ts_rank({_WEIGHTS}, m.search_document, q.q, 1)::float8 AS score "
            f"FROM memories m, (SELECT {tsquery} AS q) AS q "
            f"WHERE m.search_document @@ q.q{where} "
            "ORDER BY score DESC, m.created_at DESC, m.id DESC LIMIT %s",
            [*(w.typed for w in words), *params, limit],
        )
        return [MemoryHit(_memory(r), score=float(r["score"])) for r in found_rows]

    def _set_archived(self, memory_id: str, archived: bool) -> Memory:
        rows.check_text(memory_id, "memory id")
        row = self.s._q1(
            f"UPDATE memories SET archived = %s WHERE id = %s RETURNING {_COLUMNS}",
            [archived, memory_id],
        )
        if row is None:
            raise NotFoundError(f"no memory {memory_id!r} (use `lcm memories --all`)")
        return _memory(row)

    def archive(self, memory_id: str) -> Memory:
        return self._set_archived(memory_id, True)

    def revive(self, memory_id: str) -> Memory:
        return self._set_archived(memory_id, False)

    def record_surfaced(self, memory_ids: Sequence[str], at: str) -> None:
        ids = builtins.list(dict.fromkeys(memory_ids))
        if not ids:
            return
        for memory_id in ids:
            rows.check_text(memory_id, "memory id")
        rows.check_text(at, "surfaced time")
        with self.s._atomic() as conn:
            conn.execute(
                "UPDATE memories SET surfaced_count = surfaced_count + 1, last_surfaced_at = %s "
                "WHERE id = ANY(%s)",
                [at, ids],
            )

    def record_used(self, memory_id: str, at: str) -> Memory:
        rows.check_text(memory_id, "memory id")
        rows.check_text(at, "used time")
        row = self.s._q1(
            "UPDATE memories SET used_count = used_count + 1, last_used_at = %s "
            f"WHERE id = %s RETURNING {_COLUMNS}",
            [at, memory_id],
        )
        if row is None:
            raise NotFoundError(f"no memory {memory_id!r}")
        return _memory(row)

    def rewrite(self, memory_id: str, text: str, tags: Sequence[str]) -> Memory:
        rows.check_text(memory_id, "memory id")
        text = text.strip()
        if not text:
            raise InputError("memory text is empty")
        rows.check_text(text, "memory text")
        cleaned = rows.clean_tags(tags)
        text_hash = memory_text_hash(text)
        with self.s._atomic() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id = %s FOR UPDATE", [memory_id]
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no memory {memory_id!r}")
            current = _memory(row)
            twin = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE project = %s AND text_hash = %s "
                "AND id <> %s FOR UPDATE",
                [current.project, text_hash, memory_id],
            ).fetchone()
            if twin is None:
                row = conn.execute(
                    "UPDATE memories SET text = %s, text_hash = %s, tags = %s::json, "
                    f"tags_text = %s WHERE id = %s RETURNING {_COLUMNS}",
                    [text, text_hash, json.dumps(cleaned), " ".join(cleaned), memory_id],
                ).fetchone()
            else:
                merged = rows.merged_memories(_memory(twin), current, cleaned)
                conn.execute("DELETE FROM memories WHERE id = %s", [memory_id])
                row = conn.execute(
                    "UPDATE memories SET tags = %s::json, tags_text = %s, confidence = %s, "
                    "last_surfaced_at = %s, last_used_at = %s, surfaced_count = %s, "
                    f"used_count = %s, archived = %s WHERE id = %s RETURNING {_COLUMNS}",
                    [
                        json.dumps(merged.tags),
                        " ".join(merged.tags),
                        merged.confidence,
                        merged.last_surfaced_at,
                        merged.last_used_at,
                        merged.surfaced_count,
                        merged.used_count,
                        merged.archived,
                        merged.id,
                    ],
                ).fetchone()
        assert row is not None
        return _memory(row)

    def restore(self, memory: Memory) -> bool:
        inputs.restored_memory(memory)
        if not 0.0 <= memory.confidence <= 1.0:
            raise InputError(f"memory confidence must be within 0..1, got {memory.confidence}")
        tags = rows.clean_tags(memory.tags)
        with self.s._atomic() as conn:
            # Either unique key (id, or project + text hash) makes this a no-op.
            cur = conn.execute(
                "INSERT INTO memories(id, project, text, text_hash, tags, tags_text, confidence, "
                "source_summary_id, source_conversation_id, created_at, last_surfaced_at, "
                "last_used_at, surfaced_count, used_count, archived) "
                "VALUES (%s, %s, %s, %s, %s::json, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                [
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
                    memory.archived,
                ],
            )
            return cur.rowcount > 0
