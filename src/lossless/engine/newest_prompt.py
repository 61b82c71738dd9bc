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

from lossless.engine.compaction import MessageFacts, message_facts
from lossless.models import ContextItem
from lossless.store.contract import Repositories

__all__ = ["find_newest_prompt"]

# How many compacted messages the walk reads before giving up: a conversation
# may hold no prompt at all (an imported tool log), and assembly must not read
# the whole history every turn to find that out.
MAX_COMPACTED_MESSAGES = 20_000


def find_newest_prompt(
    repos: Repositories,
    items: Sequence[ContextItem],
    facts: Mapping[int, MessageFacts],
    *,
    max_compacted_messages: int = MAX_COMPACTED_MESSAGES,
) -> tuple[int | None, int | None]:
    """``(message_id, item_index)`` of the newest prompt, ``(None, None)`` if none is found.

    ``item_index`` is None when the prompt is inside a summary. ``facts``
    covers the raw message items.
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
            break
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
