"""LoCoMo evidence retrieval with ``full_text`` grep: the baseline search must beat.

For each of the 10 conversations of ``../shared/data/locomo/locomo10.json``:

- every turn becomes one message (speaker_a -> ``user``, speaker_b ->
  ``assistant``) with ``ingest_key`` = its ``dia_id`` (``D1:3``) and metadata
  ``{dia_id, speaker, session}``; ``created_at`` is the session's
  ``date_time``. A shared image's ``blip_caption`` is appended to the text as
  ``[image: <caption>]`` (the turn's only description of the image);
- every QA question is run as ``engine.grep(question, mode="full_text",
  scope="messages", conversation=<that conversation>, limit=10)``;
- a question's recall@k is the fraction of its evidence ``dia_id``s among the
  top k hits; the table averages it over questions, overall and per category.

Evidence ids are normalised (``D:11:26`` -> ``D11:26``, ``D30:05`` -> ``D30:5``,
``"D8:6; D9:17"`` -> two ids); ids that name no turn are dropped and a question
left with no evidence is not scored (both are counted in the output).

Usage::

    .venv/bin/python benchmarks/bench_locomo.py
    .venv/bin/python benchmarks/bench_locomo.py --speaker-prefix   # "Caroline: ..." content
    .venv/bin/python benchmarks/bench_locomo.py --quick            # 2 conversations
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import common

LOCOMO = common.DATA / "locomo" / "locomo10.json"
KS = (5, 10)
CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    created_at: str


@dataclass(slots=True)
class Scored:
    sample_id: str
    category: int
    question: str
    evidence: list[str]
    found: list[str]  # dia_ids of the hits, best first
    ms: float

    def recall(self, k: int) -> float:
        top = set(self.found[:k])
        return sum(1 for e in self.evidence if e in top) / len(self.evidence)

    def any_hit(self, k: int) -> float:
        top = set(self.found[:k])
        return 1.0 if any(e in top for e in self.evidence) else 0.0


_DIA = re.compile(r"^D:?(\d+):0*(\d+)$")


def normalize_evidence(raw: Sequence[str]) -> list[str]:
    """Split and repair the data set's evidence ids; keep order, drop duplicates."""
    out: list[str] = []
    for item in raw:
        for piece in re.split(r"[;,\s]+", str(item)):
            found = _DIA.match(piece.strip())
            if found:
                out.append(f"D{int(found.group(1))}:{int(found.group(2))}")
    return list(dict.fromkeys(out))


def session_time(text: str) -> str:
    """``'1:56 pm on 8 May, 2023'`` as the store's canonical UTC timestamp."""
    moment = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def turns_of(sample: dict[str, Any]) -> list[Turn]:
    conversation = sample["conversation"]
    sessions = sorted(
        int(key.split("_")[1])
        for key, value in conversation.items()
        if re.fullmatch(r"session_\d+", key) and isinstance(value, list)
    )
    turns: list[Turn] = []
    for number in sessions:
        created = session_time(conversation[f"session_{number}_date_time"])
        for turn in conversation[f"session_{number}"]:
            text = turn["text"]
            if turn.get("blip_caption"):
                text = f"{text} [image: {turn['blip_caption']}]"
            turns.append(Turn(turn["dia_id"], turn["speaker"], text, number, created))
    return turns


def run(
    samples: list[dict[str, Any]], home: Path, speaker_prefix: bool
) -> tuple[list[Scored], dict[str, float]]:
    from lossless import Engine
    from lossless.models import NewMessage

    scored: list[Scored] = []
    stats = {"turns": 0.0, "ingest_s": 0.0, "unscored": 0.0, "dropped_ids": 0.0}
    with Engine.open(home) as engine:
        for sample in samples:
            speaker_a = sample["conversation"]["speaker_a"]
            turns = turns_of(sample)
            messages = [
                NewMessage(
                    role="user" if t.speaker == speaker_a else "assistant",
                    content=f"{t.speaker}: {t.text}" if speaker_prefix else t.text,
                    created_at=t.created_at,
                    ingest_key=t.dia_id,
                    metadata={"dia_id": t.dia_id, "speaker": t.speaker, "session": t.session},
                )
                for t in turns
            ]
            chat = engine.conversation(sample["sample_id"], project="locomo", client="locomo")
            ids, seconds = common.timed(lambda c=chat, m=messages: c.ingest(m))  # type: ignore[misc]
            stats["turns"] += len(ids)
            stats["ingest_s"] += seconds
            dia_of = {message_id: t.dia_id for message_id, t in zip(ids, turns, strict=True)}
            known = set(dia_of.values())
            for qa in sample["qa"]:
                evidence = normalize_evidence(qa.get("evidence", []))
                kept = [e for e in evidence if e in known]
                stats["dropped_ids"] += len(evidence) - len(kept)
                if not kept:
                    stats["unscored"] += 1
                    continue
                hits, seconds = common.timed(
                    lambda q=qa["question"], c=chat.id: engine.grep(  # type: ignore[misc]
                        q, mode="full_text", scope="messages", conversation=c, limit=max(KS)
                    )
                )
                scored.append(
                    Scored(
                        sample_id=sample["sample_id"],
                        category=int(qa["category"]),
                        question=qa["question"],
                        evidence=kept,
                        found=[dia_of[int(h.id)] for h in hits],
                        ms=seconds * 1000,
                    )
                )
    return scored, stats


def summarize(label: str, items: list[Scored]) -> list[object]:
    row: list[object] = [label, len(items)]
    for k in KS:
        row.append(sum(s.recall(k) for s in items) / len(items) if items else float("nan"))
    for k in KS:
        row.append(sum(s.any_hit(k) for s in items) / len(items) if items else float("nan"))
    row.append(common.median([s.ms for s in items]))
    return row


def report(scored: list[Scored], stats: dict[str, float], speaker_prefix: bool) -> None:
    rows = [
        summarize(f"{c} ({CATEGORY_NAMES[c]})", [s for s in scored if s.category == c])
        for c in sorted(CATEGORY_NAMES)
    ]
    rows.append(summarize("overall", scored))
    rows.append(summarize("overall excl. 5", [s for s in scored if s.category != 5]))
    common.print_table(
        ["category", "questions", "recall@5", "recall@10", "any@5", "any@10", "median ms"],
        rows,
        title=(
            "LoCoMo evidence retrieval, full_text grep per conversation "
            f"(content: {'speaker-prefixed text' if speaker_prefix else 'turn text'}; "
            "any@k = share of questions with at least one evidence turn in the top k)"
        ),
    )
    print(
        f"\n{int(stats['turns']):,} turns ingested in {stats['ingest_s']:.2f} s; "
        f"{len(scored):,} questions scored, {int(stats['unscored'])} unscored (no evidence id, "
        f"or none names a turn), {int(stats['dropped_ids'])} evidence ids dropped (name no turn)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=LOCOMO, help="locomo10.json")
    parser.add_argument(
        "--speaker-prefix", action="store_true", help='store turns as "<speaker>: <text>"'
    )
    parser.add_argument("--quick", action="store_true", help="first 2 conversations only")
    parser.add_argument("--json", type=Path, help="also write every scored question here")
    args = parser.parse_args(argv)

    common.print_machine()
    samples: list[dict[str, Any]] = json.loads(args.data.read_text(encoding="utf-8"))
    if args.quick:
        samples = samples[:2]
    home = Path(tempfile.mkdtemp(prefix="lcm-locomo-"))
    try:
        scored, stats = run(samples, home, args.speaker_prefix)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    report(scored, stats, args.speaker_prefix)
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "sample_id": s.sample_id,
                        "category": s.category,
                        "question": s.question,
                        "evidence": s.evidence,
                        "found": s.found,
                    }
                    for s in scored
                ],
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
