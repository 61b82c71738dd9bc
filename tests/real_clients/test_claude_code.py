"""The real Claude Code (pinned, from npm) with lossless installed, against the scripted server.

Claude Code reaches the server through ``ANTHROPIC_BASE_URL`` (Messages API,
SSE). It defers MCP tools behind ``ToolSearch``: the first request only names
them in a system message, so the scripted model selects ``lcm_grep`` through
``ToolSearch`` first, calls it once its schema is loaded, then ends the turn.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.real_clients.conftest import Conversation
from tests.real_clients.harness import Sandbox, hook_runs, lcm_script, stored_messages
from tests.real_clients.model_server import Reply, Request, Script, ToolCall
from tests.real_clients.test_codex import summaries

MEMORY = "Deploys go through the blue-green script in ops/deploy.sh, never by hand"
GREP = "mcp__lcm__lcm_grep"


def user_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def last_tool_use(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    for message in reversed(messages):
        if message.get("role") == "assistant" and isinstance(message.get("content"), list):
            uses = [b for b in message["content"] if b.get("type") == "tool_use"]
            if uses:
                return uses[-1]
    return None


def conversation_turns(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The user and assistant messages (Claude Code also sends system ones in the list)."""
    return [m for m in body.get("messages") or [] if m.get("role") in ("user", "assistant")]


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = (conversation_turns(body) or [{}])[-1]
    content = last.get("content") if isinstance(last.get("content"), list) else []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def search_with_lcm(missing_file: str) -> Script:
    """grep through lcm (after ToolSearch), then Read a file that is not there, then end."""
    return lambda request: _search_with_lcm(request, missing_file)


def _search_with_lcm(request: Request, missing_file: str) -> Reply:
    body = request.body
    messages = conversation_turns(body)
    if tool_results(body):
        used = last_tool_use(messages)
        if used is not None and used["name"] == "ToolSearch":
            return Reply(tool_call=ToolCall(GREP, {"pattern": "blue-green"}))
        if used is not None and used["name"] == GREP:
            # A tool call that fails: Claude Code fires PostToolUseFailure for it.
            return Reply(tool_call=ToolCall("Read", {"file_path": missing_file}))
        return Reply(text="Deploys use the blue-green script.")
    if not messages or "SEARCH" not in user_text(messages[-1]):
        return Reply(text="ok")
    if GREP in {t.get("name") for t in body.get("tools", [])}:
        return Reply(tool_call=ToolCall(GREP, {"pattern": "blue-green"}))
    return Reply(tool_call=ToolCall("ToolSearch", {"query": f"select:{GREP}"}))


def messages_requests(sandbox: Sandbox, start: int = 0) -> list[Request]:
    return [r for r in sandbox.server.requests[start:] if r.path.endswith("/messages")]


def test_claude_code_end_to_end(sandbox: Sandbox, conversation: Conversation) -> None:
    sandbox.write_lcm_config({"fresh_tail_count": 2, "leaf_chunk_tokens": 200})
    installed = sandbox.lcm("install", "claude-code")
    assert "allowed 6 read-only lcm tools" in installed.stdout, installed.stdout
    listed = sandbox.claude("mcp", "list")
    assert "lcm:" in listed.stdout and "Connected" in listed.stdout, listed.stdout

    sandbox.lcm("remember", MEMORY)
    conversation.script = search_with_lcm(str(sandbox.project / "missing-notes.md"))
    done = sandbox.claude("-p", "SEARCH: how do deploys work?", "--output-format", "json")
    session = json.loads(done.stdout)["session_id"]
    requests = messages_requests(sandbox)
    # A memory stored beforehand is in the first request of a new session.
    assert MEMORY in json.dumps(requests[0].body["messages"]), "memory missing from request 1"
    # The lcm tool ran (no --allowedTools: install pre-approved it) and its
    # result is in the next request.
    grep_results = [
        r
        for request in requests
        for r in tool_results(request.body)
        if (last_tool_use(conversation_turns(request.body)) or {}).get("name") == GREP
    ]
    assert grep_results and "blue-green" in json.dumps(grep_results[0]), grep_results
    assert not grep_results[0].get("is_error"), grep_results[0]

    # What the hooks stored equals a bulk import of the same transcript.
    transcript = next(sandbox.home.glob(f".claude/projects/*/{session}.jsonl"))
    bulk = sandbox.root / "bulk-home"
    sandbox.run([lcm_script(), "--home", str(bulk), "import", str(transcript)])
    assert stored_messages(sandbox.lcm_home) == stored_messages(bulk)

    # After /compact the next request carries the summary ids (a second turn
    # first: the newest user turn is never summarized).
    conversation.script = lambda request: Reply(text="Rollbacks re-point the load balancer.")
    sandbox.claude("-p", "--resume", session, "and rollbacks?")
    sandbox.lcm("compact", "--all", "-q")
    summary_ids = summaries(sandbox)
    assert summary_ids
    conversation.script = lambda request: Reply(text="Summary: deploys, blue-green.")
    sandbox.claude("-p", "--resume", session, "/compact")
    start = len(sandbox.server.requests)
    conversation.script = lambda request: Reply(text="ok")
    sandbox.claude("-p", "--resume", session, "what next?")
    after = messages_requests(sandbox, start)
    assert after and any(s in json.dumps(after[0].body) for s in summary_ids)
    # resume -> /compact -> resume: Claude Code replays every earlier hook
    # context, so the last resume's block names only summaries none of those did.
    blocks = json.dumps(after[0].body["messages"]).split("[lossless] Session ")[1:]
    assert len(blocks) >= 2
    listed = [set(re.findall(r"- (sum_[0-9a-f]+) \(", b)) for b in blocks]
    assert listed[-1] and not listed[-1] & set().union(*listed[:-1]), listed
    # ... and no summary line appears twice in the request: the compact-time
    # block leaves out what Claude Code carries from the start of the process
    # that ran /compact (written to the transcript only after that hook).
    lines = re.findall(r"- (sum_[0-9a-f]+) \(", json.dumps(after[0].body["messages"]))
    assert len(lines) == len(set(lines)), lines

    # Every hook that fired ran lossless and exited cleanly: nothing logged as failed.
    runs = hook_runs(sandbox.hook_log())
    fired = {event for event, _ in runs}
    assert {"UserPromptSubmit", "PostToolUse", "PostToolUseFailure"} <= fired, runs
    assert {"Stop", "SessionEnd", "PreCompact"} <= fired, runs
    assert "SessionStart" in fired, runs
    assert all(outcome == "ok" for _, outcome in runs), sandbox.hook_log()


def test_uninstall_keeps_claude_codes_own_later_settings(sandbox: Sandbox) -> None:
    sandbox.lcm("install", "claude-code")
    # Claude Code's own writers change both files after lossless's install.
    sandbox.claude("mcp", "add", "-s", "user", "docs", "--", "docs-mcp", "--stdio")
    sandbox.claude("-p", "hello")
    state_file = sandbox.home / ".claude.json"
    state = json.loads(state_file.read_text())
    assert {"docs", "lcm"} <= set(state["mcpServers"])

    sandbox.lcm("uninstall", "claude-code")
    after = json.loads(state_file.read_text())
    assert after["mcpServers"] == {"docs": state["mcpServers"]["docs"]}
    assert {k: v for k, v in after.items() if k != "mcpServers"} == {
        k: v for k, v in state.items() if k != "mcpServers"
    }
    settings_file = sandbox.home / ".claude" / "settings.json"
    assert not settings_file.exists() or "lcm" not in settings_file.read_text()
    assert "docs" in sandbox.claude("mcp", "list").stdout
