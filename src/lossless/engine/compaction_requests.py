"""The compaction-request protocol: how hooks ask for compaction and the worker serves it.

A request is two keys in the conversation's metadata (when it was asked, and
the mode); the worker records the request it served (``DONE_AT``) and the
last error. A request is pending while it is newer than the last one served.
On a store with coordination (PostgreSQL) each request is also a job in the
shared queue, so workers on many machines take different conversations.

Read by hooks (to request), the worker (to serve), and ``Engine.status``,
``lcm doctor`` and the UI (to report); its top level is stdlib only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.engine.engine import Engine
    from lossless.models import Conversation
    from lossless.store.contract import Store

REQUESTED_AT = "lcm_compaction_requested_at"
REQUEST_MODE = "lcm_compaction_mode"
DONE_AT = "lcm_compaction_done_at"
LAST_ERROR = "lcm_compaction_error"
JOB_KIND = "compact"

CompactionMode = Literal["incremental", "sweep"]


# Context items read per query while looking back from the newest.
_PAGE = 256


def request_time(value: Any) -> float:
    """A timestamp kept in metadata, 0 when missing or not a number."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def is_pending(conversation: Conversation) -> bool:
    """Whether the conversation's latest compaction request has not been served yet."""
    meta = conversation.metadata or {}
    return request_time(meta.get(REQUESTED_AT)) > request_time(meta.get(DONE_AT))


def request_compaction(
    store: Store, conversation_id: int, mode: CompactionMode = "incremental"
) -> None:
    """Mark a conversation as due; the worker picks it up on its next poll.

    A ``sweep`` request is never downgraded to ``incremental`` by a later
    request before it is served.
    """
    conversation = store.conversations.get(conversation_id)
    if conversation is None:
        return
    current = (conversation.metadata or {}).get(REQUEST_MODE)
    if is_pending(conversation) and current == "sweep":
        mode = "sweep"
    store.conversations.update_metadata(
        conversation_id, {REQUESTED_AT: time.time(), REQUEST_MODE: mode}
    )
    coordination = store.coordination
    if coordination is not None:
        # At most one waiting job per conversation: a request made while one
        # waits is served by it (the mode is read from the metadata then).
        coordination.jobs.enqueue(JOB_KIND, conversation_id)


def compaction_due(store: Store, config: Config, conversation_id: int) -> bool:
    """Cheap test run by hooks: are there more raw tokens before the fresh tail
    than one leaf chunk? An upper bound of what the compactor will find (its
    protected tail may be wider); a false positive costs one idle worker poll.

    Reads the newest items back, a page at a time, and stops as soon as the
    answer is known: a hook must not list (or sum) the whole context of a
    long session that was never compacted.
    """
    chunk = config.leaf_chunk_tokens
    tail = config.fresh_tail_count
    seen = 0
    raw = 0
    before: int | None = None
    while True:
        page = store.context.newest(conversation_id, before_ordinal=before, limit=_PAGE)
        for item in reversed(page):
            if item.item_type != "message":
                continue
            if seen < tail:
                seen += 1
                continue
            raw += item.token_count
            if raw > chunk:
                return True
        if len(page) < _PAGE:
            return False
        before = page[0].ordinal


def schedule_compaction(engine: Engine, conversations: Mapping[int, bool]) -> bool:
    """Request compaction for those of ``conversations`` (id -> sweep?) that need it.

    A sweep is requested for any conversation with messages; an incremental
    run only when ``compaction_due``. True if any conversation now waits for
    the worker.
    """
    store = engine.store
    wanted = False
    for conversation_id, sweep in conversations.items():
        conversation = store.conversations.get(conversation_id)
        if conversation is None:
            continue
        if sweep:
            if store.messages.count(conversation_id) > 0:
                request_compaction(store, conversation_id, "sweep")
                wanted = True
        elif is_pending(conversation):
            wanted = True
        elif compaction_due(store, engine.config, conversation_id):
            request_compaction(store, conversation_id, "incremental")
            wanted = True
    return wanted


def pending_conversations(store: Store) -> list[Conversation]:
    """Conversations with an unserved request, oldest request first."""
    found = [c for c in store.conversations.list() if is_pending(c)]
    return sorted(found, key=lambda c: request_time((c.metadata or {}).get(REQUESTED_AT)))
