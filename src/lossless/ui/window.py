"""A conversation's context window: what the model gets now, under a chosen budget.

The assembled context is exactly ``Engine.assemble`` (what ``lcm context``
prints); this module only splits its tokens into the bar's segments and
pages its messages. One assembly is kept per conversation, budget and
format until the conversation changes, so paging does not rebuild it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from lossless.engine.assembly import FORMATS, render_summary
from lossless.engine.engine import Engine
from lossless.errors import InputError

if TYPE_CHECKING:
    from lossless.engine.assembly import AssembledContext, Format

MAX_PAGE = 200
_CACHE_SIZE = 8


class AssemblyCache:
    """The last few assemblies, keyed by what would change them."""

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[Any, ...], tuple[AssembledContext, list[dict[str, Any]]]]
        self._items = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self, engine: Engine, conversation_id: int, budget: int, format: Format
    ) -> tuple[AssembledContext, list[dict[str, Any]]]:
        store = engine.store
        # Ingest adds a message (the newest changes), compaction and a dropped
        # branch change the context's counts: both read without a scan.
        last = store.messages.last(conversation_id)
        stats = store.context.stats(conversation_id)
        version = (last.id if last else 0, stats.items, stats.tokens, stats.summaries)
        key = (conversation_id, budget, format, version)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        assembled = engine.assemble(conversation_id, budget, format=format)
        value = (assembled, segments(engine, assembled))
        with self._lock:
            self._items[key] = value
            while len(self._items) > _CACHE_SIZE:
                self._items.popitem(last=False)
        return value


def segments(engine: Engine, assembled: AssembledContext) -> list[dict[str, Any]]:
    """The bar, oldest first: system, summaries by depth, older messages, fresh
    tail, then the free rest of the budget. Tokens add up to the breakdown's."""
    b = assembled.breakdown
    by_depth: dict[int, dict[str, int]] = {}
    for ref in assembled.included:
        if ref.startswith("msg:"):
            continue
        summary = engine.store.summaries.get(ref)
        if summary is None:
            continue
        parents = (
            engine.store.summaries.source_summary_ids(summary.id)
            if summary.kind == "condensed"
            else []
        )
        slot = by_depth.setdefault(summary.depth, {"tokens": 0, "count": 0})
        # The same estimate assemble() charges a summary: its XML.
        slot["tokens"] += engine.estimate(render_summary(summary, parents))
        slot["count"] += 1
    out: list[dict[str, Any]] = []
    if b.system:
        out.append({"kind": "system", "label": "system", "tokens": b.system, "count": 1})
    # The summaries' share also holds the note said once ahead of them (that
    # they are records, not instructions): its own segment, so the bar adds up.
    head = b.summaries - sum(slot["tokens"] for slot in by_depth.values())
    if by_depth and head > 0:
        out.append(
            {"kind": "summary", "label": "note ahead of the summaries", "tokens": head, "count": 1}
        )
    for depth in sorted(by_depth, reverse=True):
        slot = by_depth[depth]
        out.append(
            {
                "kind": "summary",
                "depth": depth,
                "label": f"summaries, depth {depth}",
                "tokens": slot["tokens"],
                "count": slot["count"],
            }
        )
    older = b.messages - b.fresh_tail
    older_count = b.message_count - b.fresh_tail_messages
    if older > 0 or older_count > 0:
        out.append(
            {"kind": "older", "label": "older messages", "tokens": older, "count": older_count}
        )
    out.append(
        {
            "kind": "tail",
            "label": "fresh tail",
            "tokens": b.fresh_tail,
            "count": b.fresh_tail_messages,
        }
    )
    if b.prompt_tokens:
        # The newest user prompt, repeated at the end when its turn was compacted.
        out.append(
            {
                "kind": "prompt",
                "label": "newest prompt, repeated",
                "tokens": b.prompt_tokens,
                "count": 1,
            }
        )
    note = b.total - b.system - b.summaries - b.messages - b.prompt_tokens
    if note > 0:
        out.append({"kind": "note", "label": "continuation note", "tokens": note, "count": 1})
    out.append(
        {"kind": "free", "label": "free budget", "tokens": max(0, b.budget - b.total), "count": 0}
    )
    return out


def context_window(
    engine: Engine,
    cache: AssemblyCache,
    conversation_id: int,
    *,
    budget: int | None,
    format: str,
    offset: int,
    limit: int,
) -> dict[str, Any]:
    if format not in FORMATS:
        raise InputError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
    if offset < 0 or not 1 <= limit <= MAX_PAGE:
        raise InputError(f"offset must be 0 or more and limit 1..{MAX_PAGE}")
    if budget is None:
        budget = engine.config.context_budget_tokens
    if budget < 0:
        raise InputError("budget must be 0 or more tokens")
    chosen: Format = "openai" if format == "openai" else "anthropic"
    assembled, bar = cache.get(engine, conversation_id, budget, chosen)
    b = assembled.breakdown
    return {
        "conversation_id": conversation_id,
        "format": assembled.format,
        "budget": budget,
        "default_budget": engine.config.context_budget_tokens,
        "system": assembled.system,
        # Every field lcm context --json reports, as the engine computed it.
        "breakdown": b.as_dict(),
        "segments": bar,
        "included": len(assembled.included),
        "total_messages": len(assembled.messages),
        "offset": offset,
        "messages": assembled.messages[offset : offset + limit],
    }
