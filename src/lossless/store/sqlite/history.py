"""The verbatim history on SQLite: conversations and their messages, parts and native records."""

from __future__ import annotations

import builtins
import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from lossless.errors import (
    NotFoundError,
    StoreError,
)
from lossless.models import (
    JSON,
    Conversation,
    Message,
    NativeRecord,
    NewMessage,
    NewNativeRecord,
    NewPart,
    Part,
)
from lossless.store import inputs, rows
from lossless.store.contract import (
    OVERVIEW_PROMPT_CHARS,
    AppendResult,
    ConversationListing,
    ConversationOverview,
    HashedRow,
    PartRewrite,
)
from lossless.store.hashing import message_digest, part_digest, raw_digest, recorded
from lossless.store.overview import build_listings, build_overviews
from lossless.store.raw_packing import DICTIONARY_FORMAT, TRAIN_MIN_LINES, train
from lossless.store.rows import (
    check_text,
    dumps_json,
)
from lossless.store.sqlite.repository import (
    Repo,
    decode_json,
    to_conversation,
    to_message,
)
from lossless.store.stored_once import (
    MIN_SHARED_CHARS,
    expand_raw,
    part_offset,
    template_raw,
)
from lossless.timeutil import utc_now_iso
from lossless.tokens import estimate_tokens


class Conversations(Repo):
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
        inputs.conversation(
            project=project,
            session_id=session_id,
            client=client,
            title=title,
            created_at=created_at,
        )
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
                        dumps_json(metadata or {}),
                        created_at or utc_now_iso(),
                    ),
                )
                row = self.s._q1("SELECT * FROM conversations WHERE id = ?", (cur.lastrowid,))
            assert row is not None
            return to_conversation(row)

    def discard_if_empty(self, conversation_id: int) -> bool:
        with self.s._atomic():
            if self.s._q1(
                "SELECT 1 FROM messages WHERE conversation_id = ? LIMIT 1", (conversation_id,)
            ):
                return False
            try:
                # Every other table pointing at a conversation does so by a
                # foreign key (enforced): a row anywhere refuses the delete.
                self.db.execute("SAVEPOINT discard_if_empty")
                deleted = self.db.execute(
                    "DELETE FROM conversations WHERE id = ?", (conversation_id,)
                ).rowcount
                self.db.execute("RELEASE discard_if_empty")
            except sqlite3.IntegrityError:
                self.db.execute("ROLLBACK TO discard_if_empty")
                self.db.execute("RELEASE discard_if_empty")
                return False
            return bool(deleted)

    def get(self, conversation_id: int) -> Conversation | None:
        row = self.s._q1("SELECT * FROM conversations WHERE id = ?", (conversation_id,))
        return None if row is None else to_conversation(row)

    def find_by_session(
        self, session_id: str, *, project: str | None = None
    ) -> Conversation | None:
        check_text(session_id, "session id")
        check_text(project, "project")
        sql = "SELECT * FROM conversations WHERE session_id = ?"
        params: list[Any] = [session_id]
        if project is not None:
            sql += " AND project = ?"
            params.append(project)
        row = self.s._q1(sql + " ORDER BY created_at DESC, id DESC LIMIT 1", params)
        return None if row is None else to_conversation(row)

    def list(
        self, *, project: str | None = None, client: str | None = None, limit: int | None = None
    ) -> builtins.list[Conversation]:
        check_text(project, "project")
        check_text(client, "client")
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
        return [to_conversation(r) for r in self.s._q(sql, params)]

    def overview(self, conversation_ids: Sequence[int]) -> dict[int, ConversationOverview]:
        ids = builtins.list(dict.fromkeys(conversation_ids))
        found: dict[int, ConversationOverview] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                build_overviews(
                    chunk,
                    messages=self.s._q(
                        "SELECT conversation_id, count(*) AS n, sum(token_count) AS tokens, "
                        "max(created_at) AS last_at FROM messages "
                        f"WHERE conversation_id IN ({marks}) GROUP BY conversation_id",
                        chunk,
                    ),
                    prompts=self.s._q(
                        f"SELECT m.conversation_id, substr(m.content, 1, {OVERVIEW_PROMPT_CHARS}) "
                        "AS prompt FROM messages m JOIN (SELECT conversation_id, min(seq) AS seq "
                        f"FROM messages WHERE role = 'user' AND conversation_id IN ({marks}) "
                        "GROUP BY conversation_id) f "
                        "ON f.conversation_id = m.conversation_id AND f.seq = m.seq",
                        chunk,
                    ),
                    summaries=self.s._q(
                        "SELECT conversation_id, count(*) AS n, max(depth) AS max_depth "
                        f"FROM summaries WHERE conversation_id IN ({marks}) "
                        "GROUP BY conversation_id",
                        chunk,
                    ),
                    context=self.s._q(
                        "SELECT conversation_id, sum(token_count) AS tokens FROM context_items "
                        f"WHERE conversation_id IN ({marks}) GROUP BY conversation_id",
                        chunk,
                    ),
                )
            )
        return found

    def listing(self, conversation_ids: Sequence[int]) -> dict[int, ConversationListing]:
        ids = builtins.list(dict.fromkeys(conversation_ids))
        found: dict[int, ConversationListing] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                build_listings(
                    chunk,
                    # The kept totals (migration 0014), not a count of the rows.
                    messages=self.s._q(
                        "SELECT conversation_id, messages AS n FROM conversation_totals "
                        f"WHERE conversation_id IN ({marks})",
                        chunk,
                    ),
                    last=self._last_activity(chunk),
                    summaries=self.s._q(
                        "SELECT conversation_id, depth, count(*) AS n FROM summaries "
                        f"WHERE conversation_id IN ({marks}) GROUP BY conversation_id, depth",
                        chunk,
                    ),
                    context=self._context_figures(chunk),
                )
            )
        return found

    def _context_figures(self, ids: Sequence[int]) -> builtins.list[dict[str, Any]]:
        """Each conversation's context counts (``context.stats``: no listing of its
        items) and the source tokens of the summaries in it, read through the
        summary items only."""
        stats = {cid: self.s.context.stats(cid) for cid in ids}
        sources: dict[int, int] = {}
        # Only conversations with summaries in context: a long raw one is not scanned.
        compacted = [cid for cid, s in stats.items() if s.summaries]
        if compacted:
            marks = ",".join("?" * len(compacted))
            for r in self.s._q(
                "SELECT c.conversation_id, sum(s.source_token_count) AS source "
                "FROM context_items c JOIN summaries s ON s.id = c.summary_id "
                f"WHERE c.conversation_id IN ({marks}) AND c.item_type = 'summary' "
                "GROUP BY c.conversation_id",
                compacted,
            ):
                sources[int(r["conversation_id"])] = int(r["source"] or 0)
        return [
            {
                "conversation_id": cid,
                "items": s.items,
                "tokens": s.tokens,
                "raw": s.items - s.summaries,
                "history": s.message_tokens + sources.get(cid, 0),
            }
            for cid, s in stats.items()
            if s.items
        ]

    def _last_activity(self, ids: Sequence[int]) -> builtins.list[Any]:
        marks = ",".join("?" * len(ids))
        # The newest message by seq: one probe of the (conversation_id, seq)
        # index each, where max(created_at) would read every message row.
        return self.s._q(
            "SELECT c.id AS conversation_id, (SELECT m.created_at FROM messages m "
            "WHERE m.conversation_id = c.id ORDER BY m.seq DESC LIMIT 1) AS last_at "
            f"FROM conversations c WHERE c.id IN ({marks})",
            ids,
        )

    def last_activity(self, conversation_ids: Sequence[int]) -> dict[int, str | None]:
        ids = builtins.list(dict.fromkeys(conversation_ids))
        found: dict[int, str | None] = dict.fromkeys(ids)
        for start in range(0, len(ids), 500):
            for r in self._last_activity(ids[start : start + 500]):
                found[int(r["conversation_id"])] = r["last_at"]
        return found

    def update_metadata(self, conversation_id: int, metadata: JSON) -> None:
        with self.s._atomic():
            row = self.s._q1("SELECT metadata FROM conversations WHERE id = ?", (conversation_id,))
            if row is None:
                raise StoreError(f"conversation {conversation_id} does not exist")
            merged = {**json.loads(row["metadata"]), **metadata}
            self.db.execute(
                "UPDATE conversations SET metadata = ? WHERE id = ?",
                (dumps_json(merged), conversation_id),
            )

    def rewrite(self, conversation_id: int, *, title: str | None, metadata: JSON) -> None:
        check_text(title, "title")
        meta = dumps_json(metadata or {})
        with self.s._atomic():
            cur = self.db.execute(
                "UPDATE conversations SET title = ?, metadata = ? WHERE id = ?",
                (title, meta, conversation_id),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no conversation {conversation_id}")


class Messages(Repo):
    def append(self, conversation_id: int, messages: Sequence[NewMessage]) -> AppendResult:
        inputs.new_messages(messages)
        if not messages:
            return AppendResult(inserted=[], skipped=0)
        now = utc_now_iso()
        with self.s._atomic():
            # BEGIN IMMEDIATE holds the write lock: nothing can be inserted between
            # reading the next seq, id and the stored keys and writing the batch.
            row = self.s._q1(
                "SELECT coalesce(max(seq), -1) + 1 AS next FROM messages WHERE conversation_id = ?",
                (conversation_id,),
            )
            next_seq = int(row["next"]) if row else 0
            seen = self._stored_keys(
                conversation_id, [m.ingest_key for m in messages if m.ingest_key is not None]
            )
            planned: list[Message] = []
            planned_new: list[NewMessage] = []
            skipped = 0
            first_id = int(
                self.db.execute("SELECT coalesce(max(id), 0) + 1 FROM messages").fetchone()[0]
            )
            for m in messages:
                if m.ingest_key is not None:
                    # A key repeated within one batch is a duplicate too (the first is kept).
                    if m.ingest_key in seen:
                        skipped += 1
                        continue
                    seen.add(m.ingest_key)
                token_count = (
                    m.token_count if m.token_count is not None else estimate_tokens(m.content)
                )
                planned.append(
                    Message(
                        id=first_id + len(planned),
                        conversation_id=conversation_id,
                        seq=next_seq + len(planned),
                        role=m.role,
                        content=m.content,
                        token_count=token_count,
                        created_at=m.created_at or now,
                        ingest_key=m.ingest_key,
                        metadata=m.metadata,
                    )
                )
                planned_new.append(m)
            if not planned:
                return AppendResult(inserted=[], skipped=skipped)
            # Ids are given, not left to SQLite: the parts and raw lines of the
            # whole batch then go in with one statement each.
            self.db.executemany(
                "INSERT INTO messages(id, conversation_id, seq, role, content, token_count, "
                "created_at, ingest_key, metadata, content_hash) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        s.id,
                        conversation_id,
                        s.seq,
                        s.role,
                        s.content,
                        s.token_count,
                        s.created_at,
                        s.ingest_key,
                        dumps_json(m.metadata),
                        message_digest(m.role, m.content),
                    )
                    for s, m in zip(planned, planned_new, strict=True)
                ],
            )
            parts = [
                _part_row(s.id, i, p, m.content)
                for s, m in zip(planned, planned_new, strict=True)
                for i, p in enumerate(m.parts)
            ]
            if parts:
                self.db.executemany(
                    "INSERT INTO message_parts(message_id, ordinal, kind, text, tool_name, "
                    "tool_call_id, metadata, content_hash, text_start, text_len) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    parts,
                )
            records = [
                _record_row(conversation_id, s.id, r, m)
                for s, m in zip(planned, planned_new, strict=True)
                for r in m.native_records
            ]
            added_records = self._insert_record_rows(records) if records else 0
            self._count(
                conversation_id,
                messages=len(planned),
                message_tokens=sum(s.token_count for s in planned),
                parts=len(parts),
                native_records=added_records,
            )
            self._index(planned[0].id, planned[-1].id)
        return AppendResult(inserted=planned, skipped=skipped)

    def _count(
        self,
        conversation_id: int,
        *,
        messages: int = 0,
        message_tokens: int = 0,
        parts: int = 0,
        native_records: int = 0,
    ) -> None:
        """Add what was just inserted to the conversation's totals (migration 0014).

        The inserts of messages, parts and raw lines are counted here, one
        statement per batch, rather than by a row trigger each (SQLite has no
        statement triggers; a trigger per row made appends ~20% slower).
        This module's appends are the only writers of those rows; deletions
        and moves are counted by triggers.
        """
        self.db.execute(
            "INSERT INTO conversation_totals (conversation_id, messages, message_tokens, parts, "
            "native_records) VALUES (?, ?, ?, ?, ?) ON CONFLICT (conversation_id) DO UPDATE SET "
            "messages = messages + excluded.messages, "
            "message_tokens = message_tokens + excluded.message_tokens, "
            "parts = parts + excluded.parts, "
            "native_records = native_records + excluded.native_records",
            (conversation_id, messages, message_tokens, parts, native_records),
        )

    def _stored_keys(self, conversation_id: int, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` a message of the conversation already has."""
        found: set[str] = set()
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            found.update(
                r[0]
                for r in self.db.execute(
                    "SELECT ingest_key FROM messages WHERE conversation_id = ? "
                    f"AND ingest_key IN ({','.join('?' * len(chunk))})",
                    (conversation_id, *chunk),
                )
            )
        return found

    def _index(self, first_id: int, last_id: int) -> None:
        """Add messages first_id..last_id to the word index in one pass.

        The trigram index follows later (``search.catch_up``): see migration 0005.
        The word index reads the text through ``messages_words`` (migration 0009).
        """
        self.db.execute(
            "INSERT INTO messages_fts(rowid, content) "
            "SELECT id, content FROM messages_words WHERE id BETWEEN ? AND ?",
            (first_id, last_id),
        )

    def _insert_records(
        self,
        conversation_id: int,
        message_id: int | None,
        records: Sequence[NewNativeRecord],
    ) -> int:
        """Insert standalone ``records`` (no message: stored as they are)."""
        added = self._insert_record_rows(
            [_record_row(conversation_id, message_id, r, None) for r in records]
        )
        if added:
            self._count(conversation_id, native_records=added)
        return added

    def _insert_record_rows(self, rows_: Sequence[list[Any]]) -> int:
        """Insert native_records rows, their raw lines (column 4) packed."""
        pack = self._packer([row[4] for row in rows_])
        for row in rows_:
            row[4] = pack(row[4])
        # rowcount, not total_changes: what triggers write is not an addition.
        cursor = self.db.executemany(
            "INSERT OR IGNORE INTO native_records(conversation_id, message_id, native_key, "
            "record_type, raw, source_path, line_no, byte_offset, raw_hash, raw_template) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows_,
        )
        return max(0, cursor.rowcount)

    def _packer(self, lines: Sequence[str]) -> Callable[[str], str | bytes]:
        """How to pack raw lines like ``lines`` now: with the store's dictionary,
        trained from ``lines`` (and the lines stored last) when there is none
        yet and they are enough.

        Called inside the write transaction, so two writers cannot both train one.
        """
        packing = self.s.raw_packing
        row = self.s._q1("SELECT id FROM raw_dictionaries ORDER BY id DESC LIMIT 1")
        if row is not None:
            dictionary_id = int(row["id"])
            dictionary = packing.dictionary(dictionary_id)
        else:
            if len(lines) < TRAIN_MIN_LINES:
                # A hook's few lines at a time: the lines stored before them
                # say what the store's lines look like (a store holds few
                # lines only until then: this runs until it holds enough).
                earlier = self.s._q(
                    "SELECT raw FROM native_records ORDER BY id DESC LIMIT ?", (TRAIN_MIN_LINES,)
                )
                lines = [*(packing.unpack(r["raw"]) for r in reversed(earlier)), *lines]
            trained = train(lines)
            if trained is None:
                return lambda raw: packing.pack(raw, None, None)
            dictionary = trained
            cursor = self.db.execute(
                "INSERT INTO raw_dictionaries(dictionary, created_at) VALUES (?, ?)",
                (dictionary, utc_now_iso()),
            )
            dictionary_id = int(cursor.lastrowid or 0)
        return lambda raw: packing.pack(raw, dictionary_id, dictionary)

    def _texts(self, message_ids: Sequence[int]) -> dict[int, tuple[str, list[str | None]]]:
        """Each message's content and part texts by ordinal (what templates refer to)."""
        ids = list(dict.fromkeys(message_ids))
        found: dict[int, tuple[str, list[str | None]]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for r in self.s._q(f"SELECT id, content FROM messages WHERE id IN ({marks})", chunk):
                found[int(r["id"])] = (r["content"], [])
            for r in self.s._q(
                f"SELECT p.message_id, {_PART_TEXT} AS text FROM message_parts p "
                f"JOIN messages m ON m.id = p.message_id WHERE p.message_id IN ({marks}) "
                "ORDER BY p.message_id, p.ordinal",
                chunk,
            ):
                found[int(r["message_id"])][1].append(r["text"])
        return found

    def _raws(self, records: Sequence[Any]) -> builtins.list[str]:
        """The raw lines of native record rows, templates rebuilt."""
        templated = [int(r["message_id"]) for r in records if r["raw_template"]]
        texts = self._texts(templated) if templated else {}
        out = []
        for r in records:
            raw = self.s.raw_packing.unpack(r["raw"])
            if r["raw_template"]:
                content, parts = texts[int(r["message_id"])]
                raw = expand_raw(raw, content, parts)
            out.append(raw)
        return out

    def add_native_records(self, conversation_id: int, records: Sequence[NewNativeRecord]) -> int:
        inputs.native_records(records)
        with self.s._atomic():
            return self._insert_records(conversation_id, None, records)

    def get(self, message_id: int) -> Message | None:
        row = self.s._q1("SELECT * FROM messages WHERE id = ?", (message_id,))
        return None if row is None else to_message(row)

    def get_many(self, message_ids: Sequence[int]) -> builtins.list[Message]:
        out: list[Message] = []
        ids = list(dict.fromkeys(message_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            out.extend(
                to_message(r)
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
        return [to_message(r) for r in self.s._q(sql, params)]

    def iter_all(self, conversation_id: int, *, batch: int = 1000) -> Iterator[Message]:
        return rows.iter_in_pages(
            lambda after, limit: self.list(conversation_id, after_seq=after, limit=limit), batch
        )

    def parts(self, message_ids: Sequence[int]) -> dict[int, builtins.list[Part]]:
        result: dict[int, builtins.list[Part]] = {mid: [] for mid in message_ids}
        ids = builtins.list(result)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for r in self.s._q(
                f"SELECT {_PART_COLUMNS} FROM message_parts p JOIN messages m "
                f"ON m.id = p.message_id WHERE p.message_id IN ({marks}) "
                "ORDER BY p.message_id, p.ordinal",
                chunk,
            ):
                result[r["message_id"]].append(rows.part(r, decode_json))
        return result

    def native_records(
        self, conversation_id: int, *, message_id: int | None = None
    ) -> builtins.list[NativeRecord]:
        sql = "SELECT * FROM native_records WHERE conversation_id = ?"
        params: list[Any] = [conversation_id]
        if message_id is not None:
            sql += " AND message_id = ?"
            params.append(message_id)
        records = self.s._q(sql + " ORDER BY id", params)
        return [
            rows.native_record(r, raw) for r, raw in zip(records, self._raws(records), strict=True)
        ]

    def has_native_keys(self, conversation_id: int, keys: Sequence[str]) -> set[str]:
        for key in keys:
            check_text(key, "native key")
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

    def native_raw_hashes(self, conversation_id: int, keys: Sequence[str]) -> dict[str, str | None]:
        found: dict[str, str | None] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                (r["native_key"], recorded(r["raw_hash"]))
                for r in self.s._q(
                    f"SELECT native_key, raw_hash FROM native_records WHERE conversation_id = ? "
                    f"AND native_key IN ({marks})",
                    [conversation_id, *chunk],
                )
            )
        return found

    def native_records_by_key(
        self, conversation_id: int, keys: Sequence[str]
    ) -> dict[str, NativeRecord]:
        found: dict[str, NativeRecord] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            records = self.s._q(
                f"SELECT * FROM native_records WHERE conversation_id = ? "
                f"AND native_key IN ({marks})",
                [conversation_id, *chunk],
            )
            for r, raw in zip(records, self._raws(records), strict=True):
                found[r["native_key"]] = rows.native_record(r, raw)
        return found

    def count(self, conversation_id: int | None = None) -> int:
        # The kept totals (migration 0014), not a count of the rows.
        if conversation_id is None:
            row = self.s._q1("SELECT coalesce(sum(messages), 0) AS n FROM conversation_totals")
        else:
            row = self.s._q1(
                "SELECT messages AS n FROM conversation_totals WHERE conversation_id = ?",
                (conversation_id,),
            )
        return int(row["n"]) if row else 0

    def high_water(self) -> int:
        row = self.s._q1("SELECT coalesce(max(id), 0) AS n FROM messages")
        return int(row["n"]) if row else 0

    def last(self, conversation_id: int) -> Message | None:
        row = self.s._q1(
            "SELECT * FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1",
            (conversation_id,),
        )
        return None if row is None else to_message(row)

    def rewrite(
        self,
        message_id: int,
        content: str,
        metadata: JSON | None,
        parts: Sequence[PartRewrite] = (),
    ) -> None:
        check_text(content, "message content")
        for p in parts:
            check_text(p.text, "message part text")
        meta = dumps_json(metadata)
        part_rows = [(p.text, dumps_json(p.metadata), message_id, p.ordinal) for p in parts]
        with self.s._atomic():
            self._materialize(message_id)
            # A sanctioned rewrite (redaction) records the new content's hashes.
            cur = self.db.execute(
                "UPDATE messages SET content = ?, metadata = ?, "
                "content_hash = lcm_stored_hash(lcm_message_hash(role, ?)) WHERE id = ?",
                (content, meta, content, message_id),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no message {message_id}")
            for row in part_rows:
                cur = self.db.execute(
                    "UPDATE message_parts SET text = ?, metadata = ?, "
                    "content_hash = lcm_stored_hash(lcm_part_hash(kind, ?, tool_name, tool_call_id)) "
                    "WHERE message_id = ? AND ordinal = ?",
                    (row[0], row[1], row[0], row[2], row[3]),
                )
                if cur.rowcount == 0:
                    raise NotFoundError(f"message {message_id} has no part {row[3]}")

    def _materialize(self, message_id: int) -> None:
        """Store the message's referring parts and raw lines verbatim again, so a
        rewrite of its texts cannot change them (see ``lossless.store.stored_once``)."""
        records = self.s._q(
            "SELECT id, message_id, raw, raw_template FROM native_records "
            "WHERE message_id = ? AND raw_template = 1",
            [message_id],
        )
        lines = self._raws(records)
        pack = self._packer(lines)
        for r, raw in zip(records, lines, strict=True):
            self.db.execute(
                "UPDATE native_records SET raw = ?, raw_template = 0 WHERE id = ?",
                (pack(raw), r["id"]),
            )
        self.db.execute(
            "UPDATE message_parts SET text = (SELECT substr(m.content, text_start + 1, text_len) "
            "FROM messages m WHERE m.id = message_parts.message_id), "
            "text_start = NULL, text_len = NULL WHERE message_id = ? AND text_start IS NOT NULL",
            (message_id,),
        )

    def hashed_rows(self, conversation_id: int) -> builtins.list[HashedRow]:
        out = [
            HashedRow(
                "message",
                r["id"],
                None,
                None,
                recorded(r["content_hash"]),
                (r["role"], r["content"]),
            )
            for r in self.s._q(
                "SELECT id, role, content, content_hash FROM messages "
                "WHERE conversation_id = ? ORDER BY seq",
                [conversation_id],
            )
        ]
        out += [
            HashedRow(
                "part",
                r["message_id"],
                r["ordinal"],
                None,
                recorded(r["content_hash"]),
                (r["kind"], r["text"], r["tool_name"], r["tool_call_id"]),
            )
            for r in self.s._q(
                f"SELECT p.message_id, p.ordinal, p.kind, {_PART_TEXT} AS text, p.tool_name, "
                "p.tool_call_id, p.content_hash FROM message_parts p "
                "JOIN messages m ON m.id = p.message_id "
                "WHERE m.conversation_id = ? ORDER BY m.seq, p.ordinal",
                [conversation_id],
            )
        ]
        records = self.s._q(
            "SELECT id, message_id, raw, raw_hash, raw_template FROM native_records "
            "WHERE conversation_id = ? ORDER BY id",
            [conversation_id],
        )
        out += [
            HashedRow(
                "native_record", r["message_id"], None, r["id"], recorded(r["raw_hash"]), (raw,)
            )
            for r, raw in zip(records, self._raws(records), strict=True)
        ]
        return out

    def rewrite_native_record(self, record_id: int, raw: str) -> None:
        check_text(raw, "native record")
        with self.s._atomic():
            cur = self.db.execute(
                "UPDATE native_records SET raw = ?, raw_hash = ?, raw_template = 0 WHERE id = ?",
                (self._packer([raw])(raw), raw_digest(raw), record_id),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no native record {record_id}")

    def store_texts_once(self, conversation_id: int) -> int:
        changed = 0
        with self.s._atomic():
            parts = [
                (start, len(r["text"]), r["message_id"], r["ordinal"])
                for r in self.s._q(
                    "SELECT p.message_id, p.ordinal, p.text, m.content FROM message_parts p "
                    "JOIN messages m ON m.id = p.message_id WHERE m.conversation_id = ? "
                    "AND p.text_start IS NULL AND length(p.text) >= ?",
                    [conversation_id, MIN_SHARED_CHARS],
                )
                if (start := part_offset(r["content"], r["text"])) is not None
            ]
            self.db.executemany(
                "UPDATE message_parts SET text = NULL, text_start = ?, text_len = ? "
                "WHERE message_id = ? AND ordinal = ?",
                parts,
            )
            changed += len(parts)
            changed += self._repack(conversation_id)
            # Hashes recorded as hex text (by migration 0007, or by a rewrite
            # before hashes were kept as bytes) stored as their 32 bytes.
            for sql in _HEX_HASHES_TO_BYTES:
                changed += self.db.execute(sql, [conversation_id]).rowcount
        return changed

    def _repack(self, conversation_id: int) -> int:
        """Store the conversation's raw lines as appends store them now: as
        templates where they repeat their message's texts, packed with the
        store's dictionary (trained from these lines if there is none)."""
        records = self.s._q(
            "SELECT id, message_id, raw, raw_template FROM native_records "
            "WHERE conversation_id = ?",
            [conversation_id],
        )
        texts = self._texts(
            [
                r["message_id"]
                for r in records
                if r["message_id"] is not None and not r["raw_template"]
            ]
        )
        lines: list[tuple[Any, str, bool]] = []
        for r in records:
            line = self.s.raw_packing.unpack(r["raw"])  # a template, where raw_template
            templated = bool(r["raw_template"])
            found = texts.get(r["message_id"]) if not templated else None
            template = template_raw(line, *found) if found is not None else None
            if template is not None:
                line, templated = template, True
            lines.append((r, line, templated))
        pack = self._packer([line for _, line, _ in lines])
        updates = []
        for r, line, templated in lines:
            stored_as = r["raw"]
            if (
                isinstance(stored_as, bytes)
                and stored_as[:1] == bytes((DICTIONARY_FORMAT,))
                and templated == bool(r["raw_template"])
            ):
                continue  # packed as appends pack (a dictionary is never replaced)
            packed = pack(line)
            if packed != stored_as or templated != bool(r["raw_template"]):
                updates.append((packed, int(templated), r["id"]))
        self.db.executemany(
            "UPDATE native_records SET raw = ?, raw_template = ? WHERE id = ?", updates
        )
        return len(updates)

    def drop_native_records(self, *, created_before: str, dry_run: bool = False) -> int:
        where = (
            "FROM native_records WHERE message_id IN (SELECT id FROM messages WHERE created_at < ?)"
        )
        with self.s._atomic():
            row = self.s._q1(f"SELECT count(*) AS n {where}", [created_before])
            count = int(row["n"]) if row else 0
            if count and not dry_run:
                self.db.execute(f"DELETE {where}", [created_before])
        return count

    def count_by_conversation(self, conversation_ids: Sequence[int]) -> dict[int, int]:
        counts = dict.fromkeys(conversation_ids, 0)
        ids = builtins.list(counts)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            for r in self.s._q(
                "SELECT conversation_id, messages AS n FROM conversation_totals "
                f"WHERE conversation_id IN ({','.join('?' * len(chunk))})",
                chunk,
            ):
                counts[int(r["conversation_id"])] = int(r["n"])
        return counts


_HEX_HASHES_TO_BYTES = (
    "UPDATE messages SET content_hash = lcm_stored_hash(content_hash) "
    "WHERE conversation_id = ? AND typeof(content_hash) = 'text'",
    "UPDATE message_parts SET content_hash = lcm_stored_hash(content_hash) "
    "WHERE typeof(content_hash) = 'text' "
    "AND message_id IN (SELECT id FROM messages WHERE conversation_id = ?)",
    "UPDATE native_records SET raw_hash = lcm_stored_hash(raw_hash) "
    "WHERE conversation_id = ? AND typeof(raw_hash) = 'text'",
)

# A part's text: stored, or the piece of its message's content it refers to.
_PART_TEXT = (
    "CASE WHEN p.text_start IS NULL THEN p.text "
    "ELSE substr(m.content, p.text_start + 1, p.text_len) END"
)
_PART_COLUMNS = (
    f"p.message_id, p.ordinal, p.kind, {_PART_TEXT} AS text, p.tool_name, p.tool_call_id, "
    "p.metadata, p.content_hash"
)


def _part_row(message_id: int, ordinal: int, p: NewPart, content: str) -> tuple[Any, ...]:
    """A message_parts row; a text that is a piece of ``content`` refers to it."""
    start = part_offset(content, p.text)
    return (
        message_id,
        ordinal,
        p.kind,
        p.text if start is None else None,
        p.tool_name,
        p.tool_call_id,
        dumps_json(p.metadata),
        part_digest(p.kind, p.text, p.tool_name, p.tool_call_id),
        start,
        None if start is None else len(p.text or ""),
    )


def _record_row(
    conversation_id: int, message_id: int | None, r: NewNativeRecord, message: NewMessage | None
) -> list[Any]:
    """A native_records row, its raw line (column 4) not packed yet; a line of
    ``message`` as a template where it repeats its texts."""
    template = (
        template_raw(r.raw, message.content, [p.text for p in message.parts])
        if message is not None
        else None
    )
    return [
        conversation_id,
        message_id,
        r.native_key,
        r.record_type,
        r.raw if template is None else template,
        r.source_path,
        r.line_no,
        r.byte_offset,
        raw_digest(r.raw),
        0 if template is None else 1,
    ]
