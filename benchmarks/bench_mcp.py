"""``lcm mcp`` start-up as a client sees it: spawn -> initialize -> tools -> first call.

Each run spawns ``lcm mcp`` as a real subprocess in a project holding a
store of ``--messages`` generated messages and speaks MCP's stdio wire
(newline-delimited JSON-RPC) to it directly, so nothing but the server is
timed. From the moment of spawn: the ``initialize`` answer, the ``tools/list``
answer (sent right after ``initialize``, as clients do) and the answer to a
first ``lcm_grep`` call sent at once after it (it waits for the SDK to load);
then that call and a second one request -> answer, then stdin is closed and
the time to the process's exit taken. The tool list is the cached one (the
warm-up run fills the cache), as on every start but a new version's first.
Each spawn is made twice: the first call sent at once after ``tools/list``
(the worst case: the server has had no time), and sent ``--think-ms`` later
(a client waiting for its model's first answer before it calls a tool).
The interpreter floor (``python3 -c pass``, spawn to exit) is measured in the
same run, interleaved, so the ratio shows what is ours.

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


def one_run(home: Path, project: Path, think_s: float = 0.0) -> dict[str, float]:
    env = {**os.environ, "LCM_HOME": str(home)}
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
    closed = time.perf_counter()
    proc.stdin.close()
    proc.wait(timeout=30)
    return {
        "initialize": t_init,
        "tools/list": t_list,
        "first call answered": t_first,
        "first call, sent at once": calls[0],
        "second call": calls[1],
        "exit after EOF": time.perf_counter() - closed,
    }


def floor_run() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument(
        "--think-ms", type=float, default=300, help="Wait before the later first call."
    )
    args = parser.parse_args(argv)
    common.print_machine()
    scratch = Path(tempfile.mkdtemp(prefix="lcm-bench-mcp-"))
    try:
        home, project = scratch / "home", scratch / "project"
        project.mkdir()
        build_store(home, project, args.messages)
        one_run(home, project)  # warm the page cache and the bytecode caches
        runs: list[dict[str, float]] = []
        floors: list[float] = []
        later = f"first call, sent {args.think_ms:.0f} ms after tools/list"
        for _ in range(args.runs):
            floors.append(floor_run())
            run = one_run(home, project)
            run[later] = one_run(home, project, args.think_ms / 1000)["first call, sent at once"]
            runs.append(run)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    floor = common.median(floors)
    rows: list[list[object]] = [
        [
            "python3 -c pass (floor)",
            f"{floor * 1000:.1f}",
            f"{common.percentile(floors, 95) * 1000:.1f}",
            "1.0x",
        ]
    ]
    for name in runs[0]:
        values = [r[name] for r in runs]
        p50 = common.median(values)
        from_spawn = name in ("initialize", "tools/list", "first call answered")
        since = "from spawn" if from_spawn else "request -> answer"
        if name == "exit after EOF":
            since = "stdin closed -> exit"
        ratio = f"{p50 / floor:.1f}x" if since == "from spawn" else "-"
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
        title=f"lcm mcp over stdio, {args.runs} x 2 spawns, store of {args.messages:,} messages",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
