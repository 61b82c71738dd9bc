"""Embedding backlog of the real transcripts: throughput per CPU second, wall time.

The real Claude Code and Codex transcripts of ``../shared/data`` are imported
into a new store (``Engine.import_file``, as ``lcm import`` does), then every
item without a vector is embedded by ``Engine.embed``: the call the
background worker makes in slices (``worker.py``) and ``lcm embed`` makes in
the foreground. One thread, the worker's default. Reported: items, chunks
stored and chunks reused, CPU seconds and wall of the embedding alone, items
and chunks per CPU second, the model's load time, and the import's CPU.

``--base DIR`` runs the same measurement at the same time against another
source tree (``DIR/src`` first on ``PYTHONPATH``: e.g. a ``git archive`` of
an older commit), so both see the same machine; compare their CPU seconds,
not their wall (the cores are shared). Each run prints a progress line to
stderr every ``--every`` CPU seconds, so a run stopped early still says what
rate it had.

The backlog of 100,000 messages is projected from the items-per-CPU-second
rate of these transcripts (say so when quoting it): the store's side of a
batch is keyset-paginated (``vectors.pending`` after the last message id), so
it does not grow with the store, and the model's cost is per text.

Usage::

    .venv/bin/python benchmarks/bench_embed_backlog.py
    .venv/bin/python benchmarks/bench_embed_backlog.py --base /tmp/base --json /tmp/backlog.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import common

PROJECTED_MESSAGES = 100_000


def _transcripts() -> list[tuple[Path, str]]:
    files = [(p, "claude-code") for p in sorted((common.DATA / "claude-code").rglob("*.jsonl"))]
    return files + [(p, "codex") for p in sorted((common.DATA / "codex").rglob("*.jsonl"))]


def child(label: str, every: float, keep: Path | None) -> dict[str, Any]:
    """Import the transcripts into a new store and embed its whole backlog."""
    import lossless
    from lossless import Engine
    from lossless.embeddings.loader import load_embedder

    if keep is not None and keep.exists():
        raise SystemExit(f"--keep {keep}: already exists (the store is built anew)")
    home = keep or Path(tempfile.mkdtemp(prefix="lcm-backlog-"))
    try:
        with Engine.open(home) as engine:
            cpu, wall = common.cpu_seconds(), time.perf_counter()
            for path, kind in _transcripts():
                engine.import_file(path, kind, final=True)  # type: ignore[arg-type]
            import_cpu, import_wall = common.cpu_seconds() - cpu, time.perf_counter() - wall
            messages = engine.store.stats().messages
            status = engine.semantic_status()
            if not status.active:
                raise SystemExit(f"{label}: semantic search is off here: {status.reason}")
            pending = status.progress.total_pending if status.progress else None

            cpu, wall = common.cpu_seconds(), time.perf_counter()
            embedder = load_embedder(engine.config.semantic_model)  # Engine.embed reuses it
            embedder.passages(["warm up"])  # the stored-text runtime loads on its first batch
            load_cpu, load_wall = common.cpu_seconds() - cpu, time.perf_counter() - wall
            rss_model = common.self_peak_rss_mb()

            done = 0
            cpu, wall = common.cpu_seconds(), time.perf_counter()
            next_report = every

            def progress(items: int) -> None:
                nonlocal done, next_report
                done += items
                spent = common.cpu_seconds() - cpu
                if spent >= next_report:
                    next_report = spent + every
                    print(
                        f"[{label}] {done:,}/{pending:,} items in {spent:.0f} CPU s, "
                        f"{time.perf_counter() - wall:.0f} s wall ({done / spent:.2f} items/CPU s)",
                        file=sys.stderr,
                        flush=True,
                    )

            run = engine.embed(progress=progress)
            embed_cpu, embed_wall = common.cpu_seconds() - cpu, time.perf_counter() - wall
            left = engine.semantic_status().progress
            return {
                "label": label,
                "source": str(Path(lossless.__file__).parent),
                "messages": messages,
                "import_cpu_s": import_cpu,
                "import_wall_s": import_wall,
                "pending_before": pending,
                "pending_after": left.total_pending if left else None,
                "items": run.items,
                "chunks": run.chunks,
                # Chunks whose vector was reused from an identical text (absent before reuse).
                "reused": getattr(run, "reused", 0),
                "embed_cpu_s": embed_cpu,
                "embed_wall_s": embed_wall,
                "model_load_cpu_s": load_cpu,
                "model_load_wall_s": load_wall,
                "model_rss_mb": rss_model,
                "peak_rss_mb": common.self_peak_rss_mb(),
            }
    finally:
        if keep is None:
            shutil.rmtree(home, ignore_errors=True)


def _run(label: str, tree: Path | None, every: float, keep: Path | None) -> dict[str, Any]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree / "src") + os.pathsep + env.get("PYTHONPATH", "")
    here = str(Path(__file__).resolve())
    proc = subprocess.run(
        [sys.executable, here, "--child", label, "--every", str(every)]
        + ([] if keep is None else ["--keep", str(keep)]),
        stdout=subprocess.PIPE,
        env=env,
        cwd=common.REPO,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{label}: the child failed with exit code {proc.returncode}")
    lines = [x for x in proc.stdout.decode("utf-8").splitlines() if x.startswith("{")]
    if not lines:
        raise RuntimeError(f"{label}: the child printed no JSON result")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", type=Path, help="also measure this source tree (DIR/src)")
    parser.add_argument("--every", type=float, default=60.0, help="progress every N CPU s")
    parser.add_argument("--json", type=Path, help="write the results here too")
    parser.add_argument(
        "--keep", type=Path, help="keep the current tree's store here (a new folder)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        common.emit(child(args.child, args.every, args.keep))
        return 0
    if not common.DATA.exists():
        print(f"transcripts not found at {common.DATA}: nothing to measure", file=sys.stderr)
        return 2
    common.print_machine()
    runs: list[tuple[str, Path | None]] = [("current", None)]
    if args.base is not None:
        if not (args.base / "src" / "lossless").is_dir():
            print(f"--base {args.base}: no src/lossless in it", file=sys.stderr)
            return 2
        runs.append(("base", args.base.resolve()))
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    with ThreadPoolExecutor(len(runs)) as pool:
        results = list(
            pool.map(
                lambda r: _run(r[0], r[1], args.every, args.keep if r[1] is None else None),
                runs,
            )
        )
    rows = []
    for r in results:
        rate = r["items"] / r["embed_cpu_s"]
        rows.append(
            [
                r["label"],
                r["messages"],
                r["items"],
                r["chunks"],
                r["reused"],
                r["embed_cpu_s"],
                r["embed_wall_s"],
                rate,
                r["chunks"] / r["embed_cpu_s"],
                PROJECTED_MESSAGES / rate / 3600,
                r["model_load_wall_s"],
                r["import_cpu_s"],
            ]
        )
    common.print_table(
        [
            "tree",
            "messages",
            "items",
            "chunks",
            "reused",
            "embed CPU s",
            "embed wall s",
            "items/CPU s",
            "chunks/CPU s",
            "100k msgs CPU h (projected)",
            "model load s",
            "import CPU s",
        ],
        rows,
        title=f"embedding backlog of the real transcripts, one thread (started {started})",
    )
    if len(results) == 2:
        current, base = results
        if base["items"] == current["items"]:
            print(f"CPU ratio base/current: {base['embed_cpu_s'] / current['embed_cpu_s']:.2f}")
        else:  # a run stopped early: compare the progress lines at the same item counts
            print("the runs embedded different items: compare their progress lines instead")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
