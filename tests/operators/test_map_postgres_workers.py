"""Several workers share one job on PostgreSQL; one dies mid-item and loses its lease."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.operators.model_server import Reply, Request, serving
from tests.operators.test_llm_map_cli import lcm, parity_answer, read_results, write_items
from tests.pg_fixtures import own_pg_server, pg_home  # noqa: F401

ITEMS = 80


def test_workers_share_a_job_and_a_dead_workers_items_are_taken_over(
    tmp_path: Path,
    lcm_home: Path,
    pg_home: str,  # noqa: F811
) -> None:
    def respond(request: Request) -> Reply:
        return Reply(parity_answer(request.item or "{}"), delay_s=0.05)

    items = write_items(tmp_path / "items.jsonl", [json.dumps({"n": n}) for n in range(ITEMS)])
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "LCM_HOME": str(lcm_home)}
    with serving(respond) as server:
        first = subprocess.Popen(
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
                server.openai_url,
                "--model",
                "m",
                "--concurrency",
                "4",
                "--lease-ttl",
                "2",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert first.stderr is not None
        job = first.stderr.readline().split(":")[0].strip()
        assert job.startswith("job_")
        second = subprocess.Popen(
            [sys.executable, "-m", "lossless", "map", "--worker", job, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + 60
        while len(server.requests) < ITEMS // 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        first.send_signal(signal.SIGKILL)  # mid-item: it holds claims nobody renews
        first.wait(timeout=10)
        stdout, stderr = second.communicate(timeout=120)
        assert second.returncode == 0, stderr
        asked = [json.loads(i)["n"] for i in server.items_asked()]
    report = json.loads(stdout)
    assert report["items"]["ok"] == ITEMS and report["status"] == "done"
    results = read_results(out)
    assert [r["index"] for r in results] == list(range(ITEMS))
    assert all(r["status"] == "ok" for r in results)
    assert set(asked) == set(range(ITEMS))
    grep = lcm(lcm_home, "grep", f"{job} item", "--json", "--limit", "1000")
    assert len(json.loads(grep.stdout)["hits"]) == ITEMS  # one stored result each
