"""The Codex parser on the real codemie-code rollouts (numbers from the README)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from sources_helpers import Parsed, assert_every_line_once, assert_raw_exact, file_lines, parse

from lossless.sources import tool_pairing


@dataclass(frozen=True)
class Truth:
    name: str
    session_id: str
    lines: int
    types: dict[str, int]
    tools: dict[str, int]  # function_call / custom_tool_call / web_search_call by name
    outputs: int  # function_call_output + custom_tool_call_output
    reasoning: int
    response_items: int
    prompt_events: int  # user_message events with no user response_item beside them


TUI = Truth(
    "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    "019e1625-789d-76c0-80ab-3724b5ddb799",
    386,
    {"session_meta": 1, "turn_context": 2, "response_item": 249, "event_msg": 134},
    {"exec_command": 43, "write_stdin": 54, "update_plan": 2, "apply_patch": 3, "web_search": 3},
    99 + 3,
    25,
    249,
    0,
)
DESKTOP = Truth(
    "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
    "019e1695-0522-7c83-8b39-0dd379793f80",
    99,
    {"session_meta": 1, "response_item": 95, "event_msg": 3},
    {"exec_command": 35, "js": 3},
    38,
    16,
    95,
    3,
)
FILES = [TUI, DESKTOP]
IDS = ["tui", "desktop"]
_cache: dict[Path, Parsed] = {}


def parsed_file(path: Path) -> Parsed:
    if path not in _cache:
        _cache[path] = parse("codex", path)
    return _cache[path]


@pytest.mark.parametrize("truth", FILES, ids=IDS)
def test_counts_match_readme(codex_dir: Path, truth: Truth) -> None:
    path = codex_dir / truth.name
    parsed = parsed_file(path)
    assert parsed.problems == []
    assert_every_line_once(parsed, truth.lines)
    assert Counter(r.record_type for r in parsed.records) == Counter(truth.types)
    assert parsed.progress.end_offset == path.stat().st_size
    assert parsed.progress.end_line == truth.lines
    # One response_item = one message, plus prompts only recorded as events.
    assert len(parsed.messages) == truth.response_items + truth.prompt_events
    assert sum(1 for m in parsed.messages if (m.metadata or {}).get("from_event")) == (
        truth.prompt_events
    )
    kinds = parsed.part_kinds()
    assert kinds["tool_use"] == sum(truth.tools.values())
    assert kinds["tool_result"] == truth.outputs
    assert kinds["reasoning"] == truth.reasoning
    assert parsed.tool_names() == Counter(truth.tools)
    assert_raw_exact(parsed, path)


@pytest.mark.parametrize("truth", FILES, ids=IDS)
def test_every_call_has_its_output(codex_dir: Path, truth: Truth) -> None:
    parsed = parsed_file(codex_dir / truth.name)
    pairing = tool_pairing(parsed.messages)
    assert pairing.ok, pairing
    # Independently: call_ids of call items vs output items in the raw JSON.
    calls, outputs = [], []
    for line in file_lines(codex_dir / truth.name):
        payload = json.loads(line).get("payload", {})
        if payload.get("type") in ("function_call", "custom_tool_call"):
            calls.append(payload["call_id"])
        elif payload.get("type") in ("function_call_output", "custom_tool_call_output"):
            outputs.append(payload["call_id"])
    assert sorted(calls) == sorted(outputs)
    with_ids = [p.tool_call_id for m in parsed.messages for p in m.parts if p.kind == "tool_use"]
    assert sorted(c for c in with_ids if c) == sorted(calls)
    # web_search_call is server-side: no call id and no output.
    assert with_ids.count(None) == truth.tools.get("web_search", 0)


@pytest.mark.parametrize("truth", FILES, ids=IDS)
def test_session_info(codex_dir: Path, truth: Truth) -> None:
    info = parsed_file(codex_dir / truth.name).info
    assert info.client == "codex"
    assert info.session_id == truth.session_id
    assert info.project is not None and info.project.startswith("/Users/Sample_User/")
    assert info.started_at is not None and info.started_at.startswith("2026-05-11T")
    assert info.metadata["model_provider"] == "openai"
    assert "cli_version" in info.metadata and "originator" in info.metadata


def test_roles_and_reasoning(codex_dir: Path) -> None:
    parsed = parsed_file(codex_dir / TUI.name)
    roles = Counter(m.role for m in parsed.messages)
    # 17 message items: 1 developer (-> system), 3 user, 13 assistant (README +
    # a plain scan); tool outputs are role "tool".
    assert roles["system"] == 1
    assert roles["user"] == 3
    assert roles["tool"] == TUI.outputs
    developer = next(m for m in parsed.messages if m.role == "system")
    assert developer.metadata is not None and developer.metadata["native_role"] == "developer"
    reasoning = [p for m in parsed.messages for p in m.parts if p.kind == "reasoning"]
    assert all(p.text == "" and p.metadata == {"encrypted": True} for p in reasoning)
    # Encrypted reasoning stays only in the raw record.
    for message in parsed.messages:
        assert "gAAAA" not in json.dumps(message.metadata)
        assert all("gAAAA" not in json.dumps(p.metadata) for p in message.parts)


def test_user_prompt_events(codex_dir: Path) -> None:
    """Desktop rollouts record prompts only as events; the TUI one mirrors them."""
    desktop = parsed_file(codex_dir / DESKTOP.name)
    prompts = [m for m in desktop.messages if m.role == "user"]
    assert len(prompts) == 3
    events = [
        json.loads(line)["payload"]["message"]
        for line in file_lines(codex_dir / DESKTOP.name)
        if b'"user_message"' in line
    ]
    assert [m.content for m in prompts] == events
    tui = parsed_file(codex_dir / TUI.name)
    mirrored = [r for r in tui.standalone if '"type":"user_message"' in r.raw]
    assert len(mirrored) == 2
    assert [m.content for m in tui.messages if m.role == "user"][1:] == [
        "show tools",
        "let's update the defailt context compart to 90 in env var",
    ]


def test_tool_text_is_arguments_and_output(codex_dir: Path) -> None:
    parsed = parsed_file(codex_dir / TUI.name)
    patch = next(p for m in parsed.messages for p in m.parts if p.tool_name == "apply_patch")
    assert patch.text is not None and patch.text.startswith("*** Begin Patch")
    call = next(m for m in parsed.messages if m.parts[0].tool_name == "exec_command")
    assert call.content.startswith("[tool_use exec_command] {")
    result = next(m for m in parsed.messages if m.role == "tool")
    assert result.content.startswith("[tool_result] Chunk ID:")
