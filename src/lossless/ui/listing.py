"""The projects-and-conversations page: filtered, sorted, paged on the server.

Only the conversation records are read for the whole store (one row each);
the figures that cost a query per conversation (message count, last
activity, context tokens, summaries) are read for the rows of the page shown,
except for the sort key when sorting by messages or by last activity (two
index lookups per conversation). Sub-agents are listed under their parent.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from lossless.engine.compaction_requests import LAST_ERROR, is_pending
from lossless.engine.engine import Engine
from lossless.errors import InputError
from lossless.models import Conversation

SortKey = Literal["last", "created", "messages", "project", "session"]
SORT_KEYS: tuple[SortKey, ...] = ("last", "created", "messages", "project", "session")
MAX_PAGE = 200
# Sub-agents shown under one parent on a page; the rest are counted.
MAX_CHILDREN = 50


@dataclass(frozen=True, slots=True)
class ListRequest:
    query: str = ""
    project: str | None = None
    client: str | None = None
    sort: SortKey = "last"
    descending: bool = True
    offset: int = 0
    limit: int = 50

    def __post_init__(self) -> None:
        if self.sort not in SORT_KEYS:
            raise InputError(f"unknown sort {self.sort!r}; use one of {', '.join(SORT_KEYS)}")
        if self.offset < 0 or not 1 <= self.limit <= MAX_PAGE:
            raise InputError(f"offset must be 0 or more and limit 1..{MAX_PAGE}")


def _matches(conversation: Conversation, request: ListRequest) -> bool:
    if request.project is not None and conversation.project != request.project:
        return False
    if request.client is not None and conversation.client != request.client:
        return False
    if request.query:
        needle = request.query.casefold()
        haystack = " ".join(
            [
                str(conversation.id),
                conversation.session_id,
                conversation.project,
                conversation.title or "",
            ]
        ).casefold()
        return needle in haystack
    return True


def conversation_row(engine: Engine, conversation: Conversation) -> dict[str, Any]:
    """Everything the list shows about one conversation.

    A conversation never compacted is read from counts: its context is its
    messages, all raw (100,000 items to list in a long imported session). A
    compacted one lists its context, which compaction keeps short.
    """
    store = engine.store
    summaries = store.summaries.list(conversation.id)
    count = store.messages.count(conversation.id)
    if summaries:
        items = store.context.list(conversation.id)
        by_id = {s.id: s for s in summaries}
        roots = [by_id[i.summary_id] for i in items if i.summary_id in by_id]
        raw_in_context = sum(1 for i in items if i.message_id is not None)
        context_tokens = sum(i.token_count for i in items)
        context_items = len(items)
    else:
        roots = []
        raw_in_context = context_items = count
        context_tokens = store.context.token_total(conversation.id)
    last = store.messages.last(conversation.id)
    depths = Counter(s.depth for s in summaries)
    meta = conversation.metadata or {}
    if meta.get(LAST_ERROR):
        state = "error"
    elif is_pending(conversation):
        state = "pending"
    elif summaries:
        state = "compacted"
    else:
        state = "raw"
    return {
        "id": conversation.id,
        "session_id": conversation.session_id,
        "project": conversation.project,
        "client": conversation.client,
        "title": conversation.title,
        "parent_id": conversation.parent_id,
        "created_at": conversation.created_at,
        "last_activity": last.created_at if last else conversation.created_at,
        "messages": count,
        # What is stored: the raw context plus what the summaries in it stand for.
        "history_tokens": context_tokens
        - sum(r.token_count for r in roots)
        + sum(r.source_token_count for r in roots),
        "context_tokens": context_tokens,
        "context_items": context_items,
        "raw_in_context": raw_in_context,
        "summaries": len(summaries),
        "summaries_by_depth": {str(d): n for d, n in sorted(depths.items())},
        "max_depth": max(depths, default=-1),
        "compaction": state,
        "compaction_error": meta.get(LAST_ERROR),
    }


def list_conversations(engine: Engine, request: ListRequest) -> dict[str, Any]:
    store = engine.store
    everything = store.conversations.list()
    chosen = [c for c in everything if _matches(c, request)]
    chosen_ids = {c.id for c in chosen}
    children: dict[int, list[Conversation]] = {}
    top: list[Conversation] = []
    for conversation in chosen:
        if conversation.parent_id is not None and conversation.parent_id in chosen_ids:
            children.setdefault(conversation.parent_id, []).append(conversation)
        else:
            top.append(conversation)

    def key(conversation: Conversation) -> Any:
        if request.sort == "created":
            return (conversation.created_at, conversation.id)
        if request.sort == "project":
            return (conversation.project, conversation.created_at)
        if request.sort == "session":
            return (conversation.session_id, conversation.id)
        if request.sort == "messages":
            return (store.messages.count(conversation.id), conversation.id)
        last = store.messages.last(conversation.id)
        return (last.created_at if last else conversation.created_at, conversation.id)

    top.sort(key=key, reverse=request.descending)
    page = top[request.offset : request.offset + request.limit]
    rows = []
    for conversation in page:
        row = conversation_row(engine, conversation)
        kids = children.get(conversation.id, [])
        row["children"] = [conversation_row(engine, c) for c in kids[:MAX_CHILDREN]]
        row["more_children"] = max(0, len(kids) - MAX_CHILDREN)
        rows.append(row)
    return {
        "total": len(top),
        "total_with_subagents": len(chosen),
        "offset": request.offset,
        "limit": request.limit,
        "sort": request.sort,
        "descending": request.descending,
        "rows": rows,
        "projects": sorted({c.project for c in everything}),
        "clients": sorted({c.client for c in everything}),
    }
