"""Memory reaches the agent: lcm_store / lcm_search over MCP, recall hints in the prompt hook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.test_hooks import claude_payload, fire

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.engine.memory import remember

mcp = pytest.importorskip("mcp", reason="the MCP SDK is the 'mcp' extra")

from tests.test_mcp_server import memory_client, structured  # noqa: E402

from lossless.mcp_server import open_tools  # noqa: E402

SESSION = "7c0e1a52-3b6d-4e58-9a43-0d2f5b8c6e71"


def write_transcript(folder: Path, prompt: str, reply: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{SESSION}.jsonl"
    records = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": SESSION,
            "cwd": str(folder),
            "timestamp": "2026-11-20T10:00:00.000Z",
            "message": {"role": "user", "content": prompt},
        }
    ]
    if reply is not None:
        records.append(
            {
                "type": "assistant",
                "uuid": "a1",
                "parentUuid": "u1",
                "sessionId": SESSION,
                "cwd": str(folder),
                "timestamp": "2026-11-20T10:00:05.000Z",
                "message": {
                    "id": "msg_1",
                    "role": "assistant",
                    "content": [{"type": "text", "text": reply}],
                },
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def test_prompt_hook_adds_relevant_memories_then_learns_from_the_reply(
    tmp_path: Path, lcm_home: Path
) -> None:
    workspace = tmp_path / "inventory"
    with Engine.open(lcm_home) as engine:
        relevant = remember(
            engine.store,
            "Migrations take pg_advisory_xact_lock(4242) before reading the ledger.",
            project=str(workspace),
            tags=["db", "migrations"],
        ).memory
        remember(engine.store, "The CSS uses BEM naming.", project=str(workspace))
        remember(engine.store, "Migrations run in CI nightly.", project="/elsewhere")

    prompt = "why do concurrent migrations deadlock on the ledger?"
    transcript = write_transcript(workspace, prompt)
    result = fire(
        "UserPromptSubmit",
        claude_payload("UserPromptSubmit", transcript, SESSION, prompt=prompt),
        home=lcm_home,
    )
    assert result.returncode == 0, result.stderr.decode()
    answer = json.loads(result.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "UserPromptSubmit"
    context = answer["additionalContext"]
    assert relevant.id in context and "BEM" not in context and "nightly" not in context
    assert len(context.encode()) <= 1500

    # The same prompt right away: the memory is cooling down, nothing repeats.
    again = fire(
        "UserPromptSubmit",
        claude_payload("UserPromptSubmit", transcript, SESSION, prompt=prompt),
        home=lcm_home,
    )
    assert again.returncode == 0 and again.stdout == b""

    # The reply cites the memory: the Stop hook records that it was used.
    write_transcript(workspace, prompt, reply=f"Per {relevant.id}, take the lock first.")
    stop = fire("Stop", claude_payload("Stop", transcript, SESSION), home=lcm_home)
    assert stop.returncode == 0 and stop.stdout == b""
    with Engine.open(lcm_home) as engine:
        stored = engine.store.memory.get(relevant.id)
        assert stored is not None and stored.used_count == 1 and stored.surfaced_count == 1


def test_first_prompt_recalls_before_the_transcript_exists(tmp_path: Path, lcm_home: Path) -> None:
    """Claude Code fires the first UserPromptSubmit before writing the transcript."""
    workspace = tmp_path / "shop"
    workspace.mkdir()
    with Engine.open(lcm_home) as engine:
        memory = remember(
            engine.store, "Deploys go through the blue-green script.", project=str(workspace)
        ).memory
    prompt = "how do we do deploys here?"
    not_yet = workspace / "session-not-written-yet.jsonl"
    result = fire(
        "UserPromptSubmit",
        claude_payload("UserPromptSubmit", not_yet, SESSION, prompt=prompt),
        home=lcm_home,
    )
    assert result.returncode == 0, result.stderr.decode()
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert memory.id in context
    log = (lcm_home / "logs" / "hooks.log").read_text()
    assert " ok " in log and " error " not in log and "nothing to ingest" in log


def test_recall_can_be_switched_off(tmp_path: Path, lcm_home: Path) -> None:
    workspace = tmp_path / "app"
    with Engine.open(lcm_home) as engine:
        remember(engine.store, "Deploys go through the blue-green script.", project=str(workspace))
    lcm_home.mkdir(parents=True, exist_ok=True)
    (lcm_home / "config.toml").write_text("[recall]\nenabled = false\n")
    prompt = "how do deploys work here?"
    transcript = write_transcript(workspace, prompt)
    result = fire(
        "UserPromptSubmit",
        claude_payload("UserPromptSubmit", transcript, SESSION, prompt=prompt),
        home=lcm_home,
    )
    assert result.returncode == 0 and result.stdout == b""


def test_mcp_store_and_search_rank_memory_with_history(tmp_path: Path, lcm_home: Path) -> None:
    project = str(tmp_path / "svc")
    config = load_config(lcm_home, env={})
    with Engine.open(config=config) as engine:
        chat = engine.conversation("s1", project=project)
        chat.ingest(
            [
                {"role": "user", "content": "the retry queue drops jobs after a redeploy"},
                {"role": "assistant", "content": "jobs are kept in memory only; use redis"},
            ]
        )

    async def main() -> None:
        tools = open_tools(config, project=project, model=None)
        async with memory_client(tools) as client:
            stored: dict[str, Any] = structured(
                await client.call_tool(
                    "lcm_store",
                    {"text": "The retry queue must persist jobs in Redis.", "tags": ["queue"]},
                )
            )
            assert stored["created"] and stored["id"].startswith("mem_")
            duplicate = structured(
                await client.call_tool(
                    "lcm_store", {"text": "the retry queue must persist jobs in redis"}
                )
            )
            assert not duplicate["created"] and duplicate["id"] == stored["id"]
            found = structured(await client.call_tool("lcm_search", {"query": "retry queue jobs"}))
            kinds = [h["kind"] for h in found["hits"]]
            assert kinds[0] == "memory" and found["hits"][0]["id"] == stored["id"]
            assert "message" in kinds
        tools.engine.close()

    anyio.run(main)
