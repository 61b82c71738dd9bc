"""LoCoMo evidence recall of ``lcm search --all-projects``, per category.

The construction (issue 13), for the 10 conversations of
``../shared/data/locomo/locomo10.json``:

- each conversation is written as one generic JSONL file, one message per
  turn (speaker_a -> ``user``, speaker_b -> ``assistant``), content
  ``"<speaker>: <text>"`` plus ``" [image: <blip_caption>]"`` when the turn
  shared a photo, ``created_at`` its session's date, and the turn's
  ``dia_id`` as an extra key (kept in the message's metadata); the ten files
  are imported into one store as ``lcm import --kind generic`` does;
- every question with evidence (1,982) is searched across the whole store,
  as ``lcm search "<question>" --all-projects`` does (``Engine.search``
  with no project and the command's default limit, 20), and its message hits
  are kept in order;
- a question is recalled at k when ANY of its evidence turns is among its
  first k message hits (any@k); the share of its evidence turns in the first
  k (recall@k) is printed beside it.

Methods (columns) are run on the same store in one run:

- ``full-text``: ``Engine.search`` over the lexical (full-text) index only.
- ``hybrid``: ``Engine.search`` as ``lcm search`` runs it with the
  ``semantic`` extra: full text and vectors fused (``engine.search``). Every
  turn is embedded first (``Engine.embed``, timed and reported); the fusion
  weights were tuned on the even-numbered conversations, so the table also
  shows the odd ones (not used for tuning) apart.

Evidence ids are normalised (``D:11:26`` -> ``D11:26``, ``D30:05`` -> ``D30:5``,
``"D8:6; D9:17"`` -> two ids); ids that name no turn are dropped and a question
left with no evidence is not scored (both are counted in the output).

Usage::

    .venv/bin/python benchmarks/bench_locomo.py
    .venv/bin/python benchmarks/bench_locomo.py --quick            # 2 conversations
    .venv/bin/python benchmarks/bench_locomo.py --json out.json    # every question's hits
    .venv/bin/python benchmarks/bench_locomo.py --home /tmp/locomo # keep the store, reuse it
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import common

if TYPE_CHECKING:
    from lossless import Engine

LOCOMO = common.DATA / "locomo" / "locomo10.json"
KS = (5, 10)
CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

# lcm search's default --limit: the page whose first k message hits are scored.
SEARCH_LIMIT = 20

# A method: (engine, question, limit) -> the message ids of its hits, best first.
Method = Callable[["Engine", str, int], list[int]]


def full_text_only(engine: Engine, question: str, limit: int) -> list[int]:
    """``lcm search QUESTION --all-projects``: history and memory, lexical ranking."""
    hits = engine.search(question, project=None, limit=limit, semantic=False)
    return [int(h.id) for h in hits if h.kind == "message"]


def hybrid(engine: Engine, question: str, limit: int) -> list[int]:
    """``lcm search QUESTION --all-projects`` with semantic search installed."""
    hits = engine.search(question, project=None, limit=limit)
    if not hits.hybrid:
        raise SystemExit(f"hybrid search is not available: {hits.semantic}")
    return [int(h.id) for h in hits if h.kind == "message"]


METHODS: dict[str, Method] = {"full-text": full_text_only, "hybrid": hybrid}


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    created_at: str


@dataclass(slots=True)
class Question:
    sample_id: str
    category: int
    question: str
    evidence: list[str]
    # Odd-numbered conversations (1, 3, ...): not used to tune the fusion weights.
    held_out: bool = False
    found: dict[str, list[str]] = field(default_factory=dict)  # method -> dia_ids, best first
    ms: dict[str, float] = field(default_factory=dict)

    def recall(self, method: str, k: int) -> float:
        top = set(self.found[method][:k])
        return sum(1 for e in self.evidence if e in top) / len(self.evidence)

    def any_hit(self, method: str, k: int) -> float:
        top = set(self.found[method][:k])
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
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text = f"{text} [image: {turn['blip_caption']}]"
            turns.append(Turn(turn["dia_id"], turn["speaker"], text, number, created))
    return turns


def write_jsonl(sample: dict[str, Any], folder: Path) -> Path:
    """The conversation as a generic JSONL file, one message per turn."""
    speaker_a = sample["conversation"]["speaker_a"]
    path = folder / f"{sample['sample_id']}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for t in turns_of(sample):
            line = {
                "role": "user" if t.speaker == speaker_a else "assistant",
                "content": t.text,
                "created_at": t.created_at,
                "dia_id": t.dia_id,
            }
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return path


def run(
    samples: list[dict[str, Any]], home: Path, methods: dict[str, Method]
) -> tuple[list[Question], dict[str, float]]:
    from lossless import Engine

    stats = {"turns": 0.0, "import_s": 0.0, "unscored": 0.0, "dropped_ids": 0.0}
    files = home / "jsonl"
    files.mkdir(exist_ok=True)
    paths = [write_jsonl(sample, files) for sample in samples]
    questions: list[Question] = []
    with Engine.open(home / "lcm") as engine:
        importer = engine.importer(defer_substring_index=True)
        results, seconds = common.timed(
            lambda: [importer.import_file(p, "generic", final=True) for p in paths]
        )
        engine.build_search_index()
        stats["import_s"] = seconds
        if "hybrid" in methods:
            run_ = engine.embed()
            stats["embedded"], stats["embed_s"] = run_.items, run_.seconds
            stats["embed_cpu_s"] = run_.cpu_seconds
        dia_of: dict[int, str] = {}
        sample_of: dict[int, str] = {}
        known: dict[str, set[str]] = {}
        for sample, result in zip(samples, results, strict=True):
            if result.error or result.conversation_id is None:
                raise SystemExit(f"import of {result.path} failed: {result.error}")
            messages = engine.store.messages.list(result.conversation_id)
            for m in messages:
                dia_of[m.id] = str((m.metadata or {})["dia_id"])
                sample_of[m.id] = sample["sample_id"]
            known[sample["sample_id"]] = {dia_of[m.id] for m in messages}
            stats["turns"] += len(messages)
        for number, sample in enumerate(samples):
            for qa in sample["qa"]:
                evidence = normalize_evidence(qa.get("evidence", []))
                kept = [e for e in evidence if e in known[sample["sample_id"]]]
                stats["dropped_ids"] += len(evidence) - len(kept)
                if not kept:
                    stats["unscored"] += 1
                    continue
                questions.append(
                    Question(
                        sample["sample_id"],
                        int(qa["category"]),
                        qa["question"],
                        kept,
                        held_out=number % 2 == 1,
                    )
                )
        for name, method in methods.items():
            for q in questions:
                ids, seconds = common.timed(
                    lambda m=method, text=q.question: m(engine, text, SEARCH_LIMIT)  # type: ignore[misc]
                )
                # Evidence is within the question's own conversation: a hit in
                # another one only takes a place in the top k.
                q.found[name] = [
                    dia_of[i] if sample_of[i] == q.sample_id else f"{sample_of[i]}/{dia_of[i]}"
                    for i in ids
                ]
                q.ms[name] = seconds * 1000
    return questions, stats


def report(questions: list[Question], stats: dict[str, float], methods: Sequence[str]) -> None:
    groups = [
        (f"{c} ({CATEGORY_NAMES[c]})", [q for q in questions if q.category == c])
        for c in sorted(CATEGORY_NAMES)
    ]
    groups.append(("overall", questions))
    held_out = [q for q in questions if q.held_out]
    groups.append(("held-out (odd conversations)", held_out))
    groups.append(("held-out multi-hop", [q for q in held_out if q.category == 1]))
    headers = ["category", "questions"]
    for name in methods:
        headers += [f"{name} any@5", f"{name} any@10"]
    for name in methods:
        headers += [f"{name} recall@5", f"{name} recall@10"]
    rows: list[list[object]] = []
    for label, items in groups:
        row: list[object] = [label, len(items)]
        for name in methods:
            row += [_mean(q.any_hit(name, k) for q in items) for k in KS]
        for name in methods:
            row += [_mean(q.recall(name, k) for q in items) for k in KS]
        rows.append(row)
    common.print_table(
        headers,
        rows,
        title=(
            "LoCoMo evidence recall of lcm search --all-projects (one store, 10 conversations; "
            "any@k = share of questions with at least one evidence turn among the first k "
            "message hits; recall@k = share of a question's evidence turns there)"
        ),
    )
    print()
    common.print_table(
        ["method", "median ms", "p95 ms"],
        [
            [
                name,
                common.median([q.ms[name] for q in questions]),
                common.percentile([q.ms[name] for q in questions], 95),
            ]
            for name in methods
        ],
        title="search latency per question (in-process)",
    )
    print(
        f"\n{int(stats['turns']):,} turns imported in {stats['import_s']:.2f} s; "
        f"{len(questions):,} questions scored, {int(stats['unscored'])} unscored (no evidence id, "
        f"or none names a turn), {int(stats['dropped_ids'])} evidence ids dropped (name no turn)"
    )
    if stats.get("embedded"):
        print(
            f"{int(stats['embedded']):,} items embedded in {stats['embed_s']:.1f} s "
            f"({stats['embedded'] / stats['embed_cpu_s']:.1f} per CPU second)"
        )


def _mean(values: Any) -> float:
    items = list(values)
    return sum(items) / len(items) if items else float("nan")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=LOCOMO, help="locomo10.json")
    parser.add_argument("--quick", action="store_true", help="first 2 conversations only")
    parser.add_argument(
        "--method",
        action="append",
        choices=sorted(METHODS),
        help="run only this method (repeatable; default: all)",
    )
    parser.add_argument("--json", type=Path, help="also write every scored question here")
    parser.add_argument(
        "--home",
        type=Path,
        help="build the store here and keep it; run again, it is reused (the import adds "
        "nothing, the vectors are there): for trying ranking changes quickly",
    )
    args = parser.parse_args(argv)

    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data}: nothing to measure", file=sys.stderr)
        return 2
    common.print_machine()
    samples: list[dict[str, Any]] = json.loads(args.data.read_text(encoding="utf-8"))
    if args.quick:
        samples = samples[:2]
    methods = {name: METHODS[name] for name in (args.method or METHODS)}
    if args.home is not None:
        args.home.mkdir(parents=True, exist_ok=True)
        questions, stats = run(samples, args.home, methods)
    else:
        home = Path(tempfile.mkdtemp(prefix="lcm-locomo-"))
        try:
            questions, stats = run(samples, home, methods)
        finally:
            shutil.rmtree(home, ignore_errors=True)
    report(questions, stats, list(methods))
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "sample_id": q.sample_id,
                        "category": q.category,
                        "question": q.question,
                        "evidence": q.evidence,
                        "found": q.found,
                    }
                    for q in questions
                ],
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
