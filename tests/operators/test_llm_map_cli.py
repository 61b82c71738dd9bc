"""``lcm map`` as a user runs it: the real CLI, the real SDKs, a model server on the wire."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.operators.model_server import Reply, Request, serving

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "parity": {"enum": ["even", "odd"]}},
    "required": ["n", "parity"],
    "additionalProperties": False,
}


def lcm(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LCM_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "lossless", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def write_items(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def parity_answer(item: str) -> str:
    n = json.loads(item)["n"]
    return json.dumps({"n": n, "parity": "even" if n % 2 == 0 else "odd"})


def read_results(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_map_validates_retries_and_writes_results_in_input_order(
    tmp_path: Path, lcm_home: Path, provider: str
) -> None:
    seen_429: set[str] = set()

    def respond(request: Request) -> Reply:
        item = request.item or ""
        n = json.loads(item)["n"]
        if n == 3 and not request.retry:
            return Reply("Sure! The number three is odd.")  # prose: invalid, retried
        if n == 4 and not request.retry:
            return Reply('{"n": 4, "parity": "EVEN"}')  # fails the schema: retried
        if n == 5 and item not in seen_429:
            seen_429.add(item)
            return Reply(status=429, headers={"retry-after": "0.2"})
        if n == 7:
            return Reply(status=500)  # never works: fails after the retries
        return Reply("```json\n" + parity_answer(item) + "\n```" if n == 2 else parity_answer(item))

    lines = [json.dumps({"n": n}) for n in range(10)]
    lines.insert(6, "{not json")  # line 7 of the file
    items = write_items(tmp_path / "items.jsonl", lines)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    out = tmp_path / "out.jsonl"
    with serving(respond) as server:
        base = server.openai_url if provider == "openai" else server.anthropic_url
        done = lcm(
            lcm_home, "map", "--input", str(items), "--output", str(out),
            "--prompt", "Say whether n is even or odd.", "--schema", str(tmp_path / "schema.json"),
            "--provider", provider, "--base-url", base, "--model", "test-model",
            "--max-retries", "2", "--concurrency", "4", "--json",
        )  # fmt: skip
    assert done.returncode == 3, done.stderr  # finished, some items failed
    report = json.loads(done.stdout)
    assert report["status"] == "done"
    assert report["items"] == {"total": 11, "pending": 0, "running": 0, "ok": 9, "failed": 2}
    results = read_results(out)
    assert [r["index"] for r in results] == list(range(11))
    by_line = {r["line"]: r for r in results}
    assert by_line[7]["status"] == "failed" and "line 7 is not JSON" in by_line[7]["error"]
    assert by_line[7]["attempts"] == 0
    ok = [r for r in results if r["status"] == "ok"]
    assert sorted(r["result"]["n"] for r in ok) == [0, 1, 2, 3, 4, 5, 6, 8, 9]
    assert all(
        r["result"]["parity"] == ("even" if r["result"]["n"] % 2 == 0 else "odd") for r in ok
    )
    retried = {r["result"]["n"]: r["attempts"] for r in ok}
    assert retried[3] == 2 and retried[4] == 2 and retried[5] == 2 and retried[0] == 1
    seven = next(r for r in results if r["status"] == "failed" and r["line"] != 7)
    assert seven["attempts"] == 3 and "unavailable" in seven["error"]
    # The feedback of a rejected answer reaches the model on the retry.
    retry_prompts = [r.prompt for r in server.requests if r.retry]
    assert any("does not match the schema" in p for p in retry_prompts)
    assert any("not JSON" in p for p in retry_prompts)
    assert report["usage"]["calls"] >= 14 and report["usage"]["input_tokens"] > 0

    # Every result is a stored, searchable message, and the job describes itself.
    job = report["id"]
    grep = lcm(lcm_home, "grep", f"{job} item", "--json")
    assert grep.returncode == 0, grep.stderr
    assert len(json.loads(grep.stdout)["hits"]) == 9
    status = lcm(lcm_home, "map", "--status", job)
    assert status.returncode == 0 and "9 ok, 2 failed" in status.stdout


def test_an_invalid_schema_is_refused_before_any_call(tmp_path: Path, lcm_home: Path) -> None:
    items = write_items(tmp_path / "items.jsonl", ['{"n": 1}'])
    (tmp_path / "schema.json").write_text(json.dumps({"type": "no-such-type"}))
    with serving(lambda r: Reply("{}")) as server:
        done = lcm(
            lcm_home, "map", "--input", str(items), "--prompt", "x",
            "--schema", str(tmp_path / "schema.json"), "--provider", "openai",
            "--base-url", server.openai_url, "--model", "m",
        )  # fmt: skip
        assert server.requests == []
    assert done.returncode == 1
    assert "not a valid JSON Schema" in done.stderr and "Traceback" not in done.stderr


def test_a_missing_input_file_is_a_clear_error(tmp_path: Path, lcm_home: Path) -> None:
    done = lcm(
        lcm_home,
        "map",
        "--input",
        str(tmp_path / "nope.jsonl"),
        "--prompt",
        "x",
        "--provider",
        "openai",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
    )
    assert done.returncode == 1
    assert "does not exist" in done.stderr and "Traceback" not in done.stderr
