"""The projects-and-conversations page: filtered, sorted, paged on the server.

Only the conversation records are read for the whole store (one row each),
and the sort key when sorting by messages (a grouped count over an index) or
by last activity (one index probe per conversation); the other figures
(context tokens, summaries by depth) are read for the rows of the page shown,
in a fixed number of queries. Sub-agents are listed under their parent.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from lossless.engine.compaction_requests import LAST_ERROR, is_pending
from lossless.engine.engine import Engine
from lossless.errors import InputError
from lossless.models import Conversation
from lossless.store.contract import ConversationListing

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


def conversation_rows(
    engine: Engine, conversations: Sequence[Conversation]
) -> dict[int, dict[str, Any]]:
    """Everything the list shows about each conversation, in a fixed number of
    queries (``ConversationRepository.listing``: indexes and context rows, never
    the messages' rows, so a 500,000-message conversation costs what a short one does)."""
    figures = engine.store.conversations.listing([c.id for c in conversations])
    return {c.id: _row(c, figures[c.id]) for c in conversations}


def conversation_row(engine: Engine, conversation: Conversation) -> dict[str, Any]:
    """The list's row of one conversation."""
    return conversation_rows(engine, [conversation])[conversation.id]


def _row(conversation: Conversation, figures: ConversationListing) -> dict[str, Any]:
    depths = figures.summaries_by_depth
    summaries = sum(depths.values())
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
        "last_activity": figures.last_activity or conversation.created_at,
        "messages": figures.messages,
        # What is stored: the raw context plus what the summaries in it stand for.
        "history_tokens": figures.history_tokens,
        "context_tokens": figures.context_tokens,
        "context_items": figures.context_items,
        "raw_in_context": figures.raw_in_context,
        "summaries": summaries,
        "summaries_by_depth": {str(d): n for d, n in sorted(depths.items())},
        "max_depth": max(depths, default=-1),
        "compaction": state,
        "compaction_error": meta.get(LAST_ERROR),
    }


class SortKeys:
    """Every conversation's message count or last activity, for sorting the list.

    Reading them costs a grouped count over an index or an index probe per
    conversation: a few hundred ms for a store of many thousands of sessions.
    They are kept until a message is added anywhere (the store's message high
    water mark moves) or the set of conversations changes, so paging,
    filtering and sorting again read only the page's own figures.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, tuple[tuple[int, int], dict[int, Any]]] = {}

    def values(
        self,
        engine: Engine,
        sort: Literal["messages", "last"],
        conversations: Sequence[Conversation],
    ) -> dict[int, Any]:
        store = engine.store
        version = (store.messages.high_water(), len(conversations))
        with self._lock:
            hit = self._kept.get(sort)
        if hit is not None and hit[0] == version and all(c.id in hit[1] for c in conversations):
            return hit[1]
        ids = [c.id for c in conversations]
        found: dict[int, Any] = (
            dict(store.messages.count_by_conversation(ids))
            if sort == "messages"
            else dict(store.conversations.last_activity(ids))
        )
        with self._lock:
            self._kept[sort] = (version, found)
        return found


def list_conversations(
    engine: Engine, request: ListRequest, keys: SortKeys | None = None
) -> dict[str, Any]:
    """One page of the list; ``keys`` keeps the sort keys between requests."""
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

    sort_values: dict[int, Any] = {}
    if request.sort in ("messages", "last"):
        sort_values = (keys or SortKeys()).values(engine, request.sort, everything)

    def key(conversation: Conversation) -> Any:
        if request.sort == "created":
            return (conversation.created_at, conversation.id)
        if request.sort == "project":
            return (conversation.project, conversation.created_at)
        if request.sort == "session":
            return (conversation.session_id, conversation.id)
        if request.sort == "messages":
            return (sort_values[conversation.id], conversation.id)
        return (sort_values[conversation.id] or conversation.created_at, conversation.id)

    top.sort(key=key, reverse=request.descending)
    page = top[request.offset : request.offset + request.limit]
    shown = [*page, *(c for p in page for c in children.get(p.id, [])[:MAX_CHILDREN])]
    figures = conversation_rows(engine, shown)
    rows = []
    for conversation in page:
        row = figures[conversation.id]
        kids = children.get(conversation.id, [])
        row["children"] = [figures[c.id] for c in kids[:MAX_CHILDREN]]
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
