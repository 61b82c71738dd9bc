"""Find the newest user prompt of a conversation, raw or compacted.

The fresh tail is a message count, so the prompt that started a long
autonomous turn ("continue until all are done") is soon outside it and is
compacted like any history. Assembly still shows it to the model, ahead of
the fresh tail: this module finds it. Raw context items are checked first; if
the prompt is not among them, the summaries are walked newest first down to
their source messages, which stops at the first prompt found.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from lossless.engine.compaction import MessageFacts, load_facts, message_facts
from lossless.models import ContextItem
from lossless.store.contract import Repositories

__all__ = ["find_newest_prompt"]

# How many compacted messages the walk reads before giving up: a conversation
# may hold no prompt at all (an imported tool log), and assembly must not read
# the whole history every turn to find that out.
MAX_COMPACTED_MESSAGES = 20_000
# Older items are searched this many candidates at a time.
_PAGE = 64


def find_newest_prompt(
    repos: Repositories,
    items: Sequence[ContextItem],
    facts: Mapping[int, MessageFacts],
    *,
    max_compacted_messages: int = MAX_COMPACTED_MESSAGES,
    older_of: int | None = None,
) -> tuple[int | None, int | None]:
    """``(message_id, item_index)`` of the newest prompt, ``(None, None)`` if none is found.

    ``item_index`` is None when the prompt is inside a summary or older than
    ``items``. ``facts`` covers the raw message items. ``older_of``: ``items``
    are only the newest part of conversation ``older_of``'s context; the older
    items are searched next, through the store's prefilter, page by page.
    """
    budget = [max_compacted_messages]
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.message_id is not None:
            fact = facts.get(item.message_id)
            if fact is not None and fact.is_prompt:
                return item.message_id, index
            continue
        assert item.summary_id is not None
        found = next(_prompts_under(repos, item.summary_id, budget), None)
        if found is not None:
            return found, None
        if budget[0] <= 0:
            return None, None
    if older_of is None or not items:
        return None, None
    before = items[0].ordinal
    while budget[0] > 0:
        page = repos.context.prompt_candidates(older_of, before_ordinal=before, limit=_PAGE)
        raw = [i.message_id for i in page if i.message_id is not None]
        page_facts = load_facts(repos, raw) if raw else {}
        for item in page:
            if item.message_id is not None:
                fact = page_facts.get(item.message_id)
                if fact is not None and fact.is_prompt:
                    return item.message_id, None
                continue
            assert item.summary_id is not None
            found = next(_prompts_under(repos, item.summary_id, budget), None)
            if found is not None:
                return found, None
            if budget[0] <= 0:
                return None, None
        if len(page) < _PAGE:
            break
        before = page[-1].ordinal
    return None, None


def _prompts_under(repos: Repositories, summary_id: str, budget: list[int]) -> Iterator[int]:
    """Prompt message ids under a summary, newest first, within ``budget`` messages read."""
    children = repos.summaries.source_summary_ids(summary_id)
    if children:
        for child in reversed(children):
            if budget[0] <= 0:
                return
            yield from _prompts_under(repos, child, budget)
        return
    ids = repos.summaries.source_message_ids(summary_id)
    budget[0] -= len(ids)
    users = [m for m in repos.messages.get_many(ids) if m.role == "user"]
    if not users:
        return
    parts = repos.messages.parts([m.id for m in users])
    for message in reversed(users):
        if message_facts(message, parts.get(message.id, [])).is_prompt:
            yield message.id
