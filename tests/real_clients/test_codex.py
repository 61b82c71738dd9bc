"""The real Codex CLI (pinned, from npm) with lossless installed, against the scripted server.

Codex reaches the server through a ``model_providers`` entry whose
``base_url`` points at it (OpenAI Responses API, SSE). It groups an MCP
server's tools under a namespace tool (``mcp__lcm``); the scripted model calls
``lcm_grep`` in it, then ends the turn.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

from tests.real_clients.conftest import Conversation
from tests.real_clients.harness import Sandbox, hook_runs, stored_messages
from tests.real_clients.model_server import Reply, Request, ToolCall

MEMORY = "Deploys go through the blue-green script in ops/deploy.sh, never by hand"
NEEDLE = "ZEBRA-7431"


def provider_toml(sandbox: Sandbox) -> str:
    # No `mcp_optional_startup_grace_ms`: Codex's default waits one second
    # for optional MCP servers before building its first request, and lcm's
    # tools must be in it from a fresh home (the tool list ships with the
    # package; issue 9 item 3).
    return (
        'model = "gpt-scripted"\n'
        'model_provider = "scripted"\n\n'
        "[model_providers.scripted]\n"
        'name = "scripted"\n'
        f'base_url = "{sandbox.server.url}/v1"\n'
        'env_key = "SCRIPTED_API_KEY"\n'
        'wire_api = "responses"\n'
    )


def lcm_namespace(body: dict[str, Any]) -> dict[str, Any] | None:
    return next((t for t in body.get("tools", []) if t.get("name") == "mcp__lcm"), None)


def grep_then_finish(request: Request) -> Reply:
    items = request.body.get("input", [])
    if items and items[-1].get("type") == "function_call_output":
        return Reply(text=f"found it: {NEEDLE}")
    if lcm_namespace(request.body) is None:
        return Reply(text="no lcm tools in this request")
    return Reply(tool_call=ToolCall("lcm_grep", {"pattern": "blue-green"}, namespace="mcp__lcm"))


def session_id(output: str) -> str:
    match = re.search(r"session id: ([0-9a-f-]{36})", output)
    assert match, output[-2000:]
    return match.group(1)


def text_of(body: dict[str, Any]) -> str:
    return json.dumps(body.get("input", []), ensure_ascii=False)


def test_codex_runs_lcm_hooks_and_tools_without_bypass(
    sandbox: Sandbox, conversation: Conversation
) -> None:
    codex_home = sandbox.home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(provider_toml(sandbox))
    sandbox.write_lcm_config({"fresh_tail_count": 2, "leaf_chunk_tokens": 200})
    sandbox.extra_env["PATH"] = f"{sandbox.bin_dir}:{sandbox.env['PATH']}"

    installed = sandbox.lcm("install", "codex")
    # Trust was computed as Codex computes it: the real Codex agrees at once.
    assert "confirms all 8 lossless hooks are trusted" in installed.stderr, installed.stderr
    assert "other hashes" not in installed.stderr
    from lossless.integrations.codex_trust import codex_hooks_list

    listed = codex_hooks_list(
        str(sandbox.bin_dir / "codex"), sandbox.project, {"CODEX_HOME": str(codex_home)}
    )
    assert not isinstance(listed, str), listed
    ours = [h for h in listed if " hook " in f" {h.command} "]
    assert len(ours) == 8 and {h.trust_status for h in ours} == {"trusted"}, ours
    assert sandbox.lcm("doctor").returncode == 0

    sandbox.lcm("remember", MEMORY)
    conversation.script = grep_then_finish
    first = sandbox.codex("exec", "--skip-git-repo-check", f"how do deploys work? {NEEDLE}")
    sid = session_id(first.stderr + first.stdout)
    requests = [r for r in sandbox.server.requests if r.path.endswith("/responses")]
    assert len(requests) == 2, [r.body.get("input") for r in requests]
    # The memory stored beforehand is in the first request of the session.
    assert MEMORY in text_of(requests[0].body)
    outputs = [i for i in requests[1].body["input"] if i.get("type") == "function_call_output"]
    assert outputs, requests[1].body["input"]

    # Every hook Codex fired ran lossless and exited cleanly, with no bypass flag.
    runs = hook_runs(sandbox.hook_log())
    assert {"UserPromptSubmit", "Stop", "SessionEnd"} <= {e for e, _ in runs}, runs
    assert all(outcome == "ok" for _, outcome in runs), sandbox.hook_log()

    # What the hooks stored equals a bulk import of the same rollout file.
    rollout = next(codex_home.glob(f"sessions/**/*{sid}*.jsonl"))
    bulk = sandbox.root / "bulk-home"
    sandbox.run([*sandbox_lcm(sandbox), "--home", str(bulk), "import", str(rollout)])
    assert stored_messages(sandbox.lcm_home) == stored_messages(bulk)

    # After a compaction, a resumed session's next request carries the summary ids.
    sandbox.lcm("compact", "--all", "-q")
    summary_ids = summaries(sandbox)
    assert summary_ids, "the scripted session produced no summary"
    conversation.script = lambda request: Reply(text="resumed")
    before = len(sandbox.server.requests)
    sandbox.codex("exec", "--skip-git-repo-check", "resume", sid, "and now?")
    resumed = sandbox.server.requests[before:]
    assert resumed and any(s in text_of(resumed[0].body) for s in summary_ids)
    runs = hook_runs(sandbox.hook_log())
    assert ("SessionStart", "ok") in runs and all(o == "ok" for _, o in runs)

    # The lcm tool ran under `codex exec`'s default approval policy: its real
    # result (the stored memory it greps for) was the next request's tool output.
    tool_output = json.dumps(outputs[-1])
    assert "blue-green" in tool_output and "requires approval" not in tool_output, tool_output
    assert ("PostToolUse", "ok") in hook_runs(sandbox.hook_log())


def sandbox_lcm(sandbox: Sandbox) -> list[str]:
    from tests.real_clients.harness import lcm_script

    return [lcm_script()]


def summaries(sandbox: Sandbox) -> list[str]:
    from lossless.config import load_config
    from lossless.engine.engine import Engine

    with Engine.open(config=load_config(sandbox.lcm_home)) as engine:
        store = engine.store
        return [s.id for c in store.conversations.list() for s in store.summaries.list(c.id)]


def test_uninstall_keeps_what_codex_itself_wrote_after_lcm(sandbox: Sandbox) -> None:
    codex_home = sandbox.home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(provider_toml(sandbox))
    sandbox.lcm("install", "codex")
    # Codex's own config writer adds a table after lossless's block.
    sandbox.codex("mcp", "add", "docs", "--", "docs-mcp", "--stdio")
    written = tomllib.loads((codex_home / "config.toml").read_text())
    assert written["mcp_servers"]["docs"]["command"] == "docs-mcp"

    sandbox.lcm("uninstall", "codex")
    text = (codex_home / "config.toml").read_text()
    after = tomllib.loads(text)
    assert after["mcp_servers"]["docs"] == written["mcp_servers"]["docs"]
    assert "lcm" not in after["mcp_servers"] and "hooks" not in after
    assert after["model_providers"] == written["model_providers"]
    assert "lossless" not in text
    listed = sandbox.codex("mcp", "list")
    assert "docs" in listed.stdout and "lcm" not in listed.stdout
