"""Reading a growing transcript in pieces gives exactly what one full read gives."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from sources_helpers import Parsed, file_lines, parse

from lossless.sources.base import SourceKind

MAIN = "4d5611e5-241a-462a-8d15-5122611a9569"


def line_offsets(data: bytes) -> list[int]:
    """Start offset of every line, plus the file size."""
    offsets = [0]
    for index, byte in enumerate(data):
        if byte == 0x0A:
            offsets.append(index + 1)
    if offsets[-1] != len(data):
        offsets.append(len(data))
    return offsets


def two_step(kind: SourceKind, target: Path, data: bytes, cut: int) -> tuple[Parsed, Parsed]:
    """Parse ``data[:cut]`` as a growing file, then the whole file from where it stopped."""
    target.write_bytes(data[:cut])
    first = parse(kind, target, final=False)
    target.write_bytes(data)
    second = parse(
        kind,
        target,
        start_offset=first.progress.end_offset,
        start_line=first.progress.end_line,
        final=True,
    )
    return first, second


def check_cuts(kind: SourceKind, source: Path, target: Path, cuts: list[int]) -> None:
    data = source.read_bytes()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    whole = parse(kind, target)
    for cut in cuts:
        first, second = two_step(kind, target, data, cut)
        assert first.progress.end_offset <= cut
        assert second.info == whole.info
        if first.progress.end_line >= 2:
            # Before that the head holds no session record and the id falls
            # back to the file name.
            assert first.info == whole.info, cut
        assert first.events + second.events == whole.events, f"cut at byte {cut}"
        assert second.progress.end_offset == len(data)
        assert (second.progress.last_key, second.progress.last_sha256) == (
            whole.progress.last_key,
            whole.progress.last_sha256,
        )


@pytest.mark.parametrize("name", ["short.jsonl", "tool_heavy.jsonl"])
def test_claude_every_cut(claude_dir: Path, tmp_path: Path, name: str) -> None:
    data = (claude_dir / name).read_bytes()
    starts = line_offsets(data)
    middles = [(a + b) // 2 for a, b in itertools.pairwise(starts)]
    check_cuts("claude-code", claude_dir / name, tmp_path / name, sorted({*starts, *middles}))


def test_claude_subagent_cuts(claude_dir: Path, tmp_path: Path) -> None:
    source = claude_dir / MAIN / "subagents" / "agent-a2898e3.jsonl"
    starts = line_offsets(source.read_bytes())
    cuts = starts[::5] + [s + 40 for s in starts[3:-1:11]]
    target = tmp_path / MAIN / "subagents" / source.name
    check_cuts("claude-code", source, target, cuts)


def test_codex_cuts(codex_dir: Path, tmp_path: Path) -> None:
    source = next(codex_dir.glob("rollout-2026-05-11T11-26-55-*.jsonl"))
    starts = line_offsets(source.read_bytes())
    # Every boundary near the two prompts (item/event pairs), then a sample.
    cuts = starts[:30] + starts[30::17] + [s + 100 for s in starts[5:-1:23]]
    check_cuts("codex", source, tmp_path / source.name, cuts)


def test_generic_jsonl_cuts(tmp_path: Path) -> None:
    source = tmp_path / "chat.jsonl"
    lines = [
        {"session_id": "s-1"},
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    source.write_text("".join(json.dumps(x) + "\n" for x in lines))
    data = source.read_bytes()
    starts = line_offsets(data)
    cuts = sorted({*starts, *(s + 3 for s in starts[:-1])})
    check_cuts("generic", source, tmp_path / "copy" / "chat.jsonl", cuts)


def test_open_group_is_held_back_then_emitted_whole(claude_dir: Path, tmp_path: Path) -> None:
    source = claude_dir / MAIN / "subagents" / "agent-a2898e3.jsonl"
    lines = file_lines(source)
    # First assistant record whose successor shares its message.id.
    records = [json.loads(line) for line in lines]
    index = next(
        i
        for i in range(len(records) - 1)
        if records[i]["type"] == "assistant"
        and records[i + 1]["type"] == "assistant"
        and records[i]["message"]["id"] == records[i + 1]["message"]["id"]
    )
    group_start = sum(len(line) + 1 for line in lines[:index])
    cut = group_start + len(lines[index]) + 1  # right after the group's first record
    data = source.read_bytes()
    target = tmp_path / MAIN / "subagents" / source.name
    target.parent.mkdir(parents=True)
    first, second = two_step("claude-code", target, data, cut)

    key = records[index]["uuid"]
    assert key not in {m.ingest_key for m in first.messages}
    assert first.progress.end_offset == group_start
    assert first.progress.end_line == index
    assert not first.progress.pending_tail
    merged = next(m for m in second.messages if m.ingest_key == key)
    assert len(merged.native_records) >= 2
    assert merged.native_records[1].native_key == records[index + 1]["uuid"]

    # final=True on the same cut emits what is there (the file is taken as done).
    target.write_bytes(data[:cut])
    done = parse("claude-code", target, final=True)
    partial = next(m for m in done.messages if m.ingest_key == key)
    assert len(partial.native_records) == 1
    assert done.progress.end_offset == cut


def test_resume_at_end_is_empty(claude_dir: Path) -> None:
    source = claude_dir / "tool_heavy.jsonl"
    whole = parse("claude-code", source)
    again = parse(
        "claude-code",
        source,
        start_offset=whole.progress.end_offset,
        start_line=whole.progress.end_line,
    )
    assert again.events == []
    assert again.info == whole.info
    assert again.progress.end_offset == whole.progress.end_offset
    assert again.progress.end_line == whole.progress.end_line


@pytest.mark.parametrize("kind", ["claude-code", "codex", "generic"])
def test_newline_written_after_the_line_was_consumed(
    tmp_path: Path, kind: SourceKind, claude_dir: Path, codex_dir: Path
) -> None:
    """A complete JSON line read before its newline: the newline is not a blank line."""
    if kind == "claude-code":
        source = claude_dir / "tool_heavy.jsonl"
    elif kind == "codex":
        source = next(codex_dir.glob("rollout-2026-05-11T13-28-45-*.jsonl"))
    else:
        source = tmp_path / "g.jsonl"
        source.write_text("".join(f'{{"role": "user", "content": "m{i}"}}\n' for i in range(9)))
    data = source.read_bytes()
    starts = line_offsets(data)
    target = tmp_path / "copy" / source.name
    target.parent.mkdir()
    target.write_bytes(data)
    whole = parse(kind, target)
    for index in (3, 4, 5):
        cut = starts[index] - 1  # the line is there, its newline is not
        first, second = two_step(kind, target, data, cut)
        assert second.problems == []
        assert first.events + second.events == whole.events
        # Only the newline arrived: nothing new, and the cursor moves past it.
        target.write_bytes(data[: cut + 1])
        after = parse(
            kind, target, start_offset=first.progress.end_offset, start_line=first.progress.end_line
        )
        if first.progress.end_offset == cut:
            assert after.events == []
            assert after.progress.end_offset == cut + 1
            assert after.progress.last_key == first.progress.last_key
