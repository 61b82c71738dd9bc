"""expand_query through the one provider layer: on the wire and with real processes.

The sub-agent answers go through the same provider classes as summaries, so
they inherit the key policy (a custom server never gets the environment's
key) and the process-group timeout (a grandchild holding stdout is killed with
its parent). Each is proven through the real MCP SDK client, from
``lcm_expand_query`` down to a local HTTP server or a real process tree.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.wire_server import Reply, WireServer, running_wire_server

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.summarize.completion import Completion, CompletionRequest
from lossless.summarize.errors import SummarizerUnavailable

mcp = pytest.importorskip("mcp", reason="the MCP SDK is the 'mcp' extra")

from lossless.mcp_server import LcmTools, build_server, open_tools  # noqa: E402

PROJECT = "/work/demo-app"
ENV_SECRET = "sk-ant-real-secret-from-the-environment"


@pytest.fixture
def server() -> Iterator[WireServer]:
    with running_wire_server() as srv:
        yield srv


def seed(home: Path) -> None:
    """A few messages of history in PROJECT, one naming the answer."""
    with Engine.open(config=load_config(home, env={})) as engine:
        chat = engine.conversation("s-1", project=PROJECT)
        chat.ingest(
            [
                {"role": "user", "content": "Which port does the billing service listen on?"},
                {"role": "assistant", "content": "The billing service listens on port 8443."},
                {"role": "user", "content": "And the database migrations run with alembic."},
            ]
        )


def tools_with(home: Path, **settings: Any) -> LcmTools:
    return open_tools(load_config(home, env={}, overrides=settings), project=PROJECT)


@asynccontextmanager
async def client_for(tools: LcmTools) -> AsyncIterator[Any]:
    try:
        async with mcp.Client(build_server(tools)) as client:
            yield client
    finally:
        tools.engine.close()


def call(tools: LcmTools, arguments: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}

    async def main() -> None:
        async with client_for(tools) as client:
            result = await client.call_tool("lcm_expand_query", arguments)
            assert not result.is_error, result.content
            found.update(result.structured_content or json.loads(result.content[0].text))

    anyio.run(main)
    return found


def anthropic_reply(text: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "wire-model",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 321, "output_tokens": 12},
    }


def test_custom_base_url_never_receives_the_environment_key(
    tmp_path: Path, server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", ENV_SECRET)
    home = tmp_path / "home"
    seed(home)
    reply = json.dumps({"answer": "port 8443", "cited_ids": ["2"]})
    server.play(Reply(body=anthropic_reply(reply)))
    tools = tools_with(
        home,
        summarizer_provider="anthropic",
        summarizer_base_url=f"http://127.0.0.1:{server.port}",
    )

    result = call(tools, {"question": "billing service port"})

    assert result["mode"] == "answer" and result["answer"] == "port 8443"
    assert result["cited_ids"] == ["2"]
    # Token accounting comes from the provider's usage figures.
    assert result["subagent_tokens"] == {"input": 321, "output": 12}
    (request,) = server.received
    assert request.path == "/v1/messages"
    assert "8443" in request.body["messages"][0]["content"]
    assert ENV_SECRET not in json.dumps(request.headers)


def test_configured_key_is_what_a_custom_server_gets(tmp_path: Path, server: WireServer) -> None:
    pytest.importorskip("anthropic")
    home = tmp_path / "home"
    seed(home)
    server.play(Reply(body=anthropic_reply('{"answer": "8443", "cited_ids": []}')))
    tools = tools_with(
        home,
        summarizer_provider="anthropic",
        summarizer_base_url=f"http://127.0.0.1:{server.port}",
        summarizer_api_key="sk-configured-for-this-server",
    )

    assert call(tools, {"question": "billing port"})["mode"] == "answer"
    assert "sk-configured-for-this-server" in json.dumps(server.received[0].headers)


def test_transient_failures_are_retried_like_summaries(tmp_path: Path, server: WireServer) -> None:
    pytest.importorskip("anthropic")
    home = tmp_path / "home"
    seed(home)
    server.play(
        Reply(500, {"type": "error", "error": {"type": "api_error", "message": "boom"}}),
        Reply(body=anthropic_reply('{"answer": "8443", "cited_ids": ["2"]}')),
    )
    tools = tools_with(
        home,
        summarizer_provider="anthropic",
        summarizer_base_url=f"http://127.0.0.1:{server.port}",
        summarizer_retries=2,
    )

    assert call(tools, {"question": "billing port"})["answer"] == "8443"
    assert len(server.received) == 2


def test_a_grandchild_holding_stdout_is_killed_within_the_budget(tmp_path: Path) -> None:
    home = tmp_path / "home"
    seed(home)
    pid_file = tmp_path / "grandchild.pid"
    script = tmp_path / "hang.sh"
    # The child starts a grandchild that inherits stdout and outlives it by far,
    # then hangs itself: only killing the whole process group frees the pipe.
    # A shell script, not Python: on a loaded machine a Python child's start-up
    # could outlast the budget before the grandchild exists.
    # Every way to miss the budget takes minutes (the provider's own timeout,
    # the child's or the grandchild's sleep), so the wall limit below can be
    # generous for a loaded machine and still tell them apart.
    script.write_text(
        "cat >/dev/null\n"
        "sleep 900 &\n"
        f"echo $! > '{pid_file}.tmp'\n"
        f"mv '{pid_file}.tmp' '{pid_file}'\n"
        "sleep 900\n"
    )
    tools = tools_with(
        home,
        summarizer_provider="command",
        summarizer_command=f"/bin/sh {script}",
        summarizer_timeout_s=600.0,
    )

    started = time.monotonic()
    try:
        result = call(tools, {"question": "billing service port", "time_budget_s": 3.0})
        elapsed = time.monotonic() - started

        assert result["mode"] == "evidence" and result["evidence"]
        assert "timed out" in result["subagent_error"]
        assert elapsed < 90.0, f"took {elapsed:.1f}s against a 3s budget"
        assert pid_file.exists(), "the child never started its grandchild"
        grandchild = int(pid_file.read_text())
        assert not _alive(grandchild), "the grandchild survived the timeout"
    finally:
        _kill_sleeper(pid_file)


def _kill_sleeper(pid_file: Path) -> None:
    """A failed run leaves no sleeper behind (and a reused pid is left alone)."""
    with contextlib.suppress(OSError, ValueError):
        pid = int(pid_file.read_text())
        if Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x00900\x00":
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs after a generous grace for its killer and reaper."""
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        if _zombie(pid):  # killed, only not yet reaped by whoever inherited it
            return False
        try:  # a zombie of ours counts as gone once reaped
            if os.waitpid(pid, os.WNOHANG)[0]:
                return False
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return True


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True  # gone between the two looks
    return stat.rsplit(b")", 1)[1].split()[0] == b"Z"


class CountingModel:
    """A language model in-process: the library API accepts any ``LanguageModel``."""

    name = "counting"

    def __init__(self, fail: bool = False) -> None:
        self.requests: list[CompletionRequest] = []
        self.fail = fail

    def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        if self.fail:
            raise SummarizerUnavailable("down")
        return Completion('{"answer": "8443", "cited_ids": ["2", "999"]}', 50, 5, "m-1")


def test_engine_expand_query_is_public_and_typed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    seed(home)
    model = CountingModel()
    with Engine.open(config=load_config(home, env={})) as engine:
        offline = engine.expand_query("billing service port", project=PROJECT)
        answered = engine.expand_query("billing service port", project=PROJECT, model=model)
        failed = engine.expand_query(
            "billing service port", project=PROJECT, model=CountingModel(fail=True)
        )
    assert offline.mode == "evidence" and offline.answer is None
    assert offline.evidence and "8443" in offline.evidence[0].text
    assert offline.cited_ids == offline.evidence_ids
    assert answered.mode == "answer" and answered.answer == "8443"
    assert answered.cited_ids == ["2"]  # "999" is no evidence id
    assert answered.model == "counting:m-1"
    assert (answered.input_tokens, answered.output_tokens) == (50, 5)
    (request,) = model.requests
    assert request.timeout_s is not None and request.timeout_s <= 60.0
    assert '<evidence id="2"' in request.user
    assert failed.mode == "evidence" and failed.model_error
    assert "down" in failed.model_error


def test_evidence_leads_with_the_matching_message_inside_a_compacted_stretch(
    tmp_path: Path,
) -> None:
    """The match is the 104th of 140 messages, deep in a long one, all compacted."""
    settings = {"leaf_chunk_tokens": 2_000, "fresh_tail_count": 8, "leaf_min_fanout": 3}
    filler = " ".join(f"step {i} of the port and service migration went fine." for i in range(60))
    messages: list[dict[str, Any]] = []
    for index in range(140):
        content = f"{filler} (message {index})"
        if index == 104:
            content = f"{filler}\nThe quorvex service listens on port 48213 in staging.\n{filler}"
        messages.append({"role": "user" if index % 2 == 0 else "assistant", "content": content})
    with Engine.open(config=load_config(tmp_path / "home", env={}, overrides=settings)) as engine:
        chat = engine.conversation("long", project=PROJECT)
        ids = chat.ingest(messages)
        chat.compact(mode="sweep")
        covering = engine.store.summaries.covering([ids[104]])
        assert ids[104] in covering, "the planted message should be compacted"
        found = engine.expand_query(
            "Which port does the quorvex service listen on?",
            project=PROJECT,
            model=None,
            max_tokens=1_000,
        )
    first = found.evidence[0]
    assert first.id == str(ids[104]) and first.relation == "match"
    assert "48213" in first.text and len(first.text) < len(messages[104]["content"])
    relations = [e.relation for e in found.evidence]
    assert relations == sorted(relations, key=["match", "context", "summary"].index)
    assert "context" in relations and "summary" in relations, [
        (e.relation, e.tokens) for e in found.evidence
    ]
    assert covering[ids[104]] in [e.id for e in found.evidence if e.relation == "summary"]
    assert found.evidence_tokens <= 1_000 and found.truncated


def test_excerpt_centres_on_the_question_words() -> None:
    from lossless.engine.expand_query import excerpt

    text = "a" * 5_000 + " the quorvex port is 48213 " + "b" * 5_000
    cut = excerpt(text, ["quorvex", "port"], 200)
    assert "quorvex port is 48213" in cut and cut.startswith("…") and cut.endswith("…")
    assert len(cut) <= 202
    assert excerpt("short", ["x"], 200) == "short"
    assert excerpt("x" * 500, ["absent"], 100) == "x" * 100 + "…"


def test_dense_text_stays_within_the_budget(tmp_path: Path) -> None:
    with Engine.open(config=load_config(tmp_path / "home", env={})) as engine:
        chat = engine.conversation("cjk", project=PROJECT)
        chat.ingest(
            [{"role": "user", "content": "数据库迁移失败了 quorvex " * 400} for _ in range(12)]
        )
        found = engine.expand_query("quorvex 数据库迁移失败了", project=PROJECT, model=None)
    assert found.evidence and found.truncated
    assert found.evidence_tokens <= 4_000
