"""Where ``lcm grep``'s time goes: start-up, imports, store opening, query, printing, exit.

Each run is a fresh interpreter that does what ``lcm grep PATTERN --limit N``
does on its usual (click-free) path, ``cli.main`` then ``cli/fast_path.py``,
with a clock between the steps: the start-up caches (``deferred_modules``,
``dataclass_cache``, ``regex_cache``), importing the modules a real ``lcm
grep`` imports (listed from one real run, in its order), opening the store
(``CliState.engine``), the search (``Engine.grep``), printing the table (the
rest of ``run_grep``) and closing. CPU (``time.process_time``) and wall time
per step; "interpreter" is the child's whole CPU (``wait4``) less the steps:
Python's own start and exit, which ``python -c pass`` (the floor, run
alternately) also pays. Medians over the runs.

The store is ``bench_cli.py``'s (``--home`` as given to it; build it there
first). ``--before-src`` also runs each step with another checkout's code
(``PYTHONPATH``), interleaved.

Usage::

    .venv/bin/python benchmarks/bench_cli.py --messages 100000 --runs 1 --home /tmp/lcm-bench-cli
    .venv/bin/python benchmarks/bench_cli_phases.py --home /tmp/lcm-bench-cli --runs 15
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import bench_mcp
import common

# What a real run imports of lossless, in order (printed after cli.main).
_LIST_MODULES = """
import json, sys
from lossless.cli import main
main(sys.argv[1:])
sys.stdout.flush()
print(json.dumps([name for name in sys.modules if name.startswith("lossless")]), file=sys.stderr)
"""

_PHASES = """
import time
marks = [(time.process_time(), time.perf_counter())]
def mark():
    marks.append((time.process_time(), time.perf_counter()))
import importlib, json, sys
modules, pattern, limit = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
import lossless.cli as cli
cli._pause_gc()
try:
    from lossless import deferred_modules
    deferred_modules.defer()
except ImportError:
    try:
        from lossless import lazy_inspect  # its name in 5ea43db..0e89975
        lazy_inspect.defer()
    except ImportError:  # code from before either
        pass
from lossless import dataclass_cache, regex_cache
regex_cache.install()
dataclass_cache.install()
mark()
for name in modules:
    importlib.import_module(name)
mark()
from lossless.cli import fast_path
from lossless.cli.grep_command import run_grep
from lossless.cli.output import print_json
from lossless.cli.state import CliState
state = CliState(None)
engine = state.engine()
mark()
searched = []
grep = engine.grep
def timed_grep(*args, **kwargs):
    hits = grep(*args, **kwargs)
    searched.append((time.process_time(), time.perf_counter()))
    return hits
engine.grep = timed_grep
run_grep(engine, pattern, mode="regex", scope="both", conversation=None, session=None,
         project=None, since=None, limit=limit, time_budget=None, as_json=False,
         say=fast_path._say, emit=print_json)
sys.stdout.flush()
marks.append(searched[0])
mark()
state.close()
mark()
regex_cache.keep()
dataclass_cache.keep()
print(json.dumps(marks), file=sys.stderr)
"""

STEPS = ("start-up caches", "imports", "open the store", "query", "print", "close")


def _child(argv: Sequence[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    """The child's CPU seconds (``wait4``) and its stderr's last line."""
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} failed: {err[-2000:]}")
    lines = err.strip().splitlines()
    return usage.ru_utime + usage.ru_stime, lines[-1] if lines else ""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="bench_cli.py's --home")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--pattern", default="update_decoder")
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--before-src", type=Path, help="Also run with this code, interleaved.")
    args = parser.parse_args(argv)
    common.print_machine()
    home, project = args.home / "home", args.home / "project"
    if not (home / "lcm.db").exists():
        parser.error(f"no store in {home}: build it with bench_cli.py --home {args.home}")
    scratch = Path(tempfile.mkdtemp(prefix="lcm-bench-cli-phases-"))
    try:
        env = bench_mcp.child_env(scratch)
        env["LCM_HOME"] = str(home)
        env.pop("COLUMNS", None)
        codes = {"after": env}
        if args.before_src is not None:
            codes = {"before": {**env, "PYTHONPATH": str(args.before_src.resolve())}, **codes}
        grep = ["grep", args.pattern, "--limit", str(args.limit)]
        listed = {}
        for name, code_env in codes.items():
            for _ in range(2):  # bytecode and the caches, then the list
                _, line = _child([sys.executable, "-c", _LIST_MODULES, *grep], code_env, project)
            listed[name] = line
        phase_argv = {
            name: [sys.executable, "-c", _PHASES, listed[name], args.pattern, str(args.limit)]
            for name in codes
        }
        for name, code_env in codes.items():
            _child(phase_argv[name], code_env, project)
        floor_argv = [sys.executable, "-c", "pass"]
        floors: list[float] = []
        cpu: dict[str, list[list[float]]] = {name: [] for name in codes}
        wall: dict[str, list[list[float]]] = {name: [] for name in codes}
        for _ in range(args.runs):
            for name, code_env in codes.items():
                floors.append(_child(floor_argv, code_env, project)[0])
                total, line = _child(phase_argv[name], code_env, project)
                marks = json.loads(line)
                steps_cpu = [b[0] - a[0] for a, b in itertools.pairwise(marks)]
                steps_wall = [b[1] - a[1] for a, b in itertools.pairwise(marks)]
                # marks: caches | imports | open | query | (print) | close: the
                # query's mark sits inside run_grep, so print is the step after it.
                cpu[name].append([*steps_cpu, total - sum(steps_cpu), total])
                wall[name].append(steps_wall)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    names = list(codes)
    rows: list[list[object]] = []
    for index, step in enumerate(STEPS):
        row: list[object] = [step]
        for name in names:
            row.append(f"{common.median([r[index] for r in cpu[name]]) * 1000:.1f}")
            row.append(f"{common.median([r[index] for r in wall[name]]) * 1000:.1f}")
        rows.append(row)
    for label, index in (("interpreter (start, exit)", len(STEPS)), ("whole child", -1)):
        row = [label]
        for name in names:
            row += [f"{common.median([r[index] for r in cpu[name]]) * 1000:.1f}", "-"]
        rows.append(row)
    rows.append(
        ["python -c pass (floor)", *[f"{common.median(floors) * 1000:.1f}", "-"] * len(names)]
    )
    headers = ["step"]
    for name in names:
        headers += [f"{name} cpu ms", f"{name} wall ms"]
    common.print_table(
        headers,
        rows,
        title=f"lcm grep {args.pattern} --limit {args.limit}, step by step, {args.runs} runs",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
