"""The first prompt-injection ``scan`` in a fresh process: CPU and wall time.

A hook that surfaces a memory, the SessionStart DAG view and the MCP server's
first recall each scan a text once in a new process, so what the detector
sets up on its first ``scan`` (its literal gates: the literal sets read off
~120 patterns, the Aho-Corasick automatons; the candidate patterns compiled)
is paid in full there. Each child is a fresh interpreter that does what a
hook does around it (``regex_cache`` and ``dataclass_cache`` installed, then
kept), imports ``lossless.injection``, and times its first and second
``scan`` of a recalled memory in CPU (``time.process_time``) and wall time.

Modes, interleaved run by run with the interpreter floor (``python -c pass``,
spawn to exit, wall and CPU from ``wait4``):

- ``kept``: the bytecode folder holds what an earlier process kept (the
  steady state of a machine running hooks all day);
- ``cold``: the kept literal sets are deleted before each run (the first
  process after an install or an upgrade; the compiled-regex and dataclass
  caches are kept, as they would be).

Children write and reuse bytecode in a scratch prefix. ``--src DIR`` runs
another checkout's ``src`` (``PYTHONPATH``), for a before/after in one run.

    setsid bash -c 'echo -15 > /proc/$$/autogroup; exec .venv/bin/python benchmarks/bench_first_scan.py --runs 15'
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

_CHILD = """
import json, time
cpu0, wall0 = time.process_time(), time.perf_counter()
from lossless import dataclass_cache, regex_cache
regex_cache.install()
dataclass_cache.install()
import lossless.injection as injection
cpu1, wall1 = time.process_time(), time.perf_counter()
first = injection.scan(MEMORY)
cpu2, wall2 = time.process_time(), time.perf_counter()
second = injection.scan(SECOND)
cpu3 = time.process_time()
regex_cache.keep()
dataclass_cache.keep()
print(json.dumps({
    "import_cpu": cpu1 - cpu0, "first_cpu": cpu2 - cpu1, "first_wall": wall2 - wall1,
    "second_cpu": cpu3 - cpu2, "findings": len(first) + len(second),
}))
"""

MEMORY = (
    "Deploys go through `make release`; the staging database is db.staging.internal:5432 "
    "and the integration tests read PGPASSWORD from the team vault. Flaky test: "
    "tests/test_sync.py::test_retry_backoff, rerun it once before filing a bug."
)
SECOND = (
    "The user prefers small commits with messages that say why; run `pytest -q` and "
    "`ruff check` before pushing, never force-push main."
)


def child_code() -> str:
    return f"MEMORY = {MEMORY!r}\nSECOND = {SECOND!r}\n" + _CHILD


def run_child(env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", child_code()],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    import json

    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def floor_run(env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of ``python -c pass``, spawn to exit."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "pass"], env=env)
    _pid, _status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime


def literal_files(prefix: Path) -> list[Path]:
    return list(prefix.rglob("regex-literals.*.marshal"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--src", type=Path, help="another checkout's src, run via PYTHONPATH")
    args = parser.parse_args()
    common.print_machine()
    scratch = Path(tempfile.mkdtemp(prefix="bench-first-scan-"))
    prefix = scratch / "pycache"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    if args.src is not None:
        env["PYTHONPATH"] = str(args.src.resolve())
    for _ in range(2):  # bytecode and the kept caches written
        run_child(env)
        floor_run(env)
    kept_files = bool(literal_files(prefix))
    figures: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        figures.setdefault(name, []).append(value * 1000)

    findings = set()
    for _ in range(args.runs):
        wall, cpu = floor_run(env)
        add("floor wall", wall)
        add("floor CPU", cpu)
        for mode in ("kept", "cold"):
            if mode == "cold":
                for path in literal_files(prefix):
                    path.unlink()
            result = run_child(env)
            findings.add(result["findings"])
            add(f"{mode}: import (regex and dataclass caches installed) CPU", result["import_cpu"])
            add(f"{mode}: first scan CPU", result["first_cpu"])
            add(f"{mode}: first scan wall", result["first_wall"])
            add(f"{mode}: second scan CPU", result["second_cpu"])
    rows = [
        [name, common.median(values), common.percentile(values, 95)]
        for name, values in figures.items()
    ]
    common.print_table(
        ["measure (ms)", "p50", "p95"],
        rows,
        title=(
            f"first scan in a fresh process, {args.runs} runs each, interleaved"
            f" (code: {args.src or 'this checkout'}; literal sets kept in a file:"
            f" {'yes' if kept_files else 'no'}; findings {sorted(findings)};"
            f" load {os.getloadavg()[0]:.1f};"
            f" this process CPU {resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime:.1f} s children)"
        ),
    )


if __name__ == "__main__":
    main()
