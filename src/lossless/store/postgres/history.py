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
    AppendResult,
    HashedRow,
    PartRewrite,
)
from lossless.store.hashing import message_hash, part_hash, raw_hash
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
            parts = [(ids[seq], i, p) for seq, m, _, _ in planned for i, p in enumerate(m.parts)]
            if parts:
                conn.execute(
                    "INSERT INTO message_parts(message_id, ordinal, kind, text, tool_name, "
                    "tool_call_id, metadata, content_hash) SELECT * FROM unnest(%s::bigint[], "
                    "%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::json[], "
                    "%s::text[])",
                    [
                        [mid for mid, _, _ in parts],
                        [i for _, i, _ in parts],
                        [p.kind for _, _, p in parts],
                        [p.text for _, _, p in parts],
                        [p.tool_name for _, _, p in parts],
                        [p.tool_call_id for _, _, p in parts],
                        [dumps_json(p.metadata) for _, _, p in parts],
                        [
                            part_hash(p.kind, p.text, p.tool_name, p.tool_call_id)
                            for _, _, p in parts
                        ],
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
        inputs.native_records(records)
        if not records:
            return 0
        with self.s._atomic() as conn:
            return _insert_records(conn, conversation_id, [(None, r) for r in records])

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
            "SELECT * FROM message_parts WHERE message_id = ANY(%s) ORDER BY message_id, ordinal",
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
        return [rows.native_record(r, r["raw"]) for r in self.s._q(sql + " ORDER BY id", params)]

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
        return {
            r["native_key"]: rows.native_record(r, r["raw"])
            for r in self.s._q(
                "SELECT * FROM native_records WHERE conversation_id = %s AND native_key = ANY(%s)",
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
                "SELECT p.message_id, p.ordinal, p.kind, p.text, p.tool_name, p.tool_call_id, "
                "p.content_hash FROM message_parts p JOIN messages m ON m.id = p.message_id "
                "WHERE m.conversation_id = %s ORDER BY m.seq, p.ordinal",
                [conversation_id],
            )
        ]
        out += [
            HashedRow("native_record", r["message_id"], None, r["id"], r["raw_hash"], (r["raw"],))
            for r in self.s._q(
                "SELECT id, message_id, raw, raw_hash FROM native_records "
                "WHERE conversation_id = %s ORDER BY id",
                [conversation_id],
            )
        ]
        return out

    def rewrite_native_record(self, record_id: int, raw: str) -> None:
        check_text(raw, "native record")
        with self.s._atomic() as conn:
            cur = conn.execute(
                "UPDATE native_records SET raw = %s, raw_hash = %s WHERE id = %s",
                [raw, raw_hash(raw), record_id],
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no native record {record_id}")

    def count_by_conversation(self, conversation_ids: Sequence[int]) -> dict[int, int]:
        counts = dict.fromkeys(conversation_ids, 0)
        if counts:
            for r in self.s._q(
                "SELECT conversation_id, count(*) AS n FROM messages "
                "WHERE conversation_id = ANY(%s) GROUP BY conversation_id",
                [builtins.list(counts)],
            ):
                counts[int(r["conversation_id"])] = int(r["n"])
        return counts


def _insert_records(
    conn: Conn, conversation_id: int, records: Sequence[tuple[int | None, NewNativeRecord]]
) -> int:
    cur = conn.execute(
        "INSERT INTO native_records(conversation_id, message_id, native_key, record_type, raw, "
        "source_path, line_no, byte_offset, raw_hash) SELECT %s, u.* FROM unnest(%s::bigint[], "
        "%s::text[], %s::text[], %s::text[], %s::text[], %s::bigint[], %s::bigint[], "
        "%s::text[]) AS u "
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
            [raw_hash(r.raw) for _, r in records],
        ],
    )
    return max(cur.rowcount, 0)
