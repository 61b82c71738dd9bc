"""The summary DAG, one level at a time.

The page starts from the summaries in the conversation's context (the roots,
what the model sees) and asks for a node's children only when it is opened:
a condensed summary's children are the summaries it was built from, a leaf's
are its source messages, verbatim, a page at a time. From a message the
chain of summaries above it leads back to the root it sits under.
"""

from __future__ import annotations

from typing import Any

from lossless.engine.engine import Engine
from lossless.engine.retrieval import MessageDescription, SummaryDescription
from lossless.errors import InputError, NotFoundError
from lossless.models import Message, Summary

MAX_PAGE = 200
PREVIEW_CHARS = 140


def preview(content: str) -> str:
    """The first line that says something, skipping ``[time] role:`` headers."""
    for line in content.splitlines():
        text = " ".join(line.split())
        if text and not (text.startswith("[") and text.endswith(":")):
            return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
    return ""


def summary_node(engine: Engine, summary: Summary) -> dict[str, Any]:
    store = engine.store
    if summary.kind == "condensed":
        children = len(store.summaries.source_summary_ids(summary.id))
    else:
        children = len(store.summaries.source_message_ids(summary.id))
    return {
        "id": summary.id,
        "kind": summary.kind,
        "depth": summary.depth,
        "token_count": summary.token_count,
        "source_token_count": summary.source_token_count,
        "descendant_count": summary.descendant_count,
        "earliest_at": summary.earliest_at,
        "latest_at": summary.latest_at,
        "child_count": children,
        "child_kind": "summary" if summary.kind == "condensed" else "message",
        "preview": preview(summary.content),
    }


def message_item(message: Message, *, clip: int | None = None) -> dict[str, Any]:
    content = message.content
    clipped = clip is not None and len(content) > clip
    return {
        "id": message.id,
        "conversation_id": message.conversation_id,
        "seq": message.seq,
        "role": message.role,
        "created_at": message.created_at,
        "token_count": message.token_count,
        "content": content[:clip] if clipped else content,
        "clipped": clipped,
        "chars": len(content),
    }


def dag_roots(engine: Engine, conversation_id: int) -> dict[str, Any]:
    """The summaries in the context, with the conversation's counts: read from the
    context's summary items and indexes, never its raw items or messages (a long
    imported session has 100,000 of them in context)."""
    store = engine.store
    figures = store.conversations.listing([conversation_id])[conversation_id]
    in_context = store.context.summaries(conversation_id) if figures.summaries_by_depth else []
    roots = [summary_node(engine, s) for s in in_context]
    return {
        "conversation_id": conversation_id,
        "roots": roots,
        "context_items": figures.context_items,
        "raw_in_context": figures.raw_in_context,
        "context_tokens": figures.context_tokens,
        "message_count": figures.messages,
        "summary_count": sum(figures.summaries_by_depth.values()),
    }


def ancestors(engine: Engine, summary_id: str) -> list[str]:
    """The summaries above ``summary_id``, nearest first, up to the one in context."""
    chain: list[str] = []
    seen = {summary_id}
    current = engine.store.summaries.condensed_into(summary_id)
    while current is not None and current not in seen:
        chain.append(current)
        seen.add(current)
        current = engine.store.summaries.condensed_into(current)
    return chain


def summary_detail(engine: Engine, summary_id: str) -> dict[str, Any]:
    found = engine.describe(summary_id)
    if not isinstance(found, SummaryDescription):
        raise InputError(f"{summary_id!r} is not a summary id (sum_...)")
    node = summary_node(engine, found.summary)
    return {
        **node,
        "conversation_id": found.summary.conversation_id,
        "session_id": found.conversation.session_id if found.conversation else None,
        "content": found.summary.content,
        "file_ids": list(found.summary.file_ids),
        "condensed_into": found.condensed_into,
        "ancestors": ancestors(engine, summary_id),
        "created_at": found.summary.created_at,
    }


def children_page(engine: Engine, summary_id: str, *, offset: int, limit: int) -> dict[str, Any]:
    """One page of what ``summary_id`` was built from (summaries or messages, in order)."""
    if offset < 0 or not 1 <= limit <= MAX_PAGE:
        raise InputError(f"offset must be 0 or more and limit 1..{MAX_PAGE}")
    store = engine.store
    summary = store.summaries.get(summary_id)
    if summary is None:
        raise NotFoundError(f"no summary {summary_id}")
    if summary.kind == "condensed":
        ids = store.summaries.source_summary_ids(summary_id)
        chosen = ids[offset : offset + limit]
        nodes = [
            summary_node(engine, child)
            for child in (store.summaries.get(i) for i in chosen)
            if child is not None
        ]
        return {
            "summary_id": summary_id,
            "kind": "summary",
            "total": len(ids),
            "offset": offset,
            "items": nodes,
        }
    message_ids = store.summaries.source_message_ids(summary_id)
    page = message_ids[offset : offset + limit]
    messages = store.messages.get_many(page) if page else []
    return {
        "summary_id": summary_id,
        "kind": "message",
        "total": len(message_ids),
        "offset": offset,
        "items": [message_item(m, clip=4000) for m in messages],
    }


def message_detail(engine: Engine, message_id: int) -> dict[str, Any]:
    found = engine.describe(str(message_id))
    if not isinstance(found, MessageDescription):
        raise InputError(f"{message_id!r} is not a message id")
    covering = found.covering_summary_id
    return {
        **message_item(found.message),
        "session_id": found.conversation.session_id if found.conversation else None,
        "project": found.conversation.project if found.conversation else None,
        "parts": [
            {
                "ordinal": p.ordinal,
                "kind": p.kind,
                "tool_name": p.tool_name,
                "tool_call_id": p.tool_call_id,
                "text": p.text,
            }
            for p in found.parts
        ],
        "covering_summary_id": covering,
        "summary_path": ([covering, *ancestors(engine, covering)] if covering else []),
        "native_record_count": found.native_record_count,
    }


# Tokens per page of a leaf's source messages: a few screens of text, so a
# leaf of a real session spans several pages.
EXPAND_PAGE_TOKENS = 6000


def expansion_page(
    engine: Engine,
    summary_id: str,
    *,
    cursor: str | None,
    around: int | None,
    token_cap: int = EXPAND_PAGE_TOKENS,
) -> dict[str, Any]:
    """One page of ``summary_id``'s expansion, exactly as ``lcm expand`` pages it
    (``Engine.expand``): a token-capped page, a cursor to go on, one to go back."""
    if token_cap < 1:
        raise InputError("tokens must be 1 or more")
    page = engine.expand(summary_id, depth=1, token_cap=token_cap, cursor=cursor, around=around)
    return {
        "summary_id": summary_id,
        "position": page.position,
        "total": page.total_nodes,
        "cursor": page.cursor,
        "before_cursor": page.before_cursor,
        "token_count": page.token_count,
        "items": [
            {
                "kind": n.kind,
                "id": int(n.id) if n.kind == "message" else n.id,
                "role": n.role,
                "created_at": n.created_at,
                "token_count": n.token_count,
                "content": n.content,
                "clipped": n.clipped,
            }
            for n in page.nodes
        ],
    }
