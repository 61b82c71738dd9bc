"""Assembly reads the context from the newest back: the result must not depend on how much.

``assemble`` reads the newest context items a page at a time until their
token counts pass the budget, and reads more when the fill, the fresh tail, a
pending tool call or a pair straddling the start of what it read needs older
items. With a page of one item every one of those paths is taken; with a page
larger than the context it reads everything at once (the whole-context
algorithm). Both must give the same messages and the same breakdown.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from tests.engine.compaction_helpers import (
    Clock,
    CountingSummarizer,
    agent_turn,
    ingest,
    make_config,
    new_conversation,
    open_store,
    text_message,
    tool_result_message,
    tool_use_message,
)

from lossless.engine import assembly
from lossless.engine.assembly import AssembledContext, assemble
from lossless.engine.compaction import Compactor
from lossless.models import ContextItem, NewMessage
from lossless.store.contract import Store


def _random_history(rng: random.Random, clock: Clock, turns: int) -> list[NewMessage]:
    """Turns with long autonomous runs, parallel calls, late and missing results,
    system messages and turns without a typed prompt."""
    out: list[NewMessage] = []
    for turn in range(turns):
        shape = rng.random()
        if shape < 0.5:
            out.extend(agent_turn(clock, turn, rng.randint(0, 6), words=rng.randint(5, 80)))
        elif shape < 0.65:
            # Parallel calls answered in one message, after some talk.
            calls = [(f"par_{turn}_{i}", "Read", {"path": f"f{i}.py"}) for i in range(3)]
            out.append(tool_use_message("Reading three files.", calls, clock.tick()))
            out.append(text_message("assistant", "Still waiting on them.", clock.tick()))
            out.append(tool_result_message([(c[0], "contents " * 30) for c in calls], clock.tick()))
        elif shape < 0.75:
            out.append(text_message("system", f"Reminder {turn}: stay on task.", clock.tick()))
        elif shape < 0.85:
            # A call never answered (an interrupted tool), then the user again.
            call = (f"lost_{turn}", "Bash", {"command": "sleep 100"})
            out.append(tool_use_message("Running it.", [call], clock.tick()))
            out.append(text_message("user", f"Stop that, turn {turn}.", clock.tick()))
        else:
            # A result far from its call.
            call = (f"far_{turn}", "Bash", {"command": "make"})
            out.append(tool_use_message("Building.", [call], clock.tick()))
            for i in range(rng.randint(1, 5)):
                out.append(text_message("assistant", f"Meanwhile {i}: " + "x " * 40, clock.tick()))
            out.append(tool_result_message([(call[0], "built " * 20)], clock.tick()))
    if rng.random() < 0.5:
        # The conversation ends on a call still waiting for its result.
        out.append(tool_use_message("One more.", [(f"open_{turns}", "Bash", {})], clock.tick()))
    return out


def _key(context: AssembledContext) -> tuple[object, ...]:
    return (context.messages, context.system, context.breakdown, context.included)


def _all_ways(store: Store, cid: int, monkeypatch: pytest.MonkeyPatch, **kwargs: object) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(assembly, "_PAGE", 1_000_000)
        whole = assemble(store, cid, **kwargs)  # type: ignore[arg-type]
    for page in (1, 2, 5, 17):
        with monkeypatch.context() as patch:
            patch.setattr(assembly, "_PAGE", page)
            windowed = assemble(store, cid, **kwargs)  # type: ignore[arg-type]
            assert _key(windowed) == _key(whole), f"page {page}, {kwargs}"
            # A first read too short for the budget: the fill itself runs out of items.
            patch.setattr(assembly, "_newest_items", _first_page_only)
            short = assemble(store, cid, **kwargs)  # type: ignore[arg-type]
            assert _key(short) == _key(whole), f"first page {page} only, {kwargs}"


def _first_page_only(
    repos: Store, conversation_id: int, budget: int, fresh_tail_count: int
) -> tuple[list[ContextItem], bool]:
    items = repos.context.newest(conversation_id, limit=assembly._PAGE)
    return items, len(items) < assembly._PAGE


@pytest.mark.parametrize("seed", range(6))
def test_windowed_read_matches_the_whole_context(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    config = make_config(
        tmp_path / "home",
        fresh_tail_count=rng.choice([0, 1, 4, 8]),
        leaf_chunk_tokens=600,
        leaf_min_fanout=3,
        condensed_min_fanout=2,
    )
    store = open_store(config)
    cid = new_conversation(store)
    clock = Clock()
    ingest(store, cid, _random_history(rng, clock, 30))
    if seed % 2:
        Compactor(store, config, CountingSummarizer()).sweep(cid)
        ingest(store, cid, _random_history(rng, clock, 8))
    total = store.context.token_total(cid)
    for budget in (0, 50, 400, total // 3, total // 2, total + 100):
        for fmt in ("anthropic", "openai"):
            _all_ways(
                store,
                cid,
                monkeypatch,
                budget=budget,
                format=fmt,
                fresh_tail_count=config.fresh_tail_count,
                system="Be brief." if budget % 2 else None,
            )


@pytest.mark.parametrize("tail", [0, 1, 3, 40])
def test_compaction_due_matches_the_listed_context(tmp_path: Path, tail: int) -> None:
    """The hooks' test reads sums and the newest items; it must say what the
    whole context says: raw tokens before the last ``tail`` messages > one chunk."""
    from lossless.engine.compaction_requests import compaction_due

    config = make_config(
        tmp_path / "home", fresh_tail_count=tail, leaf_chunk_tokens=600, leaf_min_fanout=3
    )
    store = open_store(config)
    cid = new_conversation(store)
    clock = Clock()
    seen: set[bool] = set()
    for turn in range(14):
        ingest(store, cid, agent_turn(clock, turn, 2, words=30))
        if turn == 9:
            Compactor(store, config, CountingSummarizer()).sweep(cid)
        items = store.context.list(cid)
        messages = [i for i in items if i.item_type == "message"]
        newest = messages[max(0, len(messages) - tail) :] if tail else []
        raw = sum(i.token_count for i in messages) - sum(i.token_count for i in newest)
        expected = raw > config.leaf_chunk_tokens
        assert compaction_due(store, config, cid) is expected, turn
        seen.add(expected)
    assert seen == {True, False}, "both answers were exercised"
