"""``lcm`` start-up as a user sees it: whole commands on a large store, beside the floor.

Each command (``lcm --version``, ``lcm grep``, ``lcm describe``, ``lcm
status``) runs as a real subprocess in a project holding ``--messages``
generated messages (the MCP benchmark's store, ``bench_mcp.build_store``),
output piped, alternately with the interpreter floor (``python -c pass``,
the same interpreter) so both see the same machine. Wall time from spawn to
exit and the child's CPU time (user + system, from ``wait4``); medians and
the ratio to the floor's median of the same run. Children write and reuse
bytecode (in a scratch prefix), as an installed package does; one warm-up
run of each command fills it and the page cache first.

Building a 100,000-message store takes minutes: ``--home`` keeps it for the
next run (built there when missing). ``--before-src`` names the ``src``
folder of another checkout (an earlier commit): each command then also runs
with that code (``PYTHONPATH``), interleaved with this one's, so the two
columns share the machine's load; ``--before-home`` gives it a copy of the
store at its own schema (this code migrates the store it opens, which older
code then refuses).

Usage::

    .venv/bin/python benchmarks/bench_cli.py --messages 100000 --home /tmp/lcm-bench-cli
    .venv/bin/python benchmarks/bench_cli.py --messages 10000 --runs 10
    .venv/bin/python benchmarks/bench_cli.py --before-src /tmp/old-checkout/src
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import bench_mcp
import common

LCM = Path(sys.executable).parent / "lcm"
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("--version",),
    ("grep", "update_decoder", "--limit", "5"),
    ("describe", "1"),
    ("status",),
)


def timed(argv: Sequence[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv`` (which must succeed)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {code}")
    return wall, usage.ru_utime + usage.ru_stime


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument(
        "--home", type=Path, help="Keep the store here (built when missing) for later runs."
    )
    parser.add_argument(
        "--before-src", type=Path, help="Also run each command with this code, interleaved."
    )
    parser.add_argument(
        "--before-home",
        type=Path,
        help="The LCM_HOME the --before-src code runs on (a copy of the store at that code's "
        "schema: a store migrated by this code is refused by older code).",
    )
    args = parser.parse_args(argv)
    common.print_machine()
    scratch = Path(tempfile.mkdtemp(prefix="lcm-bench-cli-"))
    try:
        where = args.home if args.home is not None else scratch / "store"
        home, project = where / "home", where / "project"
        marker = where / f"built-{args.messages}"
        if not marker.exists():
            shutil.rmtree(where, ignore_errors=True)
            project.mkdir(parents=True)
            print(f"building a store of {args.messages:,} messages in {where} ...", flush=True)
            bench_mcp.build_store(home, project, args.messages)
            marker.touch()
        env = bench_mcp.child_env(scratch)
        env["LCM_HOME"] = str(home)
        env.pop("COLUMNS", None)
        before_env = None
        if args.before_src is not None:
            before_env = {**env, "PYTHONPATH": str(args.before_src.resolve())}
            if args.before_home is not None:
                before_env["LCM_HOME"] = str(args.before_home.resolve())
        floor_argv = [sys.executable, "-c", "pass"]
        timed(floor_argv, env, project)
        for command in COMMANDS:
            timed([str(LCM), *command], env, project)  # bytecode, page cache
            if before_env is not None:
                timed([str(LCM), *command], before_env, project)
        floors: list[tuple[float, float]] = []
        results: dict[tuple[str, ...], list[tuple[float, float]]] = {c: [] for c in COMMANDS}
        before: dict[tuple[str, ...], list[tuple[float, float]]] = {c: [] for c in COMMANDS}
        for _ in range(args.runs):
            for command in COMMANDS:
                floors.append(timed(floor_argv, env, project))
                results[command].append(timed([str(LCM), *command], env, project))
                if before_env is not None:
                    before[command].append(timed([str(LCM), *command], before_env, project))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    floor_wall = common.median([w for w, _ in floors])
    floor_cpu = common.median([c for _, c in floors])
    compared = args.before_src is not None
    rows: list[list[object]] = [
        [
            "python -c pass (floor)",
            *(["-", "-"] if compared else []),
            f"{floor_wall * 1000:.1f}",
            f"{floor_cpu * 1000:.1f}",
            "1.0x",
        ]
    ]
    for command, runs in results.items():
        wall = common.median([w for w, _ in runs])
        cpu = common.median([c for _, c in runs])
        then = before[command]
        rows.append(
            [
                f"lcm {' '.join(command)}",
                *(
                    [
                        f"{common.median([w for w, _ in then]) * 1000:.1f}",
                        f"{common.median([c for _, c in then]) * 1000:.1f}",
                    ]
                    if compared
                    else []
                ),
                f"{wall * 1000:.1f}",
                f"{cpu * 1000:.1f}",
                f"{wall / floor_wall:.1f}x",
            ]
        )
    before_headers = ["before wall ms", "before cpu ms"] if compared else []
    common.print_table(
        ["command", *before_headers, "wall p50 ms", "cpu p50 ms", "wall / floor"],
        rows,
        title=f"lcm commands, {args.runs} runs each, store of {args.messages:,} messages",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
