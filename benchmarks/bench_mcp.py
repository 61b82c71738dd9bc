"""``lcm mcp`` start-up as a client sees it: spawn -> initialize -> tools -> first call.

Each run spawns ``lcm mcp`` as a real subprocess in a project holding a
store of ``--messages`` generated messages and speaks MCP's stdio wire
(newline-delimited JSON-RPC) to it directly, so nothing but the server is
timed. From the moment of spawn: the ``initialize`` answer, the ``tools/list``
answer (sent right after ``initialize``, as clients do) and the answer to a
first ``lcm_grep`` call sent at once after it (it waits for the SDK to load);
then that call and a second one request -> answer, then stdin is closed and
the time to the process's exit taken, and the server's CPU time for the
whole session (user + system, from ``wait4``). Each run spawns three times:
the first call sent at once after ``tools/list`` (the worst case: the server
has had no time); sent ``--think-ms`` later (a client waiting for its model's
first answer before it calls a tool); and in a fresh home (the home's
tool-list cache deleted first, as on a new install or a new version's first
start), where ``tools/list`` is timed from spawn and then an ``lcm_store``
call, which only the SDK answers; and a session held open ``--hold-s``
after its first call (a client's session is minutes long), for the
server's CPU time and peak RSS over it. The interpreter floor (``python3 -c pass``,
spawn to exit) is measured in the same run, interleaved, so the ratio shows
what is ours. Children write and reuse bytecode (in a scratch prefix), as an
installed package does.

Usage::

    .venv/bin/python benchmarks/bench_mcp.py
    .venv/bin/python benchmarks/bench_mcp.py --runs 30 --messages 10000
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
from pathlib import Path
from typing import IO, Any

import bench_import
import common

from lossless import Engine

LCM = Path(sys.executable).parent / "lcm"


def build_store(home: Path, project: Path, messages: int) -> None:
    generator = bench_import.CorpusGenerator(5)
    with Engine.open(home) as engine:
        chat = engine.conversation("bench-mcp", project=str(project))
        batch: list[dict[str, Any]] = []
        for message in generator.messages(messages):
            batch.append(message)
            if len(batch) == 5_000:
                chat.ingest(batch)
                batch = []
        if batch:
            chat.ingest(batch)


def send(pipe: IO[bytes], message: dict[str, Any]) -> None:
    pipe.write(json.dumps(message).encode() + b"\n")
    pipe.flush()


def answer(pipe: IO[bytes], request_id: int) -> dict[str, Any]:
    while True:
        line = pipe.readline()
        if not line:
            raise RuntimeError(f"the server ended before answering request {request_id}")
        message = json.loads(line)
        if message.get("id") == request_id:
            if "error" in message:
                raise RuntimeError(f"request {request_id} failed: {message['error']}")
            return dict(message["result"])


def child_env(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    return env


def store_call(proc: subprocess.Popen[bytes], request_id: int) -> float:
    """An ``lcm_store`` call's request -> answer time."""
    assert proc.stdin is not None and proc.stdout is not None
    sent = time.perf_counter()
    send(
        proc.stdin,
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {
                "name": "lcm_store",
                "arguments": {"text": "Benchmark memory: deploys go through ops/deploy.sh"},
            },
        },
    )
    result = answer(proc.stdout, request_id)
    assert not result.get("isError"), result
    return time.perf_counter() - sent


def one_run(
    home: Path,
    project: Path,
    env: dict[str, str],
    think_s: float = 0.0,
    *,
    fresh: bool = False,
    hold_s: float = 0.0,
) -> dict[str, float]:
    env = {**env, "LCM_HOME": str(home)}
    if fresh:
        (home / "cache" / "mcp-tools-list.json").unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(LCM), "mcp"],
        cwd=project,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    send(
        proc.stdin,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        },
    )
    initialized = answer(proc.stdout, 0)
    t_init = time.perf_counter() - start
    assert initialized["serverInfo"]["name"] == "lossless"
    send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    send(proc.stdin, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    tools = answer(proc.stdout, 1)["tools"]
    t_list = time.perf_counter() - start
    assert any(t["name"] == "lcm_grep" for t in tools)
    if fresh:
        stored = store_call(proc, 9)
        proc.stdin.close()
        proc.wait(timeout=30)
        return {"fresh home: tools/list": t_list, "fresh home: first lcm_store": stored}
    calls = []
    time.sleep(think_s)
    for request_id, pattern in ((2, "update_decoder"), (3, "FAILED")):
        sent = time.perf_counter()
        send(
            proc.stdin,
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": "lcm_grep", "arguments": {"pattern": pattern, "limit": 5}},
            },
        )
        result = answer(proc.stdout, request_id)
        calls.append(time.perf_counter() - sent)
        if request_id == 2:
            t_first = time.perf_counter() - start
        assert not result.get("isError"), result
    time.sleep(hold_s)
    closed = time.perf_counter()
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "initialize": t_init,
        "tools/list": t_list,
        "first call answered": t_first,
        "first call, sent at once": calls[0],
        "second call": calls[1],
        "exit after EOF": time.perf_counter() - closed,
        "server CPU, session of list + 2 greps": usage.ru_utime + usage.ru_stime,
        "peak RSS MiB, session of list + 2 greps": usage.ru_maxrss / 1024,
    }


def floor_run(env: dict[str, str]) -> tuple[float, float]:
    """The interpreter floor: wall and CPU seconds of ``python -c pass``."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "pass"], env=env)
    _, _, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument(
        "--think-ms", type=float, default=300, help="Wait before the later first call."
    )
    parser.add_argument(
        "--hold-s", type=float, default=3.0, help="How long the held session stays open."
    )
    args = parser.parse_args(argv)
    common.print_machine()
    scratch = Path(tempfile.mkdtemp(prefix="lcm-bench-mcp-"))
    try:
        home, project = scratch / "home", scratch / "project"
        project.mkdir()
        build_store(home, project, args.messages)
        env = child_env(scratch)
        floor_run(env)
        one_run(home, project, env)  # warm the page cache and the bytecode caches
        one_run(home, project, env, fresh=True)
        runs: list[dict[str, float]] = []
        floors: list[float] = []
        floor_cpus: list[float] = []
        later = f"first call, sent {args.think_ms:.0f} ms after tools/list"
        for _ in range(args.runs):
            wall, cpu = floor_run(env)
            floors.append(wall)
            floor_cpus.append(cpu)
            run = one_run(home, project, env)
            think = one_run(home, project, env, args.think_ms / 1000)
            run[later] = think["first call, sent at once"]
            run.update(one_run(home, project, env, fresh=True))
            held = one_run(home, project, env, hold_s=args.hold_s)
            run[f"server CPU, session held {args.hold_s:g} s"] = held[
                "server CPU, session of list + 2 greps"
            ]
            run[f"peak RSS MiB, session held {args.hold_s:g} s"] = held[
                "peak RSS MiB, session of list + 2 greps"
            ]
            runs.append(run)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    floor = common.median(floors)
    floor_cpu = common.median(floor_cpus)
    rows: list[list[object]] = [
        [
            "python3 -c pass (floor, wall)",
            f"{floor * 1000:.1f}",
            f"{common.percentile(floors, 95) * 1000:.1f}",
            "1.0x",
        ],
        [
            "python3 -c pass (floor, CPU)",
            f"{floor_cpu * 1000:.1f}",
            f"{common.percentile(floor_cpus, 95) * 1000:.1f}",
            "1.0x",
        ],
    ]
    spawned = ("initialize", "tools/list", "first call answered", "fresh home: tools/list")
    for name in runs[0]:
        values = [r[name] for r in runs]
        p50 = common.median(values)
        since = "from spawn" if name in spawned else "request -> answer"
        if name == "exit after EOF":
            since = "stdin closed -> exit"
        ratio = f"{p50 / floor:.1f}x" if since == "from spawn" else "-"
        if name.startswith("server CPU"):
            since, ratio = "CPU", f"{p50 / floor_cpu:.1f}x"
        if name.startswith("peak RSS"):
            rows.append([name, f"{p50:.1f}", f"{common.percentile(values, 95):.1f}", "-"])
            continue
        rows.append(
            [
                f"{name} ({since})",
                f"{p50 * 1000:.1f}",
                f"{common.percentile(values, 95) * 1000:.1f}",
                ratio,
            ]
        )
    common.print_table(
        ["measure", "p50 ms", "p95 ms", "p50 / floor"],
        rows,
        title=f"lcm mcp over stdio, {args.runs} x 3 spawns, store of {args.messages:,} messages",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
