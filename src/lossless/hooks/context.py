"""What ``SessionStart`` injects after a compaction or on resume: the session's DAG view."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lossless.hooks.replayed import CONTEXT_HEAD

if TYPE_CHECKING:
    from lossless.engine.engine import Engine
    from lossless.models import Conversation

# Claude Code drops additionalContext beyond 10,000 characters; stay clear of it.
MAX_CONTEXT_CHARS = 9_500


def session_context(engine: Engine, conversation: Conversation) -> str:
    """The DAG view injected after a compaction or on resume, or '' if nothing to say.

    The summaries currently in the conversation's context (the tops of its
    DAG) with ids, depths and time ranges, newest kept when space runs out
    (``engine.dag.session_start_view``, the same view as ``lcm dag``), framed
    by what is stored and how to get it back, within ``MAX_CONTEXT_CHARS``.
    """
    from lossless.engine.dag import session_start_view

    store = engine.store
    message_count = store.messages.count(conversation.id)
    if message_count == 0:
        return ""
    head = (
        f"{CONTEXT_HEAD}{conversation.session_id}: all {message_count} messages are "
        "stored verbatim in lossless (lcm)."
    )
    howto = (
        "To recover anything no longer in your context: lcm_grep / lcm_search (MCP tools) "
        "find messages and summaries; lcm_expand with a summary_id shows what it was built "
        "from; lcm_describe shows one id in full; lcm_expand_query answers a question from "
        "the history. In a shell: `lcm grep PATTERN`, `lcm expand SUM_ID`."
    )
    budget = MAX_CONTEXT_CHARS - len(head) - len(howto) - 2
    view = session_start_view(store, conversation.id, max_chars=budget)
    if not view:
        return f"{head} None of them are summarized yet.\n{howto}"
    return f"{head}\n{view}\n{howto}"[:MAX_CONTEXT_CHARS]
