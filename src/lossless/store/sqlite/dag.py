"""The summary DAG and the active context on SQLite."""

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
from lossless.store.rows import (
    check_text,
    dumps_json,
)
from lossless.store.sqlite.repository import Repo, to_summary

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

    def get(self, summary_id: str) -> Summary | None:
        check_text(summary_id, "summary id")
        row = self.s._q1("SELECT * FROM summaries WHERE id = ?", (summary_id,))
        return None if row is None else to_summary(row)

    def rewrite(self, summary_id: str, content: str) -> None:
        check_text(summary_id, "summary id")
        check_text(content, "summary content")
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
        inputs.restored_summary(summary, source_summary_ids)
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
                    dumps_json(summary.metadata),
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
        return [to_summary(r) for r in self.s._q(sql + " ORDER BY r.rowid", params)]

    def source_message_ids(self, summary_id: str) -> builtins.list[int]:
        check_text(summary_id, "summary id")
        rows = self.s._q(
            "SELECT message_id FROM summary_messages WHERE summary_id = ? ORDER BY ordinal",
            (summary_id,),
        )
        return [int(r["message_id"]) for r in rows]

    def source_summary_ids(self, summary_id: str) -> builtins.list[str]:
        check_text(summary_id, "summary id")
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
        check_text(summary_id, "summary id")
        row = self.s._q1(
            "SELECT summary_id FROM summary_parents WHERE parent_id = ? LIMIT 1", (summary_id,)
        )
        return None if row is None else str(row["summary_id"])

    def escalation(self, *, project: str | None = None) -> EscalationTally:
        check_text(project, "project")
        mine = (
            ""
            if project is None
            else (" AND conversation_id IN (SELECT id FROM conversations WHERE project = ?)")
        )
        params: list[Any] = [] if project is None else [project]
        level = "coalesce(json_extract(metadata, '$.level'), 'unrecorded')"
        levels = {
            str(r["level"]): int(r["n"])
            for r in self.s._q(
                f"SELECT {level} AS level, count(*) AS n FROM summaries WHERE 1=1{mine} GROUP BY 1",
                params,
            )
        }
        latest = self.s._q1(
            f"SELECT {level} AS level, created_at, "
            "json_extract(metadata, '$.escalation_errors') AS why FROM summaries "
            f"WHERE json_extract(metadata, '$.level') IN ('aggressive', 'fallback'){mine} "
            "ORDER BY created_at DESC LIMIT 1",
            params,
        )
        return escalation_tally(levels, latest)

    def count_by_conversation(self, conversation_ids: Sequence[int]) -> dict[int, int]:
        counts = dict.fromkeys(conversation_ids, 0)
        ids = builtins.list(counts)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            for r in self.s._q(
                "SELECT conversation_id, summaries AS n FROM conversation_totals "
                f"WHERE conversation_id IN ({','.join('?' * len(chunk))})",
                chunk,
            ):
                counts[int(r["conversation_id"])] = int(r["n"])
        return counts


class Context(Repo):
    def list(self, conversation_id: int) -> builtins.list[ContextItem]:
        return [
            rows.context_item(r)
            for r in self.s._q(
                "SELECT * FROM context_items WHERE conversation_id = ? ORDER BY ordinal",
                (conversation_id,),
            )
        ]

    def summaries(self, conversation_id: int) -> builtins.list[Summary]:
        return [
            to_summary(r)
            for r in self.s._q(
                "SELECT s.* FROM context_items c JOIN summaries s ON s.id = c.summary_id "
                "WHERE c.conversation_id = ? AND c.item_type = 'summary' ORDER BY c.ordinal",
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
        return self.stats(conversation_id).tokens

    def stats(self, conversation_id: int) -> ContextStats:
        # Kept by the context writes (migration 0012's triggers): one row read,
        # however long the conversation.
        row = self.s._q1(
            "SELECT items, tokens, summaries, message_tokens FROM context_totals "
            "WHERE conversation_id = ?",
            (conversation_id,),
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
                "SELECT * FROM context_items WHERE conversation_id = ? AND ordinal < ? "
                "ORDER BY ordinal DESC LIMIT ?",
                (conversation_id, _END if before_ordinal is None else before_ordinal, limit),
            )
        ]
        found.reverse()
        return found

    def tool_uses_before(
        self, conversation_id: int, call_ids: Sequence[str], before_ordinal: int
    ) -> set[str]:
        wanted = sorted(set(call_ids))
        found: set[str] = set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for r in self.s._q(
                "SELECT DISTINCT p.tool_call_id AS id FROM message_parts p "
                "JOIN context_items c ON c.message_id = p.message_id "
                f"WHERE p.tool_call_id IN ({marks}) AND p.kind = 'tool_use' "
                "AND c.conversation_id = ? AND c.ordinal < ?",
                (*chunk, conversation_id, before_ordinal),
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
                "WHERE c.conversation_id = ? AND c.ordinal < ? AND (c.item_type = 'summary' "
                "OR (m.role = 'user' AND (EXISTS (SELECT 1 FROM message_parts p "
                "WHERE p.message_id = m.id AND p.kind <> 'tool_result') "
                "OR NOT EXISTS (SELECT 1 FROM message_parts p WHERE p.message_id = m.id)))) "
                "ORDER BY c.ordinal DESC LIMIT ?",
                (conversation_id, before_ordinal, limit),
            )
        ]

    def remove_messages(
        self, conversation_id: int, message_ids: Sequence[int]
    ) -> builtins.list[int]:
        removed: builtins.list[int] = []
        ids = builtins.list(dict.fromkeys(message_ids))
        with self.s._atomic():
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                removed.extend(
                    int(r[0])
                    for r in self.db.execute(
                        "DELETE FROM context_items WHERE conversation_id = ? "
                        "AND item_type = 'message' "
                        f"AND message_id IN ({','.join('?' * len(chunk))}) RETURNING message_id",
                        [conversation_id, *chunk],
                    ).fetchall()
                )
        return sorted(removed)

    def restore(self, conversation_id: int, items: Sequence[ContextItem]) -> None:
        for item in items:
            check_text(item.summary_id, "summary id")
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
