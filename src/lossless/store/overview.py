"""Listings' figures from grouped queries, assembled alike for both backends.

``ConversationRepository.overview`` and ``ConversationRepository.listing``:

Each backend runs the same four ``GROUP BY conversation_id`` queries (messages,
first user prompt, summaries, active context) and hands the rows here, so a
listing of any number of conversations costs four queries, not four per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lossless.store.contract import ConversationListing, ConversationOverview, EscalationTally

# sqlite3.Row or a psycopg dict row: both index by column name.
Row = Any


def build_overviews(
    conversation_ids: Sequence[int],
    *,
    messages: Iterable[Row],
    prompts: Iterable[Row],
    summaries: Iterable[Row],
    context: Iterable[Row],
) -> dict[int, ConversationOverview]:
    """Rows keyed by ``conversation_id``: ``messages`` (n, tokens, last_at),
    ``prompts`` (prompt), ``summaries`` (n, max_depth), ``context`` (tokens)."""
    fields: dict[int, dict[str, Any]] = {int(i): {} for i in conversation_ids}
    for r in messages:
        fields[int(r["conversation_id"])].update(
            messages=int(r["n"]),
            message_tokens=int(r["tokens"] or 0),
            last_activity=r["last_at"],
        )
    for r in prompts:
        fields[int(r["conversation_id"])]["first_prompt"] = r["prompt"]
    for r in summaries:
        fields[int(r["conversation_id"])].update(
            summaries=int(r["n"]), max_depth=None if r["max_depth"] is None else int(r["max_depth"])
        )
    for r in context:
        fields[int(r["conversation_id"])]["context_tokens"] = int(r["tokens"] or 0)
    return {cid: ConversationOverview(**values) for cid, values in fields.items()}


def build_listings(
    conversation_ids: Sequence[int],
    *,
    messages: Iterable[Row],
    last: Iterable[Row],
    summaries: Iterable[Row],
    context: Iterable[Row],
) -> dict[int, ConversationListing]:
    """Rows keyed by ``conversation_id``: ``messages`` (n), ``last`` (last_at),
    ``summaries`` (depth, n: one row per depth), ``context`` (items, tokens,
    raw, history)."""
    fields: dict[int, dict[str, Any]] = {int(i): {} for i in conversation_ids}
    for r in messages:
        fields[int(r["conversation_id"])]["messages"] = int(r["n"])
    for r in last:
        fields[int(r["conversation_id"])]["last_activity"] = r["last_at"]
    for r in summaries:
        depths = fields[int(r["conversation_id"])].setdefault("summaries_by_depth", {})
        depths[int(r["depth"])] = int(r["n"])
    for r in context:
        fields[int(r["conversation_id"])].update(
            context_items=int(r["items"]),
            context_tokens=int(r["tokens"] or 0),
            raw_in_context=int(r["raw"] or 0),
            history_tokens=int(r["history"] or 0),
        )
    return {cid: ConversationListing(**values) for cid, values in fields.items()}


def escalation_tally(levels: dict[str, int], latest: Row | None) -> EscalationTally:
    """``SummaryRepository.escalation`` from its level counts and newest degraded row."""
    if latest is None:
        return EscalationTally(levels=levels)
    return EscalationTally(
        levels=levels,
        latest_level=str(latest["level"]),
        latest_at=str(latest["created_at"]),
        latest_why=None if latest["why"] is None else str(latest["why"]),
    )
