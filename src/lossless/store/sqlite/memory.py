"""Durable memories on SQLite (``lossless.store.contract.MemoryRepository``)."""

from __future__ import annotations

import builtins
import hashlib
import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from lossless.errors import (
    InputError,
    NotFoundError,
)
from lossless.store import inputs, rows
from lossless.store.contract import (
    Memory,
    MemoryHit,
    MemoryWrite,
    NewMemory,
    memory_text_hash,
)
from lossless.store.rows import (
    check_text,
    clean_tags,
)
from lossless.store.sqlite.repository import Repo, decode_json
from lossless.store.sqlite.search import full_text_query
from lossless.timeutil import utc_now_iso


def to_memory(row: sqlite3.Row) -> Memory:
    return rows.memory(row, decode_json)


class Memories(Repo):
    def create(self, memory: NewMemory) -> MemoryWrite:
        text = memory.text.strip()
        if not text:
            raise InputError("memory text is empty")
        inputs.new_memory(memory, text)
        if not 0.0 <= memory.confidence <= 1.0:
            raise InputError(f"memory confidence must be within 0..1, got {memory.confidence}")
        tags = clean_tags(memory.tags)
        text_hash = memory_text_hash(text)
        with self.s._atomic():
            existing = self.s._q1(
                "SELECT * FROM memories WHERE project = ? AND text_hash = ?",
                (memory.project, text_hash),
            )
            if existing is not None:
                found = to_memory(existing)
                if found.archived:
                    return MemoryWrite(found, created=False)
                merged = clean_tags([*found.tags, *tags])
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
        check_text(memory_id, "memory id")
        row = self.s._q1("SELECT * FROM memories WHERE id = ?", (memory_id,))
        return None if row is None else to_memory(row)

    def list(
        self, *, project: str | None = None, include_archived: bool = False
    ) -> builtins.list[Memory]:
        check_text(project, "project")
        sql = "SELECT * FROM memories WHERE 1=1"
        params: builtins.list[Any] = []
        if project is not None:
            sql += " AND project = ?"
            params.append(project)
        if not include_archived:
            sql += " AND archived = 0"
        return [to_memory(r) for r in self.s._q(sql + " ORDER BY created_at, id", params)]

    def search(
        self,
        query: str,
        *,
        project: str | None = None,
        limit: int = 20,
        include_archived: bool = False,
    ) -> builtins.list[MemoryHit]:
        check_text(project, "project")
        check_text(query, "memory search query")
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
        return [MemoryHit(to_memory(r), score=-float(r["bm"])) for r in rows]

    def _set_archived(self, memory_id: str, archived: bool) -> Memory:
        check_text(memory_id, "memory id")
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
        check_text(at, "surfaced time")
        for memory_id in memory_ids:
            check_text(memory_id, "memory id")
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
        check_text(memory_id, "memory id")
        check_text(at, "used time")
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
        check_text(memory_id, "memory id")
        text = text.strip()
        if not text:
            raise InputError("memory text is empty")
        check_text(text, "memory text")
        cleaned = clean_tags(tags)
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
                merged = rows.merged_memories(to_memory(twin), current, cleaned)
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
        inputs.restored_memory(memory)
        if not 0.0 <= memory.confidence <= 1.0:
            raise InputError(f"memory confidence must be within 0..1, got {memory.confidence}")
        tags = clean_tags(memory.tags)
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
