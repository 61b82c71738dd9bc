"""Tool calls the stdio front answers while the SDK loads (``lossless.mcp_early``).

Each early answer is compared with the SDK server's own answer to the same
request (``serve_stdio`` run without the front, over its real stdin/stdout),
and every request the front must not answer itself is shown to be handed
over to the SDK untouched.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is the 'mcp' extra")

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.mcp_early import EARLY_TOOLS, EarlyCalls, checked_arguments
from lossless.mcp_tools import open_tools

GREP_SCHEMA = {
    "type": "object",
    "required": ["pattern"],
    "properties": {
        "pattern": {"type": "string", "minLength": 1},
        "mode": {"type": "string", "enum": ["regex", "full_text"], "default": "regex"},
        "session_id": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "all_projects": {"type": "boolean", "default": False},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
        "budget": {"type": "number", "exclusiveMinimum": 0, "default": 1.5},
    },
}


def test_checked_arguments_fill_defaults() -> None:
    assert checked_arguments(GREP_SCHEMA, {"pattern": "x", "limit": 5}) == {
        "pattern": "x",
        "mode": "regex",
        "session_id": None,
        "all_projects": False,
        "limit": 5,
        "budget": 1.5,
    }
    assert checked_arguments(GREP_SCHEMA, {"pattern": "x", "session_id": "s"}) is not None


@pytest.mark.parametrize(
    "given",
    [
        {},  # required missing
        {"pattern": ""},  # minLength
        {"pattern": "x", "limit": "5"},  # the SDK would coerce it: its call
        {"pattern": "x", "limit": 5.0},
        {"pattern": "x", "limit": True},  # a bool is no integer
        {"pattern": "x", "limit": 0},
        {"pattern": "x", "limit": 101},
        {"pattern": "x", "budget": 0},
        {"pattern": "x", "mode": "glob"},
        {"pattern": "x", "session_id": 3},
        {"pattern": "x", "extra": 1},  # not in the schema
        ["x"],
    ],
)
def test_arguments_the_front_is_not_sure_of_go_to_the_sdk(given: Any) -> None:
    assert checked_arguments(GREP_SCHEMA, given) is None


def test_an_unknown_schema_word_goes_to_the_sdk() -> None:
    schema = {"type": "object", "properties": {"p": {"type": "string", "pattern": "^a"}}}
    assert checked_arguments(schema, {"p": "b"}) is None


def seeded(tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    with Engine.open(config=load_config(home, env={})) as engine:
        chat = engine.conversation("s-1", project=str(project))
        chat.ingest(
            [
                {"role": "user", "content": "Which port does the billing service use? ünïcode"},
                {"role": "assistant", "content": "The billing service listens on port 8443."},
            ]
            * 20
        )
        engine.compact(chat.conversation.id)
    return home, project


def request(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def sdk_answers(home: Path, project: Path, requests: list[dict[str, Any]]) -> dict[Any, Any]:
    """The SDK server's own answers (no front), by request id; id 1 is tools/list."""
    code = (
        "from lossless.config import load_config\n"
        "from lossless.mcp_server import serve_stdio\n"
        f"serve_stdio(load_config({str(home)!r}, env={{}}), project={str(project)!r})\n"
    )
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "early-test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        *requests,
    ]
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=project,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    proc.stdin.flush()
    wanted = {line["id"] for line in lines if "id" in line}
    answers: dict[Any, Any] = {}
    try:
        # stdin stays open until every answer is in: at its end the SDK
        # cancels what is still running.
        while set(answers) != wanted:
            line = proc.stdout.readline()
            assert line, f"the SDK server ended with {sorted(wanted - set(answers))} unanswered"
            message = json.loads(line)
            if "id" in message:
                answers[message["id"]] = message
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()
    return answers


class Recorder:
    """What an ``EarlyCalls`` sends the client and hands over to the SDK."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.handed: list[bytes] = []
        self.event = threading.Event()

    def send(self, line: bytes) -> None:
        self.sent.append(json.loads(line))
        self.event.set()

    def hand_over(self, line: bytes) -> None:
        self.handed.append(line)
        self.event.set()

    def wait(self) -> None:
        assert self.event.wait(60)
        self.event.clear()


EARLY_REQUESTS = [
    ("lcm_grep", {"pattern": "billing", "limit": 3}),
    ("lcm_grep", {"pattern": "port", "mode": "full_text", "all_projects": True}),
    ("lcm_search", {"query": "billing port"}),
    ("lcm_status", {}),
    ("lcm_describe", {"id": "1"}),
    ("lcm_describe", {"id": "2", "max_tokens": 50, "offset": 3}),
    ("lcm_expand", {"summary_id": "SUMMARY", "depth": 0}),
]
SDK_ONLY_REQUESTS = [
    ("lcm_grep", {"pattern": "billing", "limit": "3"}),  # the SDK coerces "3"
    ("lcm_describe", {"id": "sum_missing"}),  # a failure: the SDK words it
    ("lcm_store", {"text": "a fact"}),  # writes: never early
    ("lcm_nope", {}),
]


def test_early_answers_are_the_sdks(tmp_path: Path) -> None:
    home, project = seeded(tmp_path)
    with Engine.open(config=load_config(home, env={})) as engine:
        (summary, *_) = engine.store.summaries.list(1)
    calls = [
        (name, {k: summary.id if v == "SUMMARY" else v for k, v in args.items()})
        for name, args in EARLY_REQUESTS
    ]
    requests = [request(i, name, args) for i, (name, args) in enumerate(calls, start=10)]
    expected = sdk_answers(home, project, requests)
    schemas = {tool["name"]: tool["inputSchema"] for tool in expected[1]["result"]["tools"]}
    assert set(EARLY_TOOLS) <= set(schemas)

    recorder = Recorder()
    config = load_config(home, env={})
    early = EarlyCalls(
        lambda: open_tools(config, project=str(project)),
        schemas,
        recorder.send,
        recorder.hand_over,
    )
    early.start()
    try:
        for message in requests:
            assert early.take(json.dumps(message).encode())
            recorder.wait()
        assert recorder.handed == []
        for message, answer in zip(requests, recorder.sent, strict=True):
            want = expected[message["id"]]
            assert answer["id"] == want["id"]
            got, sdk = answer["result"], want["result"]
            assert sdk["isError"] is False, sdk
            # The text is byte for byte the SDK's; the structured result the same JSON.
            assert got["content"] == sdk["content"]
            assert got["structuredContent"] == sdk["structuredContent"]
            assert set(got) == set(sdk)
    finally:
        tools = early.tools()
        assert tools is not None
        tools.engine.close()


def test_what_the_front_must_not_answer_goes_to_the_sdk(tmp_path: Path) -> None:
    home, project = seeded(tmp_path)
    requests = [request(i, name, args) for i, (name, args) in enumerate(SDK_ONLY_REQUESTS, 20)]
    expected = sdk_answers(home, project, requests)
    schemas = {tool["name"]: tool["inputSchema"] for tool in expected[1]["result"]["tools"]}
    recorder = Recorder()
    config = load_config(home, env={})
    early = EarlyCalls(
        lambda: open_tools(config, project=str(project)), schemas, recorder.send, recorder.hand_over
    )
    early.start()
    try:
        lines = [json.dumps(message).encode() for message in requests]
        taken = [early.take(line) for line in lines]
        # Only the failing describe is tried (and then handed over, as sent).
        assert taken == [False, True, False, False]
        recorder.wait()
        assert recorder.handed == [lines[1]] and recorder.sent == []
        assert expected[21]["result"]["isError"] is True
        # Once the SDK is ready every call is its own.
        early.sdk_ready.set()
        assert not early.take(json.dumps(request(30, "lcm_status", {})).encode())
    finally:
        tools = early.tools()
        assert tools is not None
        tools.engine.close()
