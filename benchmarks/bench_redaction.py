"""Redaction throughput on the real transcripts in ../shared/data (beside the checkout).

Run: ``.venv/bin/python benchmarks/bench_redaction.py [--runs 5] [--data DIR]``

Files are read in place (never copied); absent files are skipped. Each file is
split into lines (the whole document for .json) and every line is redacted with:

* ``text``: ``Redactor.redact_text`` -- what content and part texts go through;
* ``json``: ``Redactor.redact_json`` -- what native JSONL records go through;
* ``clean``: ``redact_text`` on prose of the same size with no detector anchor,
  the pre-filter's best case;
* ``import``: what an import redacts -- ``Redactor.redact_message`` on every
  parsed message (content, parts, metadata, raw records) and ``redact_json`` on
  every standalone record -- per MB of the file. Content, parts and raw
  records repeat much of the same text, so this is lower than ``json``.

Each figure is the median of ``--runs`` runs. MB/s counts characters as bytes
(the files are nearly all ASCII). Wall-clock and CPU-time figures are both shown:
on a shared machine the CPU figure is the stable one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from lossless.models import NewMessage, NewNativeRecord
from lossless.redact import Redactor, has_anchor
from lossless.sources import detect_kind, parser_for

T = TypeVar("T")
ImportUnit = NewMessage | NewNativeRecord

# ../shared/data beside the checkout, as the tests read it.
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
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
    "Nothing in this sentence looks like a hash, a URL or a login of any sort.\n"
)


def measure(
    units: Sequence[T], fn: Callable[[T], object], runs: int, size: float | None = None
) -> tuple[float, float]:
    """Median (wall MB/s, CPU MB/s) of ``runs`` passes of ``fn`` over ``units``.

    ``size`` is in MB; by default the units' total length (they are strings).
    """
    if size is None:
        size = sum(len(u) for u in units if isinstance(u, str)) / 1e6
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        for unit in units:
            fn(unit)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return size / max(statistics.median(walls), 1e-9), size / max(statistics.median(cpus), 1e-9)


def import_units(path: Path) -> list[ImportUnit]:
    """The messages and standalone records an import of ``path`` redacts."""
    kind = detect_kind(path)
    if kind is None:
        return []
    events, _ = parser_for(kind).parse(path)
    return [e for e in events if isinstance(e, NewMessage | NewNativeRecord)]


def redact_unit(redactor: Redactor, unit: ImportUnit) -> object:
    if isinstance(unit, NewMessage):
        return redactor.redact_message(unit)
    return redactor.redact_json(unit.raw)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Redaction throughput on real transcripts.")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    assert not has_anchor(CLEAN_PROSE), "the clean sample must not trigger any detector"

    redactor = Redactor()

    def redact_one(unit: ImportUnit) -> object:
        return redact_unit(redactor, unit)

    header = (
        f"{'file':44} {'MB':>5} {'lines':>5} {'finds':>5}  {'text wall/cpu MB/s':>18}"
        f"  {'json wall/cpu MB/s':>18}  {'clean wall/cpu MB/s':>19}"
        f"  {'import wall/cpu MB/s':>20}"
    )
    print(f"redaction throughput, median of {args.runs} runs")
    print(header)
    print("-" * len(header))
    everything: list[str] = []
    all_units: list[ImportUnit] = []
    all_mb = 0.0
    for rel in FILES:
        path = args.data / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        units = text.splitlines(keepends=True) if path.suffix == ".jsonl" else [text]
        everything += units
        finds = sum(len(redactor.find(u)) for u in units)
        clean = [CLEAN_PROSE * (len(u) // len(CLEAN_PROSE) + 1) for u in units]
        t = measure(units, redactor.redact_text, args.runs)
        j = measure(units, redactor.redact_json, args.runs)
        c = measure(clean, redactor.redact_text, args.runs)
        units_i = import_units(path)
        imported = "-"  # not a transcript an import reads (locomo)
        if units_i:
            all_units += units_i
            all_mb += len(text) / 1e6
            i = measure(units_i, redact_one, args.runs, len(text) / 1e6)
            imported = f"{i[0]:8.1f} / {i[1]:7.1f}"
        name = path.name if len(path.name) <= 44 else path.name[:41] + "..."
        print(
            f"{name:44} {len(text) / 1e6:5.2f} {len(units):5d} {finds:5d}"
            f"  {t[0]:8.1f} / {t[1]:7.1f}  {j[0]:8.1f} / {j[1]:7.1f}  {c[0]:9.1f} / {c[1]:7.1f}"
            f"  {imported:>20}"
        )
    if not everything:
        print(f"no transcript found under {args.data}", file=sys.stderr)
        return 1
    t = measure(everything, redactor.redact_text, args.runs)
    j = measure(everything, redactor.redact_json, args.runs)
    i = measure(all_units, redact_one, args.runs, all_mb)
    print("-" * len(header))
    total = sum(len(u) for u in everything) / 1e6
    print(
        f"{'all files':44} {total:5.2f} {len(everything):5d} {'':5}"
        f"  {t[0]:8.1f} / {t[1]:7.1f}  {j[0]:8.1f} / {j[1]:7.1f}  {'':19}"
        f"  {i[0]:10.1f} / {i[1]:7.1f}"
    )
    print(f"import: {all_mb:.2f} MB of transcripts, {len(all_units)} messages and records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
