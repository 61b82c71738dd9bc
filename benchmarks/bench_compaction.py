"""Compaction engine overhead, ``assemble`` latency and extractive summary quality.

Three measurements (issue 3, Benchmarks):

- ``overhead``: a 100,000-message generated conversation (``bench_import``'s
  corpus, stored through ``Engine.ingest``) swept by a ``Compactor`` whose
  summarizer returns a short fixed text instantly, so what is timed is the
  engine itself (snapshots, chunking, escalation checks, writes). Messages
  compacted per second, wall and CPU.
- ``assemble``: ``Engine.assemble`` of that conversation at a 128k budget,
  p50/p95 over ``--assemble-runs`` calls, before compaction (100,000 raw
  context items) and after; its floor in the same run (the store reads an
  assembly of that many items cannot skip: the newest items, their
  messages and parts, CPU per call); the peak RSS of ``lcm context`` (a
  fresh interpreter) on each.
- ``extractive``: the same stored conversation swept by the default
  extractive summarizer (offline compaction as users run it), next to the
  zero-cost sweep of the same run (the engine's own floor): messages per
  second, wall and CPU.
- ``quality``: identifiers (file paths, numbers, error codes, commands), each
  unique, planted into generated conversations and into copies of the real
  transcripts (read in place from ``../shared/data``; skipped if absent),
  compacted with the extractive summarizer at the default targets. Per corpus:
  the fraction of planted identifiers found in leaf summaries (in the kept
  text, and anywhere including the "Expand for details about:" line), out of
  those whose message was compacted into a leaf (the newest messages of a
  conversation may stay raw: no summary could hold them), and the compression
  ratio (source tokens / summary tokens of the leaves).

Usage::

    .venv/bin/python benchmarks/bench_compaction.py                 # everything
    .venv/bin/python benchmarks/bench_compaction.py --messages 10000 --skip-quality
    .venv/bin/python benchmarks/bench_compaction.py --skip-overhead    # quality only
    .venv/bin/python benchmarks/bench_compaction.py --skip-quality --skip-extractive
    # assembly of the largest conversation of a kept store (bench_grep --build-into),
    # then of a copy swept with the zero-cost summarizer:
    .venv/bin/python benchmarks/bench_compaction.py --assemble-store /tmp/g1m --sweep-copy /tmp/g1m-c
    # keep the stores (overhead/, template/, extractive/) for `lcm status --sizes`:
    .venv/bin/python benchmarks/bench_compaction.py --messages 20000 --skip-quality --keep /tmp/c
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
from lossless.models import Conversation
from lossless.summarize.protocol import SummaryRequest, SummaryResponse

BATCH = 5_000


class ZeroCostSummarizer:
    """A summarizer that costs nothing: a short fixed text, returned at once."""

    name = "zero-cost"

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        return SummaryResponse(
            text=f"Summary (depth {request.depth}): work continued.",
            input_tokens=0,
            output_tokens=8,
        )


def ingest_generated(engine: Engine, conversation: Conversation, count: int, seed: int) -> float:
    """Store ``count`` generated messages in batches; returns the seconds it took."""
    generator = bench_import.CorpusGenerator(seed)
    start = common.clock()
    batch: list[dict[str, Any]] = []
    for message in generator.messages(count):
        batch.append(message)
        if len(batch) >= BATCH:
            engine.ingest(conversation, batch)
            batch = []
    if batch:
        engine.ingest(conversation, batch)
    return common.clock() - start


def raw_items(engine: Engine, conversation_id: int) -> int:
    return sum(1 for i in engine.store.context.list(conversation_id) if i.message_id is not None)


# --------------------------------------------------------------------------- overhead


def time_assemble(engine: Engine, conversation_id: int, runs: int) -> list[object]:
    """p50/p95/max and CPU per call of ``assemble`` at a 128k budget, after one warm-up."""
    budget = 128_000
    context = engine.assemble(conversation_id, budget)  # warm-up
    times: list[float] = []
    cpu = common.cpu_seconds()
    for _ in range(runs):
        start = common.clock()
        context = engine.assemble(conversation_id, budget)
        times.append((common.clock() - start) * 1000)
    cpu_ms = (common.cpu_seconds() - cpu) * 1000 / runs
    return [
        engine.store.context.stats(conversation_id).items,
        budget,
        runs,
        common.median(times),
        common.percentile(times, 95),
        max(times),
        cpu_ms,
        reads_floor_ms(engine, conversation_id, len(context.included), runs),
        len(context.included),
    ]


def reads_floor_ms(engine: Engine, conversation_id: int, items: int, runs: int) -> float:
    """CPU ms per call of the store reads alone that an assembly of ``items`` items
    cannot do without: those newest context items, their messages and parts."""
    store = engine.store
    cpu = common.cpu_seconds()
    for _ in range(runs):
        newest = store.context.newest(conversation_id, limit=max(1, items))
        ids = [i.message_id for i in newest if i.message_id is not None]
        store.messages.get_many(ids)
        if ids:
            store.messages.parts(ids)
    return (common.cpu_seconds() - cpu) * 1000 / runs


def context_peak_rss(home: Path, conversation_id: int) -> float:
    """Peak RSS (MiB) of ``lcm context CONV --json`` in a fresh interpreter."""
    code = (
        "import contextlib, io, json, sys\n"
        "from lossless.cli import main\n"
        "sys.argv = ['lcm', '--home', sys.argv[1], 'context', sys.argv[2], '--json']\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as done:\n"
        "        assert not done.code, done.code\n"
        "status = open('/proc/self/status').read()\n"
        "peak = [l for l in status.splitlines() if l.startswith('VmHWM')][0].split()[1]\n"
        "print(json.dumps({'peak_rss_mb': int(peak) / 1024}))\n"
    )
    return common.run_child(["-c", code, str(home), str(conversation_id)]).peak_rss_mb


ASSEMBLE_HEADERS = [
    "conversation",
    "context items",
    "budget",
    "runs",
    "p50 ms",
    "p95 ms",
    "max ms",
    "cpu ms/call",
    "floor: reads cpu ms",
    "items out",
    "lcm context peak RSS MiB",
    "target p50",
]


def bench_overhead(home: Path, messages: int, assemble_runs: int, template: Path | None) -> None:
    assemble_rows: list[list[object]] = []
    with Engine.open(home) as engine:
        chat = engine.conversation("bench-compaction", project="bench")
        build_s = ingest_generated(engine, chat.conversation, messages, seed=11)
        tokens = engine.store.context.token_total(chat.id)
    print(f"stored {messages:,} messages ({tokens:,} tokens) in {build_s:.1f} s", flush=True)
    if template is not None:
        shutil.copytree(home, template)  # closed: the extractive sweep starts from the same store
    with Engine.open(home) as engine:
        engine.summarizer = ZeroCostSummarizer()
        chat = engine.conversation("bench-compaction", project="bench")
        before = raw_items(engine, chat.id)
        rss = context_peak_rss(home, chat.id)
        assemble_rows.append(
            ["not compacted", *time_assemble(engine, chat.id, assemble_runs), rss, "<= 50 ms"]
        )
        compactor = engine.compactor()
        start, cpu = common.clock(), common.cpu_seconds()
        result = compactor.sweep(chat.id)
        wall, cpu = common.clock() - start, common.cpu_seconds() - cpu
        after = raw_items(engine, chat.id)
        compacted = before - after
        leaves = len(engine.store.summaries.list(chat.id, depth=0))
        summaries = len(engine.store.summaries.list(chat.id))
        common.print_table(
            [
                "messages",
                "compacted",
                "leaves",
                "summaries",
                "passes",
                "wall s",
                "cpu s",
                "messages/s (wall)",
                "target",
            ],
            [
                [
                    messages,
                    compacted,
                    leaves,
                    summaries,
                    len(result.passes),
                    wall,
                    cpu,
                    compacted / wall if wall else float("nan"),
                    ">= 5,000/s",
                ]
            ],
            title="Engine overhead: sweep with a zero-cost summarizer",
        )

        assemble_rows.append(
            [
                "compacted",
                *time_assemble(engine, chat.id, assemble_runs),
                context_peak_rss(home, chat.id),
                "<= 5 ms",
            ]
        )
        common.print_table(
            ASSEMBLE_HEADERS, assemble_rows, title="assemble at a 128k budget, before and after"
        )
    return wall, cpu, compacted


def bench_extractive(template: Path, home: Path, floor: tuple[float, float, int]) -> None:
    """Sweep the stored conversation with the default extractive summarizer."""
    shutil.copytree(template, home)
    floor_wall, floor_cpu, floor_compacted = floor
    with Engine.open(home, summarizer_provider="extractive") as engine:
        chat = engine.conversation("bench-compaction", project="bench")
        before = raw_items(engine, chat.id)
        start, cpu = common.clock(), common.cpu_seconds()
        result = engine.compactor().sweep(chat.id)
        wall, cpu = common.clock() - start, common.cpu_seconds() - cpu
        compacted = before - raw_items(engine, chat.id)
        summaries = len(engine.store.summaries.list(chat.id))
    common.print_table(
        [
            "summarizer",
            "compacted",
            "summaries",
            "passes",
            "wall s",
            "cpu s",
            "messages/s (wall)",
            "messages/s (cpu)",
            "cpu vs floor",
            "target",
        ],
        [
            [
                "zero-cost (floor)",
                floor_compacted,
                "-",
                "-",
                floor_wall,
                floor_cpu,
                floor_compacted / floor_wall,
                floor_compacted / floor_cpu,
                1.0,
                "",
            ],
            [
                "extractive",
                compacted,
                summaries,
                len(result.passes),
                wall,
                cpu,
                compacted / wall,
                compacted / cpu,
                cpu / floor_cpu,
                ">= 5,000/s",
            ],
        ],
        title="Offline compaction with the default extractive summarizer (same stored messages)",
    )


# --------------------------------------------------------------------------- quality

KINDS = ("path", "number", "error code", "command")


@dataclass(frozen=True, slots=True)
class Plant:
    kind: str
    value: str
    sentence: str


def make_plant(rng: random.Random, serial: int) -> Plant:
    kind = KINDS[serial % len(KINDS)]
    tag = f"{serial:04d}{rng.randint(10, 99)}"
    if kind == "path":
        value = f"src/{rng.choice(['api', 'core', 'jobs', 'cli'])}/module_{tag}.py"
        sentence = f"The failing import is in {value}, so I will edit that file next."
    elif kind == "number":
        value = str(rng.randint(1_000_000, 9_999_999) * 100 + serial % 100)
        sentence = f"The nightly job processed {value} rows before it stopped."
    elif kind == "error code":
        value = f"ERR_{tag}"
        sentence = f"The service answered with error code {value} on every retry."
    else:
        value = f"make rebuild-{tag}"
        sentence = f"Run `{value}` to regenerate the fixtures before the tests."
    return Plant(kind, value, sentence)


@dataclass(slots=True)
class Quality:
    corpus: str
    messages: int
    leaves: int
    planted: dict[str, int]
    in_leaves: dict[str, int]
    kept: dict[str, int]
    named: dict[str, int]
    source_tokens: int
    summary_tokens: int
    seconds: float
    cpu_seconds: float = 0.0


def planted_messages(
    messages: Sequence[dict[str, Any]], every: int, seed: int
) -> tuple[list[dict[str, Any]], list[Plant]]:
    """Append one planted sentence to every ``every``-th message (never to the last 64)."""
    rng = random.Random(seed)
    plants: list[Plant] = []
    out: list[dict[str, Any]] = []
    limit = len(messages) - 64  # keep plants out of the protected tail
    for index, message in enumerate(messages):
        message = dict(message)
        if index % every == every // 2 and index < limit:
            plant = make_plant(rng, len(plants))
            plants.append(plant)
            message["content"] = f"{message.get('content') or ''}\n{plant.sentence}".strip()
        out.append(message)
    return out, plants


def measure_quality(
    home: Path, name: str, messages: Sequence[dict[str, Any]], plants: Sequence[Plant]
) -> Quality:
    from lossless.summarize.prompts import EXPAND_PREFIX

    with Engine.open(home, summarizer_provider="extractive") as engine:
        chat = engine.conversation(f"quality-{name}", project="bench-quality")
        for first in range(0, len(messages), BATCH):
            engine.ingest(chat.conversation, messages[first : first + BATCH])
        start, cpu = common.clock(), common.cpu_seconds()
        engine.compact(chat.id)
        seconds, cpu = common.clock() - start, common.cpu_seconds() - cpu
        leaves = engine.store.summaries.list(chat.id, depth=0)
        covered_ids = [m for s in leaves for m in engine.store.summaries.source_message_ids(s.id)]
        covered = "\n".join(m.content for m in engine.store.messages.get_many(covered_ids))
        bodies = "\n".join(s.content.split(EXPAND_PREFIX, 1)[0] for s in leaves)
        whole = "\n".join(s.content for s in leaves)
        planted = dict.fromkeys(KINDS, 0)
        in_leaves = dict.fromkeys(KINDS, 0)
        kept = dict.fromkeys(KINDS, 0)
        named = dict.fromkeys(KINDS, 0)
        for plant in plants:
            planted[plant.kind] += 1
            if plant.sentence not in covered:
                continue  # still a raw message: not the summarizer's to keep
            in_leaves[plant.kind] += 1
            kept[plant.kind] += plant.value in bodies
            named[plant.kind] += plant.value in whole
        return Quality(
            corpus=name,
            messages=len(messages),
            leaves=len(leaves),
            planted=planted,
            in_leaves=in_leaves,
            kept=kept,
            named=named,
            source_tokens=sum(s.source_token_count for s in leaves),
            summary_tokens=sum(s.token_count for s in leaves),
            seconds=seconds,
            cpu_seconds=cpu,
        )


def real_messages(scratch: Path, path: Path) -> list[dict[str, Any]]:
    """The messages of a real transcript (imported from where it lies) as plain dicts."""
    home = scratch / f"import-{path.stem}"
    with Engine.open(home) as engine:
        result = engine.import_file(path, final=True)
        if result.conversation_id is None:
            return []
        stored = list(engine.store.messages.iter_all(result.conversation_id))
    shutil.rmtree(home, ignore_errors=True)
    out: list[dict[str, Any]] = []
    for message in stored:
        if not message.content.strip():
            continue
        role = message.role if message.role in ("user", "assistant", "system") else "assistant"
        out.append({"role": role, "content": message.content, "created_at": message.created_at})
    return out


def bench_quality(scratch: Path, generated: int, every: int) -> None:
    corpora: list[tuple[str, list[dict[str, Any]]]] = []
    for seed in (3, 5):
        gen = list(bench_import.CorpusGenerator(seed).messages(generated))
        corpora.append((f"generated seed {seed} ({generated:,} msgs)", gen))
    transcripts = bench_import.real_transcripts() if common.DATA.is_dir() else []
    if not transcripts:
        print(f"real transcripts not found at {common.DATA}: skipped", flush=True)
    for path in transcripts:
        if "subagents" in path.parts or path.stat().st_size < 100_000:
            continue
        msgs = real_messages(scratch, path)
        if len(msgs) > 2 * every + 64:
            corpora.append((f"{path.parent.name}/{path.name[:13]}", msgs))
    rows: list[list[object]] = []
    totals = Quality(
        "all",
        0,
        0,
        dict.fromkeys(KINDS, 0),
        dict.fromkeys(KINDS, 0),
        dict.fromkeys(KINDS, 0),
        dict.fromkeys(KINDS, 0),
        0,
        0,
        0,
    )
    for index, (name, msgs) in enumerate(corpora):
        planted_msgs, plants = planted_messages(msgs, every, seed=100 + index)
        q = measure_quality(scratch / f"quality-{index}", name, planted_msgs, plants)
        rows.append(quality_row(q))
        for kind in KINDS:
            totals.planted[kind] += q.planted[kind]
            totals.in_leaves[kind] += q.in_leaves[kind]
            totals.kept[kind] += q.kept[kind]
            totals.named[kind] += q.named[kind]
        totals.messages += q.messages
        totals.leaves += q.leaves
        totals.source_tokens += q.source_tokens
        totals.summary_tokens += q.summary_tokens
        totals.seconds += q.seconds
        totals.cpu_seconds += q.cpu_seconds
    rows.append(quality_row(totals))
    common.print_table(
        [
            "corpus",
            "messages",
            "leaves",
            "planted",
            "in leaves",
            *[f"{k} kept" for k in KINDS],
            "kept (body)",
            "named (incl. expand line)",
            "compression",
            "compact s",
            "compact cpu s",
        ],
        rows,
        title=(
            "Extractive summarizer at the default targets (leaf_chunk_tokens 20,000, "
            f"leaf_target_tokens 1,200): one planted identifier every {every} messages"
        ),
    )


def quality_row(q: Quality) -> list[object]:
    total = sum(q.in_leaves.values())

    def frac(kept: int, planted: int) -> str:
        return f"{kept / planted:.0%}" if planted else "-"

    return [
        q.corpus,
        q.messages,
        q.leaves,
        sum(q.planted.values()),
        total,
        *[frac(q.kept[k], q.in_leaves[k]) for k in KINDS],
        frac(sum(q.kept.values()), total),
        frac(sum(q.named.values()), total),
        f"{q.source_tokens / q.summary_tokens:.1f}x" if q.summary_tokens else "-",
        round(q.seconds, 2),
        round(q.cpu_seconds, 2),
    ]


def bench_store_assembly(home: Path, runs: int, sweep_copy: Path | None) -> None:
    """The assembly rows for the largest conversation of the store at ``home`` (as it
    is), then of a copy of it at ``sweep_copy`` swept with the zero-cost summarizer."""
    with Engine.open(home) as engine:
        largest = max(
            engine.store.conversations.list(), key=lambda c: engine.store.context.stats(c.id).items
        )
        label = "compacted" if engine.store.context.stats(largest.id).summaries else "not compacted"
        rows = [
            [label, *time_assemble(engine, largest.id, runs), context_peak_rss(home, largest.id)]
        ]
    if sweep_copy is not None:
        if sweep_copy.exists():
            raise SystemExit(f"{sweep_copy} exists; give a new directory for the swept copy")
        shutil.copytree(home, sweep_copy)
        with Engine.open(sweep_copy) as engine:
            engine.summarizer = ZeroCostSummarizer()
            start, cpu = common.clock(), common.cpu_seconds()
            result = engine.compactor().sweep(largest.id)
            print(
                f"swept the copy: {len(result.passes)} passes in {common.clock() - start:.0f} s "
                f"({common.cpu_seconds() - cpu:.0f} s CPU)",
                flush=True,
            )
            rows.append(
                [
                    "compacted",
                    *time_assemble(engine, largest.id, runs),
                    context_peak_rss(sweep_copy, largest.id),
                ]
            )
    common.print_table(
        ASSEMBLE_HEADERS[:-1], rows, title=f"assemble at a 128k budget, store {home.name}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--assemble-runs", type=int, default=100)
    parser.add_argument("--quality-messages", type=int, default=3_000)
    parser.add_argument("--plant-every", type=int, default=25)
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-extractive", action="store_true")
    parser.add_argument(
        "--assemble-store",
        type=Path,
        help="only time assembly of the largest conversation of this store (an LCM_HOME)",
    )
    parser.add_argument(
        "--sweep-copy",
        type=Path,
        help="with --assemble-store: also copy the store here, sweep it, time assembly again",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="build the stores in this (new) folder and keep them, e.g. for `lcm status --sizes`",
    )
    args = parser.parse_args(argv)
    common.print_machine()
    if args.assemble_store is not None:
        bench_store_assembly(args.assemble_store, args.assemble_runs, args.sweep_copy)
        return 0
    if args.keep is not None:
        args.keep.mkdir(parents=True)
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="lcm-bench-compaction-"))
    try:
        if not args.skip_overhead:
            template = None if args.skip_extractive else scratch / "template"
            floor = bench_overhead(
                scratch / "overhead", args.messages, args.assemble_runs, template
            )
            if template is not None:
                bench_extractive(template, scratch / "extractive", floor)
        if not args.skip_quality:
            bench_quality(scratch, args.quality_messages, args.plant_every)
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
