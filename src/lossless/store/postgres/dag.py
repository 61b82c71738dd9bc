"""The summary DAG and the active context on PostgreSQL."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from typing import Any

from lossless.errors import (
    NotFoundError,
    StoreError,
)
from lossless.models import (
    ContextItem,
    ContextStats,
    Message,
    NewSummary,
    Summary,
)
from lossless.store import inputs, rows
from lossless.store.contract import EscalationTally
from lossless.store.overview import escalation_tally
from lossless.store.postgres.repository import SUMMARY_COLUMNS, Repo, lock_conversation, to_summary
from lossless.store.rows import (
    check_text,
    dumps_json,
)

# Larger than any ordinal: `newest` without a bound reads from the very end.
_END = 2**62


class Summaries(Repo):
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
        check_text(summary_id, "summary id")
        check_text(content, "summary content")
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
        inputs.restored_summary(summary, source_summary_ids)
        metadata = dumps_json(summary.metadata)
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
        check_text(summary_id, "summary id")
        row = self.s._q1(f"SELECT {SUMMARY_COLUMNS} FROM summaries s WHERE s.id = %s", [summary_id])
        return None if row is None else to_summary(row)

    def list(self, conversation_id: int, *, depth: int | None = None) -> builtins.list[Summary]:
        sql = f"SELECT {SUMMARY_COLUMNS} FROM summaries s WHERE s.conversation_id = %s"
        params: list[Any] = [conversation_id]
        if depth is not None:
            sql += " AND s.depth = %s"
            params.append(depth)
        return [to_summary(r) for r in self.s._q(sql + " ORDER BY s.created_seq", params)]

    def source_message_ids(self, summary_id: str) -> builtins.list[int]:
        check_text(summary_id, "summary id")
        rows = self.s._q(
            "SELECT message_id FROM summary_messages WHERE summary_id = %s ORDER BY ordinal",
            [summary_id],
        )
        return [int(r["message_id"]) for r in rows]

    def source_summary_ids(self, summary_id: str) -> builtins.list[str]:
        check_text(summary_id, "summary id")
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
        check_text(summary_id, "summary id")
        row = self.s._q1(
            "SELECT sp.summary_id FROM summary_parents sp JOIN summaries s ON s.id = sp.summary_id "
            "WHERE sp.parent_id = %s ORDER BY s.created_seq LIMIT 1",
            [summary_id],
        )
        return None if row is None else str(row["summary_id"])

    def escalation(self, *, project: str | None = None) -> EscalationTally:
        check_text(project, "project")
        mine = (
            ""
            if project is None
            else (" AND conversation_id IN (SELECT id FROM conversations WHERE project = %s)")
        )
        params: list[Any] = [] if project is None else [project]
        level = "coalesce(metadata->>'level', 'unrecorded')"
        levels = {
            str(r["level"]): int(r["n"])
            for r in self.s._q(
                f"SELECT {level} AS level, count(*) AS n FROM summaries WHERE true{mine} "
                "GROUP BY 1",
                params,
            )
        }
        latest = self.s._q1(
            f"SELECT {level} AS level, created_at, metadata->>'escalation_errors' AS why "
            f"FROM summaries WHERE metadata->>'level' IN ('aggressive', 'fallback'){mine} "
            "ORDER BY created_at DESC LIMIT 1",
            params,
        )
        return escalation_tally(levels, latest)

    def count_by_conversation(self, conversation_ids: Sequence[int]) -> dict[int, int]:
        counts = dict.fromkeys(conversation_ids, 0)
        if counts:
            for r in self.s._q(
                "SELECT conversation_id, summaries AS n FROM conversation_totals "
                "WHERE conversation_id = ANY(%s)",
                [builtins.list(counts)],
            ):
                counts[int(r["conversation_id"])] = int(r["n"])
        return counts


class Context(Repo):
    def list(self, conversation_id: int) -> builtins.list[ContextItem]:
        return [
            rows.context_item(r)
            for r in self.s._q(
                "SELECT * FROM context_items WHERE conversation_id = %s ORDER BY ordinal",
                [conversation_id],
            )
        ]

    def summaries(self, conversation_id: int) -> builtins.list[Summary]:
        return [
            to_summary(r)
            for r in self.s._q(
                f"SELECT {SUMMARY_COLUMNS} FROM context_items c JOIN summaries s ON s.id = c.summary_id "
                "WHERE c.conversation_id = %s AND c.item_type = 'summary' ORDER BY c.ordinal",
                [conversation_id],
            )
        ]

    def append_messages(self, conversation_id: int, messages: Sequence[Message]) -> None:
        if not messages:
            return
        with self.s._atomic() as conn:
            lock_conversation(conn, conversation_id)
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
            lock_conversation(conn, conversation_id)
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
        return self.stats(conversation_id).tokens

    def stats(self, conversation_id: int) -> ContextStats:
        # Kept by the context writes (migration 0012's triggers): one row read,
        # however long the conversation.
        row = self.s._q1(
            "SELECT items, tokens, summaries, message_tokens FROM context_totals "
            "WHERE conversation_id = %s",
            [conversation_id],
        )
        if row is None:
            return ContextStats(0, 0, 0, 0)
        return ContextStats(
            items=int(row["items"]),
            tokens=int(row["tokens"]),
            summaries=int(row["summaries"]),
            message_tokens=int(row["message_tokens"]),
        )

    def newest(
        self, conversation_id: int, *, before_ordinal: int | None = None, limit: int
    ) -> builtins.list[ContextItem]:
        if limit <= 0:
            return []
        found = [
            rows.context_item(r)
            for r in self.s._q(
                "SELECT * FROM context_items WHERE conversation_id = %s AND ordinal < %s "
                "ORDER BY ordinal DESC LIMIT %s",
                [conversation_id, _END if before_ordinal is None else before_ordinal, limit],
            )
        ]
        found.reverse()
        return found

    def tool_uses_before(
        self, conversation_id: int, call_ids: Sequence[str], before_ordinal: int
    ) -> set[str]:
        wanted = sorted(set(call_ids))
        found: set[str] = set()
        if not wanted:
            return found
        for r in self.s._q(
            "SELECT DISTINCT p.tool_call_id AS id FROM message_parts p "
            "JOIN context_items c ON c.message_id = p.message_id "
            "WHERE p.tool_call_id = ANY(%s) AND p.kind = 'tool_use' "
            "AND c.conversation_id = %s AND c.ordinal < %s",
            [wanted, conversation_id, before_ordinal],
        ):
            found.add(str(r["id"]))
        return found

    def prompt_candidates(
        self, conversation_id: int, *, before_ordinal: int, limit: int
    ) -> builtins.list[ContextItem]:
        if limit <= 0:
            return []
        return [
            rows.context_item(r)
            for r in self.s._q(
                "SELECT c.* FROM context_items c LEFT JOIN messages m ON m.id = c.message_id "
                "WHERE c.conversation_id = %s AND c.ordinal < %s AND (c.item_type = 'summary' "
                "OR (m.role = 'user' AND (EXISTS (SELECT 1 FROM message_parts p "
                "WHERE p.message_id = m.id AND p.kind <> 'tool_result') "
                "OR NOT EXISTS (SELECT 1 FROM message_parts p WHERE p.message_id = m.id)))) "
                "ORDER BY c.ordinal DESC LIMIT %s",
                [conversation_id, before_ordinal, limit],
            )
        ]

    def remove_messages(
        self, conversation_id: int, message_ids: Sequence[int]
    ) -> builtins.list[int]:
        if not message_ids:
            return []
        with self.s._atomic() as conn:
            lock_conversation(conn, conversation_id)
            cur = conn.execute(
                "DELETE FROM context_items WHERE conversation_id = %s AND item_type = 'message' "
                "AND message_id = ANY(%s) RETURNING message_id",
                [conversation_id, builtins.list(dict.fromkeys(message_ids))],
            )
            return sorted(int(r["message_id"]) for r in cur.fetchall())

    def restore(self, conversation_id: int, items: Sequence[ContextItem]) -> None:
        for item in items:
            check_text(item.summary_id, "summary id")
        with self.s._atomic() as conn:
            lock_conversation(conn, conversation_id)
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
