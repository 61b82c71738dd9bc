"""Redaction's share of import time, on the real transcripts.

Imports every transcript in ../shared/data (read in place) into a fresh
SQLite store, with redaction on and with it off, several times each, and
reports the medians and the share redaction adds (issue target: <= 25%).

    .venv/bin/python benchmarks/bench_redaction_share.py [--runs 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from lossless.engine.engine import Engine
from lossless.engine.ingest import expand_paths

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def import_all(files: list[Path], *, redaction: bool) -> tuple[float, int]:
    with (
        tempfile.TemporaryDirectory() as home,
        Engine.open(home, redaction_enabled=redaction) as engine,
    ):
        started = time.perf_counter()
        added = sum(engine.import_file(f, final=True).messages_added for f in files)
        return time.perf_counter() - started, added


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    folders = [args.data / "claude-code", args.data / "codex"]
    files = [p for p in expand_paths([f for f in folders if f.is_dir()]) if p.suffix == ".jsonl"]
    if not files:
        print(f"no transcripts under {args.data}", file=sys.stderr)
        return 1
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    timings: dict[bool, list[float]] = {True: [], False: []}
    messages = 0
    for _ in range(args.runs):
        for redaction in (False, True):  # interleaved, so drift hits both alike
            seconds, messages = import_all(files, redaction=redaction)
            timings[redaction].append(seconds)
    off = sorted(timings[False])[len(timings[False]) // 2]
    on = sorted(timings[True])[len(timings[True]) // 2]
    print(f"{len(files)} transcripts, {size_mb:.1f} MB, {messages} messages, {args.runs} runs each")
    print(f"{'redaction':<10} {'median s':>9} {'messages/s':>11} {'MB/s':>7}")
    for label, seconds in (("off", off), ("on", on)):
        print(f"{label:<10} {seconds:>9.3f} {messages / seconds:>11,.0f} {size_mb / seconds:>7.1f}")
    print(f"redaction adds {100 * (on - off) / off:.1f}% to import time (target <= 25%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
