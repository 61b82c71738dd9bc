"""``lcm verify`` on a large store: every content hash recomputed (issue 10, item 4).

A generated conversation of ``--messages`` messages (``bench_import``'s
corpus, stored through ``Engine.ingest``, so parts and hashes are written as
in use) is swept by a compactor with an instant summarizer, then verified
``--runs`` times. Reported: median wall time of the whole verify (content
hashes, coverage, the DAG, the backend's integrity check), its CPU time
(the wall time is inflated on a shared machine), and, in the same run, of
the checks without the content hashes (the baseline before them), with the
ratio.

Usage::

    .venv/bin/python benchmarks/bench_verify.py                    # 100,000 messages
    .venv/bin/python benchmarks/bench_verify.py --messages 10000 --runs 3
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import bench_compaction
import common

from lossless import Engine
from lossless.engine.verify import verify


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    common.print_machine()
    home = Path(tempfile.mkdtemp(prefix="lcm-bench-verify-"))
    try:
        with Engine.open(home) as engine:
            engine.summarizer = bench_compaction.ZeroCostSummarizer()
            chat = engine.conversation("bench-verify", project="bench")
            build = bench_compaction.ingest_generated(engine, chat.conversation, args.messages, 5)
            engine.compactor().sweep(chat.id)
            stats = engine.store.stats()
            print(f"stored {args.messages:,} messages in {build:.1f} s; {stats}", flush=True)
            full: list[float] = []
            without: list[float] = []
            cpu: list[float] = []
            for _ in range(args.runs):
                before = common.cpu_seconds()
                report, seconds = common.timed(lambda: verify(engine.store))
                cpu.append(common.cpu_seconds() - before)
                assert report.ok, report.problems[:3]
                full.append(seconds)
                _, seconds = common.timed(lambda: verify(engine.store, check_content=False))
                without.append(seconds)
        full_s, base_s = common.median(full), common.median(without)
        common.print_table(
            [
                "messages",
                "verify (s, median)",
                "verify CPU (s)",
                "without content hashes (s)",
                "ratio",
            ],
            [
                [
                    args.messages,
                    round(full_s, 2),
                    round(common.median(cpu), 2),
                    round(base_s, 2),
                    round(full_s / base_s, 2),
                ]
            ],
            title=f"lcm verify, {args.runs} runs",
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
