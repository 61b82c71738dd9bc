"""Redaction's share of import time, on the real transcripts.

Imports every transcript in ../shared/data (read in place) into a fresh
SQLite store, with redaction on and with it off, several times each, and
reports the medians and the share redaction adds (issue target: <= 25%), by
wall clock and by the CPU time of this process. On a shared machine the wall
clock swings with other people's load (the same import has taken 0.6 s and
1.3 s minutes apart); the CPU share is the stable figure.

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


def import_all(files: list[Path], *, redaction: bool) -> tuple[float, float, int]:
    """(wall s, CPU s, messages added) of one import into a fresh store."""
    with (
        tempfile.TemporaryDirectory() as home,
        Engine.open(home, redaction_enabled=redaction) as engine,
    ):
        wall, cpu = time.perf_counter(), time.process_time()
        added = sum(engine.import_file(f, final=True).messages_added for f in files)
        return time.perf_counter() - wall, time.process_time() - cpu, added


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


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
    walls: dict[bool, list[float]] = {True: [], False: []}
    cpus: dict[bool, list[float]] = {True: [], False: []}
    messages = 0
    for _ in range(args.runs):
        for redaction in (False, True):  # interleaved, so drift hits both alike
            wall, cpu, messages = import_all(files, redaction=redaction)
            walls[redaction].append(wall)
            cpus[redaction].append(cpu)
    print(f"{len(files)} transcripts, {size_mb:.1f} MB, {messages} messages, {args.runs} runs each")
    print(f"{'redaction':<10} {'wall s':>7} {'CPU s':>7} {'messages/CPU s':>15} {'MB/CPU s':>9}")
    for label, enabled in (("off", False), ("on", True)):
        wall, cpu = median(walls[enabled]), median(cpus[enabled])
        print(
            f"{label:<10} {wall:>7.3f} {cpu:>7.3f} {messages / cpu:>15,.0f} {size_mb / cpu:>9.1f}"
        )
    for what, t in (("wall clock", walls), ("CPU time", cpus)):
        off, on = median(t[False]), median(t[True])
        print(f"redaction adds {100 * (on - off) / off:.1f}% to import {what} (target <= 25%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
