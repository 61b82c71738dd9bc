"""Every real transcript in ../shared/data, replayed as it was written, fits a 50k budget.

Each transcript is written to a temporary file in growing prefixes, as a live
client writes it; after each prefix the importer takes the new lines (the
hooks do the same) and ``after_turn`` compacts with the offline (extractive)
summarizer against a 50,000-token window. At the end the assembled context is
within 50,000 tokens, expanding the context items yields every stored message
once and in order (the coverage invariant), and the newest user prompt is
visible. One real session is a single 259-message turn ("continue until all
are done"): under the old turn-wide tail it never compacted at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.engine.compaction_helpers import expand_items

from lossless import Engine
from lossless.sources import detect_kind

BUDGET = 50_000
# Enough steps that compaction runs while the session grows, few enough to
# keep the whole replay inside the CI budget (about 10 s on 2 cores).
STEPS = 6


def transcripts(root: Path) -> list[Path]:
    return sorted(p for p in [*root.glob("claude-code/**/*.jsonl"), *root.glob("codex/**/*.jsonl")])


def replay(engine: Engine, source: Path, target: Path) -> int:
    """Write ``source`` into ``target`` in growing prefixes, importing and
    compacting after each; the conversation id."""
    lines = source.read_bytes().splitlines(keepends=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"")
    conversation_id: int | None = None
    importer = engine.importer()
    kind = detect_kind(source)
    ends = sorted({max(1, len(lines) * step // STEPS) for step in range(1, STEPS + 1)})
    for end in ends:
        target.write_bytes(b"".join(lines[:end]))
        result = importer.import_file(target, kind, final=end == len(lines))
        assert result.ok and not result.problems, (source.name, result.problems)
        if result.conversation_id is None:
            continue
        conversation_id = result.conversation_id
        outcome = engine.after_turn(conversation_id, budget=BUDGET)
        assert outcome.error is None, (source.name, outcome.error)
    assert conversation_id is not None, f"{source.name}: nothing imported"
    return conversation_id


def test_every_real_transcript_assembles_under_50k(shared_data: Path, tmp_path: Path) -> None:
    files = transcripts(shared_data)
    assert len(files) >= 9, "expected the spotter and codemie transcripts (data README)"
    with Engine.open(tmp_path / "home", summarizer_provider="extractive") as engine:
        for source in files:
            cid = replay(engine, source, tmp_path / "live" / source.relative_to(shared_data))
            stored = [m.id for m in engine.store.messages.list(cid)]
            assert expand_items(engine.store, cid) == stored, f"{source.name}: coverage broken"
            got = engine.assemble(cid, BUDGET)
            b = got.breakdown
            assert not b.tail_over_budget, f"{source.name}: fresh tail alone is {b.fresh_tail:,}"
            assert b.total <= BUDGET and not b.over_budget, f"{source.name}: {b.total:,} tokens"
            # The context is compacted, not truncated: nothing is left out.
            assert b.dropped_items == 0, f"{source.name}: {b.dropped_items} items left out"
            if b.prompt_message_id is not None:
                assert b.prompt_shown in ("in_tail", "in_place", "repeated", "clipped")
                if b.prompt_shown in ("repeated", "clipped"):
                    shown = json.dumps(got.messages)
                    pid = b.prompt_message_id
                    assert f"(message {pid}," in shown or f"lcm describe {pid}`" in shown


@pytest.mark.parametrize("session", ["fa812bfe-b295-4cca-9c2f-fdf01028cb46"])
def test_the_long_real_turn_compacts_and_its_prompt_stays_visible(
    shared_data: Path, tmp_path: Path, session: str
) -> None:
    source = shared_data / "claude-code" / "spotter" / f"{session}.jsonl"
    if not source.is_file():
        pytest.skip(f"{source} not found")
    with Engine.open(tmp_path / "home", summarizer_provider="extractive") as engine:
        result = engine.import_file(source, final=True)
        assert result.conversation_id is not None
        cid = result.conversation_id
        before = engine.store.context.token_total(cid)
        done = engine.compact(cid, until=10_000)
        after = engine.store.context.token_total(cid)
        # Real progress, down to the target, although the last user prompt
        # opened a turn of hundreds of messages.
        assert before > 90_000
        assert done.reached_target and after <= 10_000, done.describe()
        got = engine.assemble(cid, 10_000)
        assert got.breakdown.total <= 10_000
        prompt = engine.store.messages.get(got.breakdown.prompt_message_id or 0)
        assert prompt is not None and prompt.role == "user"
        assert got.breakdown.prompt_shown == "repeated"
        assert prompt.content[:200] in json.dumps(got.messages, ensure_ascii=False).replace(
            "\\n", "\n"
        ).replace('\\"', '"')
        assert expand_items(engine.store, cid) == [m.id for m in engine.store.messages.list(cid)]
