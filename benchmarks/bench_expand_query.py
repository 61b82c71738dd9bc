"""Does ``expand_query``'s evidence hold the message that answers the question?

A long generated session (``bench_import``'s corpus, default 1,500 turns =
3,000 messages) gets one unique fact planted every ``--plant-every`` messages
(never in the protected tail), appended to whatever the generated message
says, so a fact may sit in the middle of a long tool output. The session is
compacted with the offline extractive summarizer (``sweep``), so nearly every
planted message is covered by a summary. Each fact then becomes a question in
other words than the fact ("Which port does the zorvath service listen on?"
for "The zorvath service listens on port 48213."), asked with
``Engine.expand_query`` at its default budget, offline (evidence only).

Reported per run: the share of questions whose planted message is an evidence
item of its own (``as item``), the share whose answer value appears anywhere in
the evidence text (``value seen``, which also counts a summary that kept it),
the evidence tokens used, and the latency p50/p95.

Usage::

    .venv/bin/python benchmarks/bench_expand_query.py
    .venv/bin/python benchmarks/bench_expand_query.py --turns 500 --plant-every 20
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bench_import
import common

from lossless import Engine

PROJECT = "/bench/long-session"
_SYLLABLES = ("ka", "zor", "vel", "thi", "mun", "dra", "quo", "pel", "six", "bru", "nay", "lom")


@dataclass(frozen=True, slots=True)
class Fact:
    sentence: str
    question: str
    value: str
    index: int  # position of the planted message in the session


def pseudo_word(rng: random.Random, taken: set[str]) -> str:
    """A made-up name no generated message contains (and no other fact uses)."""
    while True:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(3))
        if word not in taken:
            taken.add(word)
            return word


def make_fact(rng: random.Random, serial: int, index: int, taken: set[str]) -> Fact:
    name = pseudo_word(rng, taken)
    kind = serial % 4
    if kind == 0:
        value = str(rng.randint(20_000, 65_000))
        return Fact(
            f"The {name} service listens on port {value} in staging.",
            f"Which port does the {name} service listen on?",
            value,
            index,
        )
    if kind == 1:
        value = f"{rng.randint(1, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 9)}"
        return Fact(
            f"We pinned {name} to version {value} because newer builds crash on start.",
            f"What version is {name} pinned to, and why?",
            value,
            index,
        )
    if kind == 2:
        value = f"E{rng.randint(1000, 9999)}"
        return Fact(
            f"The nightly {name} job failed with error {value} after the schema change.",
            f"Which error did the nightly {name} job fail with?",
            value,
            index,
        )
    value = f"config/{name}_{rng.randint(10, 99)}.toml"
    return Fact(
        f"The settings for {name} are kept in {value}, not in the environment.",
        f"Where are the settings for {name} kept?",
        value,
        index,
    )


def session(turns: int, every: int, seed: int) -> tuple[list[dict[str, Any]], list[Fact]]:
    """``turns`` user/assistant turns of generated history with facts planted in it."""
    rng = random.Random(seed)
    generator = bench_import.CorpusGenerator(seed)
    messages = [dict(m) for m in generator.messages(turns * 2)]
    facts: list[Fact] = []
    taken: set[str] = set()
    limit = len(messages) - 64  # out of the protected tail: these must be compacted
    for index in range(every // 2, limit, every):
        fact = make_fact(rng, len(facts), index, taken)
        facts.append(fact)
        content = str(messages[index].get("content") or "")
        # Into the middle of the message: neither its head nor its tail.
        cut = len(content) // 2
        messages[index]["content"] = f"{content[:cut]}\n{fact.sentence}\n{content[cut:]}".strip()
    return messages, facts


def run(home: Path, turns: int, every: int, seed: int) -> dict[str, Any]:
    messages, facts = session(turns, every, seed)
    with Engine.open(home) as engine:
        chat = engine.conversation("long-session", project=PROJECT)
        ids = chat.ingest(messages)
        _, compact_s = common.timed(lambda: chat.compact(mode="sweep"))
        summaries = len(engine.store.summaries.list(chat.id))
        covered = engine.store.summaries.covering([ids[f.index] for f in facts])
        as_item = value_seen = 0
        tokens: list[int] = []
        seconds: list[float] = []
        missed: list[str] = []
        for fact in facts:
            found, elapsed = common.timed(
                lambda fact=fact: engine.expand_query(fact.question, project=PROJECT, model=None)
            )
            seconds.append(elapsed)
            tokens.append(found.evidence_tokens)
            item = str(ids[fact.index]) in found.evidence_ids
            seen = any(fact.value in e.text for e in found.evidence)
            as_item += item
            value_seen += seen
            if not seen:
                missed.append(fact.question)
    return {
        "turns": turns,
        "messages": len(messages),
        "facts": len(facts),
        "covered": len(covered),
        "summaries": summaries,
        "compact_s": compact_s,
        "as_item": as_item,
        "value_seen": value_seen,
        "tokens_p50": common.median([float(t) for t in tokens]),
        "p50_ms": common.median(seconds) * 1000,
        "p95_ms": common.percentile(seconds, 95) * 1000,
        "missed": missed,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1_500)
    parser.add_argument("--plant-every", type=int, default=35)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    common.print_machine()
    scratch = Path(tempfile.mkdtemp(prefix="lcm-bench-eq-"))
    try:
        result = run(scratch / "home", args.turns, args.plant_every, args.seed)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    facts = result["facts"]
    common.print_table(
        [
            "turns",
            "messages",
            "facts",
            "covered by a summary",
            "as item",
            "value seen",
            "evidence tokens p50",
            "p50 ms",
            "p95 ms",
        ],
        [
            [
                result["turns"],
                result["messages"],
                facts,
                result["covered"],
                f"{result['as_item'] / facts:.1%}",
                f"{result['value_seen'] / facts:.1%}",
                int(result["tokens_p50"]),
                f"{result['p50_ms']:.1f}",
                f"{result['p95_ms']:.1f}",
            ]
        ],
        title=(
            f"expand_query evidence, default budget, offline; {result['summaries']} summaries, "
            f"compaction {result['compact_s']:.1f} s"
        ),
    )
    for question in result["missed"][:10]:
        print(f"  missed: {question}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
