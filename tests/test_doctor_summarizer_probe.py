"""`lcm doctor` makes one real, tiny call to the configured summarizer and
reports a failure with its cause: a command that exits 1, and on the wire an
Anthropic or OpenAI endpoint answering with an error (a local HTTP server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.wire_server import Reply, running_wire_server


def doctor(home: Path, *args: str, **env: str) -> tuple[int, dict[str, Any]]:
    environ = dict(os.environ, **env)
    done = subprocess.run(
        [sys.executable, "-m", "lossless", "--home", str(home), "doctor", "--json", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def summarizer_check(report: dict[str, Any]) -> dict[str, Any]:
    [check] = [c for c in report["checks"] if c["area"] == "summarizer"]
    return check


def test_a_command_that_fails_is_a_problem_with_its_cause(tmp_path: Path) -> None:
    code, report = doctor(
        tmp_path / "home", LCM_SUMMARIZER_PROVIDER="command", LCM_SUMMARIZER_COMMAND="false"
    )
    check = summarizer_check(report)
    assert code == 1 and check["status"] == "problem"
    assert "test call failed" in check["detail"] and "exited with status 1" in check["detail"]
    # --no-probe builds the provider only.
    _, skipped = doctor(
        tmp_path / "home",
        "--no-probe",
        LCM_SUMMARIZER_PROVIDER="command",
        LCM_SUMMARIZER_COMMAND="false",
    )
    assert summarizer_check(skipped)["status"] == "ok"
    assert "not called" in summarizer_check(skipped)["detail"]


def test_a_working_command_answers(tmp_path: Path) -> None:
    script = tmp_path / "echo-ok.sh"
    script.write_text("#!/bin/sh\ncat > /dev/null\necho OK\n")
    script.chmod(0o755)
    _, report = doctor(
        tmp_path / "home", LCM_SUMMARIZER_PROVIDER="command", LCM_SUMMARIZER_COMMAND=str(script)
    )
    check = summarizer_check(report)
    assert check["status"] == "ok" and "answered" in check["detail"]


ERRORS = {
    "anthropic": (
        "/v1/messages",
        lambda port: f"http://127.0.0.1:{port}",
        {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}},
    ),
    "openai": (
        "/v1/chat/completions",
        lambda port: f"http://127.0.0.1:{port}/v1",
        {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                   "param": None, "code": "invalid_api_key"}},
    ),
}  # fmt: skip


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("status", [401, 503])
def test_an_api_answering_an_error_is_a_problem_on_the_wire(
    tmp_path: Path, provider: str, status: int
) -> None:
    pytest.importorskip(provider)
    path, base_url, body = ERRORS[provider]
    with running_wire_server() as server:
        server.play(*[Reply(status, body) for _ in range(10)])
        code, report = doctor(
            tmp_path / "home",
            LCM_SUMMARIZER_PROVIDER=provider,
            LCM_SUMMARIZER_BASE_URL=base_url(server.port),
            LCM_SUMMARIZER_API_KEY="sk-test-not-a-real-key",
            LCM_SUMMARIZER_MODEL="test-model",
            LCM_SUMMARIZER_RETRIES="0",
        )
        requests = list(server.received)
    check = summarizer_check(report)
    assert code == 1 and check["status"] == "problem", check
    assert "test call failed" in check["detail"]
    assert str(status) in check["detail"] or ("key" in check["detail"].lower()), check["detail"]
    assert requests and requests[0].path == path
    # One tiny call: a few output tokens, not a summary.
    sent = requests[0].body
    assert sent.get("max_tokens", sent.get("max_completion_tokens", 0)) <= 8


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_an_api_that_answers_is_ok(tmp_path: Path, provider: str) -> None:
    pytest.importorskip(provider)
    path, base_url, _ = ERRORS[provider]
    answer: dict[str, Any]
    if provider == "anthropic":
        answer = {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "test-model",
            "content": [{"type": "text", "text": "OK"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 9, "output_tokens": 1},
        }
    else:
        answer = {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "test-model",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "logprobs": None,
                    "message": {"role": "assistant", "content": "OK"},
                }
            ],
            "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
        }
    with running_wire_server() as server:
        server.play(Reply(200, answer))
        _, report = doctor(
            tmp_path / "home",
            LCM_SUMMARIZER_PROVIDER=provider,
            LCM_SUMMARIZER_BASE_URL=base_url(server.port),
            LCM_SUMMARIZER_API_KEY="sk-test-not-a-real-key",
            LCM_SUMMARIZER_MODEL="test-model",
        )
        assert [r.path for r in server.received] == [path]
    check = summarizer_check(report)
    assert check["status"] == "ok" and "answered" in check["detail"], check
