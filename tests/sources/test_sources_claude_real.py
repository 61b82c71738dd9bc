"""The Claude Code parser on the real spotter transcripts.

Expected numbers come from ../shared/data/README.md (or from a plain JSON scan
written here), never from the parser's own output.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sources_helpers import Parsed, assert_every_line_once, assert_raw_exact, file_lines, parse

from lossless.sources import tool_pairing

MAIN = "4d5611e5-241a-462a-8d15-5122611a9569"


@dataclass(frozen=True)
class Truth:
    """One row of the README table."""

    path: str
    lines: int
    types: dict[str, int]
    tools: dict[str, int]
    compactions: int = 0
    tool_calls: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", sum(self.tools.values()))


README: list[Truth] = [
    Truth(
        f"{MAIN}.jsonl",
        1512,
        {
            "progress": 1083,
            "assistant": 254,
            "user": 154,
            "file-history-snapshot": 14,
            "system": 6,
            "queue-operation": 1,
        },
        {
            "Bash": 67,
            "Edit": 32,
            "Read": 31,
            "Grep": 10,
            "Write": 7,
            "Task": 1,
            "TaskOutput": 1,
            "AskUserQuestion": 1,
        },
        compactions=1,
    ),
    Truth(
        f"{MAIN}/subagents/agent-a2898e3.jsonl",
        144,
        {"user": 34, "assistant": 40, "progress": 70},
        {"Read": 16, "Glob": 10, "Bash": 5, "Grep": 2},
    ),
    Truth(f"{MAIN}/subagents/agent-acompact-e1f845.jsonl", 5, {"user": 4, "assistant": 1}, {}),
    Truth(
        "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
        1881,
        {
            "progress": 1332,
            "assistant": 314,
            "user": 201,
            "file-history-snapshot": 27,
            "system": 6,
            "queue-operation": 1,
        },
        {
            "Bash": 76,
            "Edit": 50,
            "Read": 33,
            "Write": 12,
            "Grep": 12,
            "Glob": 11,
            "Task": 2,
            "TaskOutput": 1,
        },
        compactions=1,
    ),
    Truth(
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
        2385,
        {"progress": 1697, "assistant": 408, "user": 249, "file-history-snapshot": 26, "system": 5},
        {
            "Bash": 120,
            "Edit": 67,
            "Read": 37,
            "Write": 6,
            "Glob": 5,
            "WebFetch": 4,
            "Task": 1,
            "Skill": 1,
            "Grep": 1,
        },
        compactions=1,
    ),
    Truth(
        "short.jsonl",
        15,
        {"file-history-snapshot": 1, "progress": 3, "user": 4, "assistant": 5, "system": 2},
        {"Bash": 1, "Glob": 1},
    ),
    Truth(
        "tool_heavy.jsonl",
        39,
        {
            "file-history-snapshot": 3,
            "progress": 10,
            "user": 13,
            "assistant": 9,
            "queue-operation": 2,
            "system": 2,
        },
        {"Bash": 2, "WebSearch": 1, "Glob": 1, "Read": 1, "WebFetch": 1},
    ),
]
IDS = [Path(t.path).name for t in README]

_cache: dict[Path, Parsed] = {}


def parsed_file(path: Path) -> Parsed:
    if path not in _cache:
        _cache[path] = parse("claude-code", path)
    return _cache[path]


def assistant_runs(path: Path) -> int:
    """Independent count of merged assistant messages: runs of one message.id,
    broken only by user/system records."""
    runs, current = 0, None
    for line in file_lines(path):
        record = json.loads(line)
        if record["type"] == "assistant":
            if record["message"]["id"] != current:
                runs += 1
                current = record["message"]["id"]
        elif record["type"] in ("user", "system"):
            current = None
    return runs


@pytest.mark.parametrize("truth", README, ids=IDS)
def test_counts_match_readme(claude_dir: Path, truth: Truth) -> None:
    path = claude_dir / truth.path
    parsed = parsed_file(path)
    assert parsed.problems == []
    assert sum(truth.types.values()) == truth.lines
    assert len(parsed.records) == truth.lines
    assert_every_line_once(parsed, truth.lines)
    assert Counter(r.record_type for r in parsed.records) == Counter(truth.types)
    assert parsed.progress.end_offset == path.stat().st_size
    assert parsed.progress.end_line == truth.lines
    assert not parsed.progress.pending_tail

    kinds = parsed.part_kinds()
    assert kinds["tool_use"] == truth.tool_calls
    assert kinds["tool_result"] == truth.tool_calls
    assert parsed.tool_names() == Counter(truth.tools)
    assert tool_pairing(parsed.messages).ok


@pytest.mark.parametrize("truth", README, ids=IDS)
def test_message_structure(claude_dir: Path, truth: Truth) -> None:
    path = claude_dir / truth.path
    parsed = parsed_file(path)
    assistants = [m for m in parsed.messages if m.role == "assistant"]
    assert len(assistants) == assistant_runs(path)
    # Every assistant record sits in exactly one assistant message; every user
    # record in a user or tool message.
    assert sum(len(m.native_records) for m in assistants) == truth.types["assistant"]
    users = [m for m in parsed.messages if m.role in ("user", "tool")]
    assert sum(len(m.native_records) for m in users) == truth.types["user"]
    for message in parsed.messages:
        assert message.ingest_key == message.native_records[0].native_key
        assert message.token_count is None
    for message in assistants:
        ids = {json.loads(r.raw)["message"]["id"] for r in message.native_records}
        assert len(ids) == 1
        assert message.metadata is not None and message.metadata["message_id"] in ids
    keys = [m.ingest_key for m in parsed.messages]
    assert len(keys) == len(set(keys))
    # A tool result always comes after the tool_use it answers.
    seen: set[str] = set()
    for message in parsed.messages:
        for part in message.parts:
            if part.kind == "tool_use":
                assert part.tool_call_id
                seen.add(part.tool_call_id)
            elif part.kind == "tool_result":
                assert part.tool_call_id in seen


@pytest.mark.parametrize("truth", README, ids=IDS)
def test_compaction_markers(claude_dir: Path, truth: Truth) -> None:
    parsed = parsed_file(claude_dir / truth.path)
    boundaries = [m for m in parsed.messages if "compact_boundary" in (m.metadata or {})]
    summaries = [m for m in parsed.messages if (m.metadata or {}).get("is_compact_summary")]
    assert len(boundaries) == truth.compactions
    assert len(summaries) == truth.compactions
    for boundary in boundaries:
        assert boundary.role == "system"
        assert boundary.metadata is not None
        assert boundary.metadata["compact_boundary"]["preTokens"] > 100_000
    for summary in summaries:
        assert summary.role == "user"
        assert len(summary.content) > 1000
        # The summary follows its boundary.
        assert parsed.messages.index(summary) > parsed.messages.index(boundaries[0])


@pytest.mark.parametrize("truth", README, ids=IDS)
def test_raw_and_plain_strings_are_byte_exact(claude_dir: Path, truth: Truth) -> None:
    path = claude_dir / truth.path
    parsed = parsed_file(path)
    assert_raw_exact(parsed, path)
    by_key = {m.ingest_key: m for m in parsed.messages}
    plain = 0
    for line in file_lines(path):
        record = json.loads(line)
        content = record.get("message", {}).get("content")
        if record["type"] == "user" and isinstance(content, str):
            message = by_key[record["uuid"]]
            assert message.content == content
            assert [p.text for p in message.parts] == [content]
            plain += 1
    assert plain > 0


def test_subagent_session_info(claude_dir: Path) -> None:
    for name, agent in (
        ("agent-a2898e3.jsonl", "a2898e3"),
        ("agent-acompact-e1f845.jsonl", "acompact-e1f845"),
    ):
        parsed = parsed_file(claude_dir / MAIN / "subagents" / name)
        info = parsed.info
        assert info.client == "claude-code"
        assert info.parent_session_id == MAIN
        assert info.agent_id == agent
        assert info.session_id == f"{MAIN}/agent-{agent}"
        assert info.project == "/home/USER/projects/spotter-worktrees/spotter-dov"
        assert all((m.metadata or {}).get("is_sidechain") for m in parsed.messages)


def test_main_session_info(claude_dir: Path) -> None:
    info = parsed_file(claude_dir / f"{MAIN}.jsonl").info
    assert info.session_id == MAIN
    assert info.parent_session_id is None and info.agent_id is None
    assert info.started_at is not None and info.started_at.startswith("2026-02-12T16:02")
    assert info.metadata["version"] == "2.1.39"
    assert info.metadata["git_branch"] == "spotter-dov"
    # short.jsonl is not named after its session: the record's sessionId wins.
    short = parsed_file(claude_dir / "short.jsonl").info
    assert short.session_id == "55604662-cf2a-4331-851a-ec234028f8ca"


def test_thinking_kept_with_signature(claude_dir: Path) -> None:
    parsed = parsed_file(claude_dir / f"{MAIN}.jsonl")
    reasoning = [p for m in parsed.messages for p in m.parts if p.kind == "reasoning"]
    assert len(reasoning) == 14  # thinking blocks, by the plain JSON scan
    assert all(p.metadata and "signature" in p.metadata for p in reasoning)


def test_merged_group_metadata(claude_dir: Path) -> None:
    parsed = parsed_file(claude_dir / MAIN / "subagents" / "agent-a2898e3.jsonl")
    merged = [m for m in parsed.messages if len(m.native_records) > 1]
    assert merged
    for message in merged:
        last = json.loads(message.native_records[-1].raw)
        first = json.loads(message.native_records[0].raw)
        assert message.metadata is not None
        assert message.metadata["usage"] == last["message"]["usage"]
        assert message.metadata["uuid"] == first["uuid"]
        assert message.metadata["uuids"] == [
            json.loads(r.raw)["uuid"] for r in message.native_records
        ]
        assert message.created_at == first["timestamp"]
