"""Exactly once across SIGKILL: a job killed at a random point resumes where it stopped."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.operators.model_server import Reply, Request, serving
from tests.operators.test_llm_map_cli import lcm, parity_answer, read_results, write_items

ITEMS = 60


def start_map(home: Path, items: Path, out: Path, base_url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lossless",
            "map",
            "--input",
            str(items),
            "--output",
            str(out),
            "--prompt",
            "parity",
            "--provider",
            "openai",
            "--base-url",
            base_url,
            "--model",
            "m",
            "--concurrency",
            "4",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "LCM_HOME": str(home)},
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_killed_job_resumes_and_every_item_is_answered_once(
    tmp_path: Path, lcm_home: Path, seed: int
) -> None:
    rng = random.Random(seed)
    kill_after = rng.randint(3, ITEMS - 20)

    def respond(request: Request) -> Reply:
        return Reply(parity_answer(request.item or "{}"), delay_s=0.02)

    items = write_items(tmp_path / "items.jsonl", [json.dumps({"n": n}) for n in range(ITEMS)])
    out = tmp_path / "out.jsonl"
    with serving(respond) as server:
        proc = start_map(lcm_home, items, out, server.openai_url)
        assert proc.stderr is not None
        first = proc.stderr.readline()
        job = first.split(":")[0].strip()
        assert job.startswith("job_"), first
        deadline = time.monotonic() + 60
        while len(server.requests) < kill_after and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert not out.exists()  # never half-written
        before = lcm(lcm_home, "map", "--results", job)
        assert before.returncode == 0, before.stderr
        done_before = {
            r["index"] for r in map(json.loads, before.stdout.splitlines()) if r["status"] == "ok"
        }
        asked_before = len(server.requests)
        resumed = lcm(lcm_home, "map", "--resume", job, "--json")
        assert resumed.returncode == 0, resumed.stderr
        asked_after = [json.loads(i)["n"] for i in server.items_asked()[asked_before:]]
    assert json.loads(resumed.stdout)["items"]["ok"] == ITEMS
    results = read_results(out)
    assert [r["index"] for r in results] == list(range(ITEMS))
    assert all(r["status"] == "ok" and r["result"] == json.loads(parity_answer(
        json.dumps({"n": r["index"]}))) for r in results)  # fmt: skip
    # No item that had succeeded before the kill was called again.
    assert not done_before & set(asked_after)
    # One stored result message per item, however the run was interrupted.
    grep = lcm(lcm_home, "grep", f"{job} item", "--json", "--limit", "1000")
    assert len(json.loads(grep.stdout)["hits"]) == ITEMS
