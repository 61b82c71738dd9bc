"""A real Claude Code sub-agent: SubagentStop fires and its transcript is stored under its parent.

The scripted model makes the main agent delegate through Claude Code's own
agent tool (``Task``; newer releases call it ``Agent``: the name is read from
the request's tool list), answers the sub-agent's request (recognised by the
delegated prompt) with a tool call of its own and a reply, then ends the main
turn. lossless's hooks capture both transcripts; the sub-agent's conversation
is linked to the session that started it.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from tests.real_clients.conftest import Conversation
from tests.real_clients.harness import Sandbox, hook_runs
from tests.real_clients.model_server import Reply, Request, ToolCall
from tests.real_clients.test_claude_code import conversation_turns, tool_results, user_text

SUBTASK = "SUBTASK: count the TODO markers in the project"
AGENT_TOOLS = ("Task", "Agent")


def delegating_script(request: Request) -> Reply:
    body = request.body
    turns = conversation_turns(body)
    first = user_text(turns[0]) if turns else ""
    if SUBTASK in first:
        # The sub-agent: one tool call of its own, then its answer.
        if tool_results(body):
            return Reply(text="Found 3 TODO markers (sub-agent report).")
        return Reply(tool_call=ToolCall("Bash", {"command": "echo TODO TODO TODO"}))
    if tool_results(body):
        return Reply(text="The sub-agent counted 3 TODO markers.")
    if not turns or "DELEGATE" not in user_text(turns[-1]):
        return Reply(text="ok")
    names = {t.get("name") for t in body.get("tools", [])}
    agent = next((n for n in AGENT_TOOLS if n in names), None)
    assert agent is not None, f"no agent tool among {sorted(n for n in names if n)}"
    return Reply(
        tool_call=ToolCall(
            agent,
            {
                "description": "Count TODO markers",
                "prompt": SUBTASK,
                "subagent_type": "general-purpose",
            },
        )
    )


def conversations(lcm_home: Any) -> list[tuple[int, str, int | None, int]]:
    with sqlite3.connect(lcm_home / "lcm.db") as db:
        return [
            (int(r[0]), str(r[1]), r[2], int(r[3]))
            for r in db.execute(
                "SELECT c.id, c.session_id, c.parent_id, "
                "(SELECT count(*) FROM messages m WHERE m.conversation_id = c.id) "
                "FROM conversations c ORDER BY c.id"
            )
        ]


def test_a_real_subagent_is_captured_under_its_parent(
    sandbox: Sandbox, conversation: Conversation
) -> None:
    sandbox.lcm("install", "claude-code")
    conversation.script = delegating_script
    done = sandbox.claude(
        "-p",
        "DELEGATE: ask a sub-agent to count TODO markers",
        "--output-format",
        "json",
        "--allowedTools",
        "Task Agent Bash",
    )
    session = json.loads(done.stdout)["session_id"]
    sub_requests = [
        r
        for r in sandbox.server.requests
        if r.path.endswith("/messages")
        and SUBTASK in user_text((conversation_turns(r.body) or [{}])[0])
    ]
    assert sub_requests, "the sub-agent never called the model"

    runs = hook_runs(sandbox.hook_log())
    fired = {event for event, _ in runs}
    assert "SubagentStop" in fired, runs
    assert all(outcome == "ok" for _, outcome in runs), sandbox.hook_log()

    stored = conversations(sandbox.lcm_home)
    parents = [c for c in stored if c[1] == session]
    assert parents, stored
    children = [c for c in stored if c[2] == parents[0][0]]
    assert children, f"no sub-agent conversation under {session}: {stored}"
    assert children[0][3] >= 3, children  # prompt, tool call, tool result, reply
    with sqlite3.connect(sandbox.lcm_home / "lcm.db") as db:
        texts = [
            r[0]
            for r in db.execute(
                "SELECT content FROM messages WHERE conversation_id = ?", (children[0][0],)
            )
        ]
    assert any("sub-agent report" in t for t in texts), texts
