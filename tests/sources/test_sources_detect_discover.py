"""detect_kind, parser_for and transcript discovery."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lossless.sources import detect_kind, parser_for
from lossless.sources.discovery import discover_transcripts

MAIN = "4d5611e5-241a-462a-8d15-5122611a9569"


def test_detect_real_files(data_dir: Path) -> None:
    for path in (data_dir / "claude-code").rglob("*.jsonl"):
        assert detect_kind(path) == "claude-code", path
    for path in (data_dir / "codex").rglob("*.jsonl"):
        assert detect_kind(path) == "codex", path
    assert detect_kind(data_dir / "locomo" / "locomo10.json") is None
    assert detect_kind(data_dir / "README.md") is None


def test_detect_by_content_and_by_path(tmp_path: Path) -> None:
    generic = tmp_path / "chat.jsonl"
    generic.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    assert detect_kind(generic) == "generic"
    doc = tmp_path / "chat.json"
    doc.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    assert detect_kind(doc) == "generic"
    legacy = tmp_path / "old.jsonl"
    legacy.write_text(
        json.dumps({"id": "x", "timestamp": "t"})
        + "\n"
        + json.dumps({"type": "message", "role": "user", "content": []})
        + "\n"
    )
    assert detect_kind(legacy) == "codex"
    noise = tmp_path / "noise.jsonl"
    noise.write_bytes(b"\x00\xff not json\n[1]\n")
    assert detect_kind(noise) is None
    assert detect_kind(tmp_path / "missing.jsonl") is None
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps({"type": ["unhashable"], "payload": {}}) + "\n")
    assert detect_kind(odd) is None

    # Empty files just created by a client: the path says what they are.
    claude_new = tmp_path / ".claude" / "projects" / "p" / "s.jsonl"
    codex_new = tmp_path / ".codex" / "sessions" / "2026" / "01" / "01" / "rollout-x.jsonl"
    for path in (claude_new, codex_new):
        path.parent.mkdir(parents=True)
        path.write_bytes(b"")
    assert detect_kind(claude_new) == "claude-code"
    assert detect_kind(codex_new) == "codex"


def test_parser_for() -> None:
    for kind in ("claude-code", "codex", "generic"):
        assert parser_for(kind).kind == kind
    with pytest.raises(ValueError, match="unknown source kind"):
        parser_for("nope")  # type: ignore[arg-type]


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}\n")
    return path


def test_discovery_order(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    codex = tmp_path / "codex"
    projects = claude / "projects"
    s0 = touch(projects / "p1" / "s0.jsonl")
    s1 = touch(projects / "p1" / "s1.jsonl")
    s1_b = touch(projects / "p1" / "s1" / "subagents" / "agent-b.jsonl")
    s1_a = touch(projects / "p1" / "s1" / "subagents" / "agent-a.jsonl")
    touch(projects / "p1" / "s1" / "subagents" / "notes.txt")
    orphan = touch(projects / "p1" / "gone" / "subagents" / "agent-c.jsonl")
    old_style_agent = touch(projects / "p1" / "agent-0abc.jsonl")
    p2 = touch(projects / "p2" / "x.jsonl")
    touch(claude / "todos" / "t.jsonl")
    new = touch(codex / "sessions" / "2026" / "02" / "01" / "rollout-2026-02-01-b.jsonl")
    old = touch(codex / "sessions" / "2025" / "12" / "31" / "rollout-2025-12-31-a.jsonl")
    archived = touch(codex / "archived_sessions" / "rollout-2024-01-01-z.jsonl")
    touch(codex / "sessions" / "2026" / "02" / "01" / "history.jsonl")

    found = discover_transcripts(claude, codex)
    assert found == [
        ("claude-code", orphan),
        ("claude-code", s0),
        ("claude-code", s1),
        ("claude-code", s1_a),
        ("claude-code", s1_b),
        ("claude-code", old_style_agent),
        ("claude-code", p2),
        ("codex", old),
        ("codex", new),
        ("codex", archived),
    ]
    assert discover_transcripts(tmp_path / "none", tmp_path / "none2") == []


def test_discovery_on_the_real_layout(tmp_path: Path, claude_dir: Path, codex_dir: Path) -> None:
    claude = tmp_path / "claude"
    (claude / "projects").mkdir(parents=True)
    (claude / "projects" / "-home-USER-spotter").symlink_to(claude_dir)
    codex = tmp_path / "codex"
    (codex / "sessions" / "2026" / "05").mkdir(parents=True)
    (codex / "sessions" / "2026" / "05" / "11").symlink_to(codex_dir)
    found = [(kind, path.name) for kind, path in discover_transcripts(claude, codex)]
    names = [name for _, name in found]
    assert len(found) == 9  # 5 sessions + 2 sub-agents + 2 rollouts
    main = names.index(f"{MAIN}.jsonl")
    assert names[main + 1 : main + 3] == ["agent-a2898e3.jsonl", "agent-acompact-e1f845.jsonl"]
    assert [kind for kind, _ in found].count("codex") == 2
