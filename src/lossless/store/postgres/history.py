"""The verbatim history on PostgreSQL: conversations and their messages, parts and native records."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
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
from lossless.store.hashing import message_hash, part_hash, raw_hash
from lossless.store.overview import build_listings, build_overviews
from lossless.store.postgres.repository import (
    MESSAGE_COLUMNS,
    Conn,
    Repo,
    already_decoded,
    lock_conversation,
    to_conversation,
    to_message,
)
from lossless.store.rows import (
    check_text,
    dumps_json,
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
        meta = dumps_json(metadata or {})
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
            return to_conversation(row)

    def discard_if_empty(self, conversation_id: int) -> bool:
        from psycopg import errors as pg_errors

        with self.s._atomic() as conn:
            if conn.execute(
                "SELECT 1 FROM messages WHERE conversation_id = %s LIMIT 1", [conversation_id]
            ).fetchone():
                return False
            try:
                # Every other table pointing at a conversation does so by a
                # foreign key: a row anywhere refuses the delete (a savepoint
                # keeps the refusal from aborting the transaction).
                with conn.transaction():
                    deleted = conn.execute(
                        "DELETE FROM conversations WHERE id = %s", [conversation_id]
                    ).rowcount
            except pg_errors.ForeignKeyViolation:
                return False
            return bool(deleted)

    def get(self, conversation_id: int) -> Conversation | None:
        row = self.s._q1("SELECT * FROM conversations WHERE id = %s", [conversation_id])
        return None if row is None else to_conversation(row)

    def find_by_session(
        self, session_id: str, *, project: str | None = None
    ) -> Conversation | None:
        check_text(session_id, "session id")
        check_text(project, "project")
        sql = "SELECT * FROM conversations WHERE session_id = %s"
        params: list[Any] = [session_id]
        if project is not None:
            sql += " AND project = %s"
            params.append(project)
        row = self.s._q1(sql + " ORDER BY created_at DESC, id DESC LIMIT 1", params)
        return None if row is None else to_conversation(row)

    def list(
        self, *, project: str | None = None, client: str | None = None, limit: int | None = None
    ) -> builtins.list[Conversation]:
        check_text(project, "project")
        check_text(client, "client")
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
        return [to_conversation(r) for r in self.s._q(sql, params)]

    def overview(self, conversation_ids: Sequence[int]) -> dict[int, ConversationOverview]:
        ids = builtins.list(dict.fromkeys(conversation_ids))
        if not ids:
            return {}
        return build_overviews(
            ids,
            messages=self.s._q(
                "SELECT conversation_id, count(*) AS n, sum(token_count) AS tokens, "
                "max(created_at) AS last_at FROM messages "
                "WHERE conversation_id = ANY(%s) GROUP BY conversation_id",
                [ids],
            ),
            prompts=self.s._q(
                f"SELECT m.conversation_id, left(m.content, {OVERVIEW_PROMPT_CHARS}) AS prompt "
                "FROM messages m JOIN (SELECT conversation_id, min(seq) AS seq FROM messages "
                "WHERE role = 'user' AND conversation_id = ANY(%s) GROUP BY conversation_id) f "
                "ON f.conversation_id = m.conversation_id AND f.seq = m.seq",
                [ids],
            ),
            summaries=self.s._q(
                "SELECT conversation_id, count(*) AS n, max(depth) AS max_depth FROM summaries "
                "WHERE conversation_id = ANY(%s) GROUP BY conversation_id",
                [ids],
            ),
            context=self.s._q(
                "SELECT conversation_id, sum(token_count) AS tokens FROM context_items "
                "WHERE conversation_id = ANY(%s) GROUP BY conversation_id",
                [ids],
            ),
        )

    def listing(self, conversation_ids: Sequence[int]) -> dict[int, ConversationListing]:
        ids = builtins.list(dict.fromkeys(conversation_ids))
        if not ids:
            return {}
        return build_listings(
            ids,
            # The kept totals (migration 0014), not a count of the rows.
            messages=self.s._q(
                "SELECT conversation_id, messages AS n FROM conversation_totals "
                "WHERE conversation_id = ANY(%s)",
                [ids],
            ),
            last=self._last_activity(ids),
            summaries=self.s._q(
                "SELECT conversation_id, depth, count(*) AS n FROM summaries "
                "WHERE conversation_id = ANY(%s) GROUP BY conversation_id, depth",
                [ids],
            ),
            context=self._context_figures(ids),
        )

    def _context_figures(self, ids: Sequence[int]) -> builtins.list[dict[str, Any]]:
        """Each conversation's context counts (``context.stats``: no listing of its
        items) and the source tokens of the summaries in it, read through the
        summary items only."""
        stats = {cid: self.s.context.stats(cid) for cid in ids}
        sources: dict[int, int] = {}
        # Only conversations with summaries in context: a long raw one is not scanned.
        compacted = [cid for cid, s in stats.items() if s.summaries]
        if compacted:
            for r in self.s._q(
                "SELECT c.conversation_id, sum(s.source_token_count) AS source "
                "FROM context_items c JOIN summaries s ON s.id = c.summary_id "
                "WHERE c.conversation_id = ANY(%s) AND c.item_type = 'summary' "
                "GROUP BY c.conversation_id",
                [compacted],
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
        # The newest message by seq: one probe of the (conversation_id, seq)
        # index each, where max(created_at) would read every message row.
        return self.s._q(
            "SELECT c.id AS conversation_id, (SELECT m.created_at FROM messages m "
            "WHERE m.conversation_id = c.id ORDER BY m.seq DESC LIMIT 1) AS last_at "
            "FROM conversations c WHERE c.id = ANY(%s)",
            [builtins.list(ids)],
        )

    def last_activity(self, conversation_ids: Sequence[int]) -> dict[int, str | None]:
        ids = builtins.list(dict.fromkeys(conversation_ids))
        found: dict[int, str | None] = dict.fromkeys(ids)
        if ids:
            for r in self._last_activity(ids):
                found[int(r["conversation_id"])] = r["last_at"]
        return found

    def update_metadata(self, conversation_id: int, metadata: JSON) -> None:
        dumps_json(metadata)
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
                [dumps_json(merged), conversation_id],
            )

    def rewrite(self, conversation_id: int, *, title: str | None, metadata: JSON) -> None:
        check_text(title, "title")
        meta = dumps_json(metadata or {})
        with self.s._atomic() as conn:
            cur = conn.execute(
                "UPDATE conversations SET title = %s, metadata = %s::json WHERE id = %s",
                [title, meta, conversation_id],
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no conversation {conversation_id}")


class Messages(Repo):
    def append(self, conversation_id: int, messages: Sequence[NewMessage]) -> AppendResult:
        inputs.new_messages(messages)
        if not messages:
            return AppendResult(inserted=[], skipped=0)
        now = utc_now_iso()
        with self.s._atomic() as conn:
            lock_conversation(conn, conversation_id)
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
                    "created_at, ingest_key, metadata, content_hash) "
                    "SELECT %s, u.* FROM unnest(%s::bigint[], %s::text[], %s::text[], "
                    "%s::bigint[], %s::text[], %s::text[], %s::json[], %s::text[]) AS u "
                    "RETURNING id, seq",
                    [
                        conversation_id,
                        [seq for seq, _, _, _ in planned],
                        [m.role for _, m, _, _ in planned],
                        [m.content for _, m, _, _ in planned],
                        [tokens for _, _, tokens, _ in planned],
                        [at for _, _, _, at in planned],
                        [m.ingest_key for _, m, _, _ in planned],
                        [dumps_json(m.metadata) for _, m, _, _ in planned],
                        [message_hash(m.role, m.content) for _, m, _, _ in planned],
                    ],
                )
            }
            # A part text that is a piece of the content refers to it (stored_once).
            parts = [
                (ids[seq], i, p, part_offset(m.content, p.text))
                for seq, m, _, _ in planned
                for i, p in enumerate(m.parts)
            ]
            if parts:
                conn.execute(
                    "INSERT INTO message_parts(message_id, ordinal, kind, text, tool_name, "
                    "tool_call_id, metadata, content_hash, text_start, text_len) "
                    "SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::text[], "
                    "%s::text[], %s::text[], %s::json[], %s::text[], %s::integer[], "
                    "%s::integer[])",
                    [
                        [mid for mid, _, _, _ in parts],
                        [i for _, i, _, _ in parts],
                        [p.kind for _, _, p, _ in parts],
                        [p.text if at is None else None for _, _, p, at in parts],
                        [p.tool_name for _, _, p, _ in parts],
                        [p.tool_call_id for _, _, p, _ in parts],
                        [dumps_json(p.metadata) for _, _, p, _ in parts],
                        [
                            part_hash(p.kind, p.text, p.tool_name, p.tool_call_id)
                            for _, _, p, _ in parts
                        ],
                        [at for _, _, _, at in parts],
                        [None if at is None else len(p.text or "") for _, _, p, at in parts],
                    ],
                )
            records = [
                (ids[seq], r, template_raw(r.raw, m.content, [p.text for p in m.parts]))
                for seq, m, _, _ in planned
                for r in m.native_records
            ]
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
        inputs.native_records(records)
        if not records:
            return 0
        with self.s._atomic() as conn:
            return _insert_records(conn, conversation_id, [(None, r, None) for r in records])

    def get(self, message_id: int) -> Message | None:
        row = self.s._q1(f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.id = %s", [message_id])
        return None if row is None else to_message(row)

    def get_many(self, message_ids: Sequence[int]) -> builtins.list[Message]:
        if not message_ids:
            return []
        rows = self.s._q(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.id = ANY(%s) "
            "ORDER BY m.conversation_id, m.seq",
            [list(dict.fromkeys(message_ids))],
        )
        return [to_message(r) for r in rows]

    def list(
        self, conversation_id: int, *, after_seq: int | None = None, limit: int | None = None
    ) -> builtins.list[Message]:
        if limit == 0:
            return []
        sql = (
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.conversation_id = %s "
            "AND m.seq > %s ORDER BY m.seq"
        )
        params: list[Any] = [conversation_id, -1 if after_seq is None else after_seq]
        if limit is not None and limit > 0:
            sql += " LIMIT %s"
            params.append(limit)
        return [to_message(r) for r in self.s._q(sql, params)]

    def iter_all(self, conversation_id: int, *, batch: int = 1000) -> Iterator[Message]:
        return rows.iter_in_pages(
            lambda after, limit: self.list(conversation_id, after_seq=after, limit=limit), batch
        )

    def parts(self, message_ids: Sequence[int]) -> dict[int, builtins.list[Part]]:
        result: dict[int, builtins.list[Part]] = {mid: [] for mid in message_ids}
        if not result:
            return result
        for r in self.s._q(
            f"SELECT {_PART_COLUMNS} FROM message_parts p JOIN messages m ON m.id = p.message_id "
            "WHERE p.message_id = ANY(%s) ORDER BY p.message_id, p.ordinal",
            [builtins.list(result)],
        ):
            result[r["message_id"]].append(rows.part(r, already_decoded))
        return result

    def native_records(
        self, conversation_id: int, *, message_id: int | None = None
    ) -> builtins.list[NativeRecord]:
        sql = "SELECT * FROM native_records WHERE conversation_id = %s"
        params: list[Any] = [conversation_id]
        if message_id is not None:
            sql += " AND message_id = %s"
            params.append(message_id)
        records = self.s._q(sql + " ORDER BY id", params)
        return [
            rows.native_record(r, raw) for r, raw in zip(records, self._raws(records), strict=True)
        ]

    def has_native_keys(self, conversation_id: int, keys: Sequence[str]) -> set[str]:
        for key in keys:
            check_text(key, "native key")
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

    def native_raw_hashes(self, conversation_id: int, keys: Sequence[str]) -> dict[str, str | None]:
        if not keys:
            return {}
        return {
            r["native_key"]: r["raw_hash"]
            for r in self.s._q(
                "SELECT native_key, raw_hash FROM native_records WHERE conversation_id = %s "
                "AND native_key = ANY(%s)",
                [conversation_id, list(dict.fromkeys(keys))],
            )
        }

    def native_records_by_key(
        self, conversation_id: int, keys: Sequence[str]
    ) -> dict[str, NativeRecord]:
        if not keys:
            return {}
        records = self.s._q(
            "SELECT * FROM native_records WHERE conversation_id = %s AND native_key = ANY(%s)",
            [conversation_id, list(dict.fromkeys(keys))],
        )
        return {
            r["native_key"]: rows.native_record(r, raw)
            for r, raw in zip(records, self._raws(records), strict=True)
        }

    def count(self, conversation_id: int | None = None) -> int:
        # The kept totals (migration 0014), not a count of the rows.
        if conversation_id is None:
            row = self.s._q1("SELECT coalesce(sum(messages), 0) AS n FROM conversation_totals")
        else:
            row = self.s._q1(
                "SELECT messages AS n FROM conversation_totals WHERE conversation_id = %s",
                [conversation_id],
            )
        return int(row["n"]) if row else 0

    def high_water(self) -> int:
        row = self.s._q1("SELECT coalesce(max(id), 0) AS n FROM messages")
        return int(row["n"]) if row else 0

    def last(self, conversation_id: int) -> Message | None:
        row = self.s._q1(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.conversation_id = %s "
            "ORDER BY m.seq DESC LIMIT 1",
            [conversation_id],
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
        with self.s._atomic() as conn:
            self._materialize(conn, message_id)
            # A sanctioned rewrite (redaction) records the new content's hashes.
            cur = conn.execute(
                "UPDATE messages SET content = %s, metadata = %s::json WHERE id = %s "
                "RETURNING role",
                [content, meta, message_id],
            )
            found = cur.fetchone()
            if found is None:
                raise NotFoundError(f"no message {message_id}")
            conn.execute(
                "UPDATE messages SET content_hash = %s WHERE id = %s",
                [message_hash(found["role"], content), message_id],
            )
            for row in part_rows:
                cur = conn.execute(
                    "UPDATE message_parts SET text = %s, metadata = %s::json "
                    "WHERE message_id = %s AND ordinal = %s "
                    "RETURNING kind, text, tool_name, tool_call_id",
                    list(row),
                )
                got = cur.fetchone()
                if got is None:
                    raise NotFoundError(f"message {message_id} has no part {row[3]}")
                conn.execute(
                    "UPDATE message_parts SET content_hash = %s "
                    "WHERE message_id = %s AND ordinal = %s",
                    [
                        part_hash(got["kind"], got["text"], got["tool_name"], got["tool_call_id"]),
                        message_id,
                        row[3],
                    ],
                )

    def hashed_rows(self, conversation_id: int) -> builtins.list[HashedRow]:
        out = [
            HashedRow("message", r["id"], None, None, r["content_hash"], (r["role"], r["content"]))
            for r in self.s._q(
                "SELECT id, role, content, content_hash FROM messages "
                "WHERE conversation_id = %s ORDER BY seq",
                [conversation_id],
            )
        ]
        out += [
            HashedRow(
                "part",
                r["message_id"],
                r["ordinal"],
                None,
                r["content_hash"],
                (r["kind"], r["text"], r["tool_name"], r["tool_call_id"]),
            )
            for r in self.s._q(
                f"SELECT p.message_id, p.ordinal, p.kind, {_PART_TEXT} AS text, p.tool_name, "
                "p.tool_call_id, p.content_hash FROM message_parts p "
                "JOIN messages m ON m.id = p.message_id "
                "WHERE m.conversation_id = %s ORDER BY m.seq, p.ordinal",
                [conversation_id],
            )
        ]
        records = self.s._q(
            "SELECT id, message_id, raw, raw_hash, raw_template FROM native_records "
            "WHERE conversation_id = %s ORDER BY id",
            [conversation_id],
        )
        out += [
            HashedRow("native_record", r["message_id"], None, r["id"], r["raw_hash"], (raw,))
            for r, raw in zip(records, self._raws(records), strict=True)
        ]
        return out

    def _texts(
        self, message_ids: Sequence[int]
    ) -> dict[int, tuple[str, builtins.list[str | None]]]:
        """Each message's content and part texts by ordinal (what templates refer to)."""
        ids = builtins.list(dict.fromkeys(message_ids))
        found: dict[int, tuple[str, builtins.list[str | None]]] = {
            int(r["id"]): (r["content"], [])
            for r in self.s._q("SELECT id, content FROM messages WHERE id = ANY(%s)", [ids])
        }
        for r in self.s._q(
            f"SELECT p.message_id, {_PART_TEXT} AS text FROM message_parts p "
            "JOIN messages m ON m.id = p.message_id WHERE p.message_id = ANY(%s) "
            "ORDER BY p.message_id, p.ordinal",
            [ids],
        ):
            found[int(r["message_id"])][1].append(r["text"])
        return found

    def _raws(self, records: Sequence[Any]) -> builtins.list[str]:
        """The raw lines of native record rows, templates rebuilt."""
        templated = [int(r["message_id"]) for r in records if r["raw_template"]]
        texts = self._texts(templated) if templated else {}
        out = []
        for r in records:
            raw = r["raw"]
            if r["raw_template"]:
                content, parts = texts[int(r["message_id"])]
                raw = expand_raw(raw, content, parts)
            out.append(raw)
        return out

    def _materialize(self, conn: Conn, message_id: int) -> None:
        """Store the message's referring parts and raw lines verbatim again, so a
        rewrite of its texts cannot change them (see ``lossless.store.stored_once``)."""
        records = conn.execute(
            "SELECT id, message_id, raw, raw_template FROM native_records "
            "WHERE message_id = %s AND raw_template",
            [message_id],
        ).fetchall()
        for r, raw in zip(records, self._raws(records), strict=True):
            conn.execute(
                "UPDATE native_records SET raw = %s, raw_template = false WHERE id = %s",
                [raw, r["id"]],
            )
        conn.execute(
            "UPDATE message_parts p SET text = substr(m.content, p.text_start + 1, p.text_len), "
            "text_start = NULL, text_len = NULL FROM messages m "
            "WHERE m.id = p.message_id AND p.message_id = %s AND p.text_start IS NOT NULL",
            [message_id],
        )

    def rewrite_native_record(self, record_id: int, raw: str) -> None:
        check_text(raw, "native record")
        with self.s._atomic() as conn:
            cur = conn.execute(
                "UPDATE native_records SET raw = %s, raw_hash = %s, raw_template = false "
                "WHERE id = %s",
                [raw, raw_hash(raw), record_id],
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no native record {record_id}")

    def store_texts_once(self, conversation_id: int) -> int:
        with self.s._atomic() as conn:
            parts = [
                (start, len(r["text"]), r["message_id"], r["ordinal"])
                for r in conn.execute(
                    "SELECT p.message_id, p.ordinal, p.text, m.content FROM message_parts p "
                    "JOIN messages m ON m.id = p.message_id WHERE m.conversation_id = %s "
                    "AND p.text_start IS NULL AND length(p.text) >= %s",
                    [conversation_id, MIN_SHARED_CHARS],
                ).fetchall()
                if (start := part_offset(r["content"], r["text"])) is not None
            ]
            if parts:
                conn.cursor().executemany(
                    "UPDATE message_parts SET text = NULL, text_start = %s, text_len = %s "
                    "WHERE message_id = %s AND ordinal = %s",
                    parts,
                )
            records = conn.execute(
                "SELECT id, message_id, raw FROM native_records "
                "WHERE conversation_id = %s AND NOT raw_template AND message_id IS NOT NULL",
                [conversation_id],
            ).fetchall()
            texts = self._texts([r["message_id"] for r in records])
            updates = []
            for r in records:
                found = texts.get(r["message_id"])
                template = template_raw(r["raw"], *found) if found is not None else None
                if template is not None:
                    updates.append((template, r["id"]))
            if updates:
                conn.cursor().executemany(
                    "UPDATE native_records SET raw = %s, raw_template = true WHERE id = %s",
                    updates,
                )
        return len(parts) + len(updates)

    def drop_native_records(self, *, created_before: str, dry_run: bool = False) -> int:
        where = (
            "FROM native_records WHERE message_id IN "
            "(SELECT id FROM messages WHERE created_at < %s)"
        )
        with self.s._atomic() as conn:
            row = conn.execute(f"SELECT count(*) AS n {where}", [created_before]).fetchone()
            count = int(row["n"]) if row else 0
            if count and not dry_run:
                conn.execute(f"DELETE {where}", [created_before])
        return count

    def count_by_conversation(self, conversation_ids: Sequence[int]) -> dict[int, int]:
        counts = dict.fromkeys(conversation_ids, 0)
        if counts:
            for r in self.s._q(
                "SELECT conversation_id, messages AS n FROM conversation_totals "
                "WHERE conversation_id = ANY(%s)",
                [builtins.list(counts)],
            ):
                counts[int(r["conversation_id"])] = int(r["n"])
        return counts


def _insert_records(
    conn: Conn,
    conversation_id: int,
    records: Sequence[tuple[int | None, NewNativeRecord, str | None]],
) -> int:
    """Insert ``(message id, record, template or None)`` rows (see stored_once)."""
    cur = conn.execute(
        "INSERT INTO native_records(conversation_id, message_id, native_key, record_type, raw, "
        "source_path, line_no, byte_offset, raw_hash, raw_template) "
        "SELECT %s, u.* FROM unnest(%s::bigint[], "
        "%s::text[], %s::text[], %s::text[], %s::text[], %s::bigint[], %s::bigint[], "
        "%s::text[], %s::boolean[]) AS u "
        "ON CONFLICT (conversation_id, native_key) DO NOTHING",
        [
            conversation_id,
            [mid for mid, _, _ in records],
            [r.native_key for _, r, _ in records],
            [r.record_type for _, r, _ in records],
            [r.raw if t is None else t for _, r, t in records],
            [r.source_path for _, r, _ in records],
            [r.line_no for _, r, _ in records],
            [r.byte_offset for _, r, _ in records],
            [raw_hash(r.raw) for _, r, _ in records],
            [t is not None for _, _, t in records],
        ],
    )
    return max(cur.rowcount, 0)


# A part's text: stored, or the piece of its message's content it refers to.
_PART_TEXT = (
    "CASE WHEN p.text_start IS NULL THEN p.text "
    "ELSE substr(m.content, p.text_start + 1, p.text_len) END"
)
_PART_COLUMNS = (
    f"p.message_id, p.ordinal, p.kind, {_PART_TEXT} AS text, p.tool_name, p.tool_call_id, "
    "p.metadata, p.content_hash"
)
