"""Redaction throughput on the real transcripts in /work/shared/data.

Run: ``.venv/bin/python benchmarks/bench_redaction.py [--runs 5] [--data DIR]``

Files are read in place (never copied); absent files are skipped. For each file
it times, over every line (the whole document for .json), the median of
``--runs`` runs of:

* ``text``: ``Redactor.redact_text`` -- what content and part texts go through;
* ``json``: ``Redactor.redact_json`` -- what native JSONL records go through;
* ``clean``: ``redact_text`` on a same-size prose text with no detector anchor,
  the prefilter's best case.

MB/s counts characters of input as bytes (the files are nearly all ASCII).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from lossless.redact import Redactor

DEFAULT_DATA = Path("/work/shared/data")
FILES = (
    "claude-code/spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
    "claude-code/spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl",
    "claude-code/spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-acompact-e1f845.jsonl",
    "claude-code/spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "claude-code/spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
    "claude-code/spotter/short.jsonl",
    "claude-code/spotter/tool_heavy.jsonl",
    "codex/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    "codex/codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
    "locomo/locomo10.json",
)
CLEAN_PROSE = (
    "The quick brown fox jumps over the lazy dog while the compiler runs its tests. "
    "Nothing in this sentence looks like a credential, a hash or a URL at all.\n"
)


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def throughput(units: Sequence[str], fn: Callable[[str], object], runs: int) -> float:
    size = sum(len(u) for u in units)
    seconds = median_seconds(lambda: [fn(u) for u in units], runs)
    return size / seconds / 1e6 if seconds > 0 else float("inf")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)

    redactor = Redactor()
    rows: list[tuple[str, float, int, int, float, float, float]] = []
    all_lines: list[str] = []
    for rel in FILES:
        path = args.data / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        units = text.splitlines(keepends=True) if path.suffix == ".jsonl" else [text]
        all_lines += units
        findings = sum(len(redactor.find(u)) for u in units)
        clean = [CLEAN_PROSE * (len(u) // len(CLEAN_PROSE) + 1) for u in units[:50]]
        rows.append(
            (
                path.name if len(path.name) <= 44 else path.name[:41] + "...",
                len(text) / 1e6,
                len(units),
                findings,
                throughput(units, redactor.redact_text, args.runs),
                throughput(units, redactor.redact_json, args.runs),
                throughput(clean, redactor.redact_text, args.runs),
            )
        )
    if not rows:
        print(f"no transcript found under {args.data}", file=sys.stderr)
        return 1

    header = f"{'file':44} {'MB':>6} {'lines':>6} {'finds':>5} {'text MB/s':>10} {'json MB/s':>10} {'clean MB/s':>10}"
    print(f"redaction throughput, median of {args.runs} runs")
    print(header)
    print("-" * len(header))
    for name, mb, n, finds, text_mbs, json_mbs, clean_mbs in rows:
        print(
            f"{name:44} {mb:6.2f} {n:6d} {finds:5d} {text_mbs:10.1f} {json_mbs:10.1f} {clean_mbs:10.1f}"
        )
    total = sum(len(u) for u in all_lines) / 1e6
    overall_text = throughput(all_lines, redactor.redact_text, args.runs)
    overall_json = throughput(all_lines, redactor.redact_json, args.runs)
    print("-" * len(header))
    print(
        f"{'all files':44} {total:6.2f} {len(all_lines):6d} {'':5} {overall_text:10.1f} {overall_json:10.1f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
