"""Broken, hostile and odd input: a problem names the file and line, the rest parses."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from sources_helpers import assert_every_line_once, assert_raw_exact, parse

from lossless.sources import base, parser_for
from lossless.sources.base import SourceKind


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def claude_user(n: int, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": f"u-{n}",
        "parentUuid": f"a-{n - 1}" if n > 1 else None,
        "sessionId": "sess-1",
        "cwd": "/work",
        "timestamp": f"2026-01-01T00:00:{n:02d}Z",
        "message": {"role": "user", "content": content},
        **extra,
    }


def claude_assistant(n: int, msg_id: Any, blocks: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": f"a-{n}",
        "sessionId": "sess-1",
        "timestamp": f"2026-01-01T00:01:{n:02d}Z",
        "message": {"id": msg_id, "role": "assistant", "model": "m", "content": blocks},
        **extra,
    }


def sample_lines(kind: SourceKind) -> list[bytes]:
    """Four good lines of each format, each making one message."""
    if kind == "claude-code":
        records: list[dict[str, Any]] = [
            claude_user(1, "hello"),
            claude_assistant(2, "m1", [{"type": "text", "text": "hi"}]),
            claude_user(3, "again"),
            claude_assistant(4, "m2", [{"type": "text", "text": "yes"}]),
        ]
    elif kind == "codex":
        records = [
            {
                "timestamp": "t1",
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "hello"}],
                },
            },
            {
                "timestamp": "t2",
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "hi"}],
                },
            },
            {
                "timestamp": "t3",
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "again"}],
                },
            },
            {
                "timestamp": "t4",
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "yes"}],
                },
            },
        ]
    else:
        records = [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": "yes"},
        ]
    return [dumps(r) for r in records]


KINDS: list[SourceKind] = ["claude-code", "codex", "generic"]
CONTENTS = ["hello", "hi", "again", "yes"]


def write(tmp_path: Path, lines: list[bytes], tail: bytes = b"", name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(line + b"\n" for line in lines) + tail)
    return path


BAD_LINES = {
    "malformed": (b'{"type": "user", "message": ', "malformed JSON"),
    "garbage": (b"\xff\xfe\x80garbage\xc3", "not valid UTF-8"),
    "raw_nul": (b'{"type": "user",\x00 "x": 1}', "NUL"),
    "blank": (b"", "blank line"),
    "array": (b"[1, 2, 3]", "expected a JSON object"),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bad", list(BAD_LINES), ids=list(BAD_LINES))
def test_bad_line_is_a_problem_and_the_rest_parses(
    tmp_path: Path, kind: SourceKind, bad: str
) -> None:
    raw, error = BAD_LINES[bad]
    lines = sample_lines(kind)
    path = write(tmp_path, [*lines[:2], raw, *lines[2:]])
    parsed = parse(kind, path)
    assert [p.line_no for p in parsed.problems] == [3]
    problem = parsed.problems[0]
    assert error in problem.error
    assert problem.describe().startswith(f"{path}:3: ")
    assert problem.raw == raw
    assert problem.byte_offset == len(lines[0]) + len(lines[1]) + 2
    assert [m.content for m in parsed.messages] == CONTENTS
    assert_every_line_once(parsed, 5)
    assert_raw_exact(parsed, path)
    assert parsed.progress.end_offset == path.stat().st_size


@pytest.mark.parametrize("kind", KINDS)
def test_truncated_last_line_is_pending_not_a_problem(tmp_path: Path, kind: SourceKind) -> None:
    lines = sample_lines(kind)
    partial = lines[3][: len(lines[3]) // 2]
    path = write(tmp_path, lines[:3], tail=partial)
    parsed = parse(kind, path)
    assert parsed.problems == []
    assert parsed.progress.pending_tail
    assert parsed.progress.end_offset == path.stat().st_size - len(partial)
    assert parsed.progress.end_line == 3
    assert [m.content for m in parsed.messages] == CONTENTS[:3]


@pytest.mark.parametrize("kind", KINDS)
def test_complete_last_line_without_newline_is_consumed(tmp_path: Path, kind: SourceKind) -> None:
    lines = sample_lines(kind)
    path = write(tmp_path, lines[:3], tail=lines[3])
    parsed = parse(kind, path)
    assert not parsed.progress.pending_tail
    assert parsed.progress.end_offset == path.stat().st_size
    assert parsed.progress.end_line == 4
    assert [m.content for m in parsed.messages] == CONTENTS
    assert_raw_exact(parsed, path)


@pytest.mark.parametrize("kind", KINDS)
def test_trailing_non_object_json_without_newline_is_a_problem(
    tmp_path: Path, kind: SourceKind
) -> None:
    path = write(tmp_path, sample_lines(kind), tail=b"42")
    parsed = parse(kind, path)
    assert [p.line_no for p in parsed.problems] == [5]
    assert not parsed.progress.pending_tail


@pytest.mark.parametrize("kind", KINDS)
def test_crlf_lines_keep_their_bytes(tmp_path: Path, kind: SourceKind) -> None:
    path = write(tmp_path, [line + b"\r" for line in sample_lines(kind)])
    parsed = parse(kind, path)
    assert parsed.problems == []
    assert [m.content for m in parsed.messages] == CONTENTS
    assert all(r.raw.endswith("\r") for r in parsed.records)
    assert_raw_exact(parsed, path)


def test_escaped_nul_is_kept_in_text(tmp_path: Path) -> None:
    path = write(tmp_path, [dumps(claude_user(1, "a\u0000b"))])
    parsed = parse("claude-code", path)
    assert parsed.problems == []
    assert parsed.messages[0].content == "a\x00b"
    assert "\\u0000" in parsed.records[0].raw


# ------------------------------------------------------------------ wrong field types


def test_claude_wrong_field_types(tmp_path: Path) -> None:
    bad_content = claude_user(2, 42)
    bad_message = {**claude_user(3, "x"), "message": "not an object"}
    odd_stamp = {**claude_user(4, "stamped"), "timestamp": [1, 2]}
    int_uuid = {**claude_user(5, "numbered"), "uuid": 17, "parentUuid": 5}
    odd_blocks = claude_assistant(
        6,
        "m9",
        [
            7,
            "bare",
            {"type": "tool_use", "name": 3},
            {"no_type": True},
            {"type": "tool_result", "tool_use_id": "x", "content": {"k": 1}},
        ],
    )
    int_id = claude_assistant(7, 5, [{"type": "text", "text": "a"}])
    int_id_again = claude_assistant(8, 5, [{"type": "text", "text": "b"}])
    odd_type = {"type": 5, "uuid": "odd"}
    assistant_bad = claude_assistant(9, "m10", {"not": "a list"})
    lines = [
        claude_user(1, "ok"),
        bad_content,
        bad_message,
        odd_stamp,
        int_uuid,
        odd_blocks,
        int_id,
        int_id_again,
        odd_type,
        assistant_bad,
        claude_user(11, "last"),
    ]
    path = write(tmp_path, [dumps(r) for r in lines])
    parsed = parse("claude-code", path)
    assert_every_line_once(parsed, len(lines))

    errors = {p.line_no: p.error for p in parsed.problems}
    assert set(errors) == {2, 3, 10}
    assert "'message.content'" in errors[2] and "int" in errors[2]
    assert "'message'" in errors[3]
    assert "'message.content'" in errors[10]

    by_line = {m.native_records[0].line_no: m for m in parsed.messages}
    stamped = by_line[4]
    assert stamped.created_at is None
    assert stamped.metadata is not None
    assert any("timestamp" in c for c in stamped.metadata["coerced"])
    numbered = by_line[5]
    assert numbered.ingest_key is not None and numbered.ingest_key.startswith("L5:")
    assert numbered.metadata is not None
    assert any("parentUuid" in c for c in numbered.metadata["coerced"])
    kinds = [p.kind for p in by_line[6].parts]
    assert kinds == ["other", "text", "other", "other", "tool_result"]
    assert by_line[6].parts[4].text == '{"k": 1}'
    # A non-string message.id never merges.
    assert by_line[7].content == "a" and by_line[8].content == "b"
    assert any("message.id" in c for c in (by_line[7].metadata or {})["coerced"])
    assert [r.record_type for r in parsed.standalone] == ["unknown"]
    assert by_line[11].content == "last"


def test_codex_wrong_field_types(tmp_path: Path) -> None:
    def item(payload: Any, **extra: Any) -> dict[str, Any]:
        return {"timestamp": "t", "type": "response_item", "payload": payload, **extra}

    lines = [
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "abc", "cwd": "/w"}},
        item("not an object"),
        item({"type": "message", "role": "wizard", "content": []}),
        item({"type": "message", "role": "user", "content": 5}),
        item({"type": "function_call", "arguments": "{}", "call_id": "c"}),
        item({"type": "function_call_output", "call_id": "c", "output": {"content": "x", "ok": 1}}),
        item({"type": "function_call_output", "call_id": "d", "output": 5}),
        item({"type": "message", "role": "user", "content": "s"}, timestamp=5),
        {"timestamp": "t", "type": "compacted", "payload": {"message": 3}},
        {"timestamp": "t", "type": "event_msg", "payload": 5},
        item({"type": "brand_new_item", "x": 1}),
        {
            "timestamp": "t",
            "type": "compacted",
            "payload": {"message": "summary", "replacement_history": []},
        },
    ]
    path = write(tmp_path, [dumps(r) for r in lines])
    parsed = parse("codex", path)
    assert_every_line_once(parsed, len(lines))
    errors = {p.line_no: p.error for p in parsed.problems}
    assert set(errors) == {2, 3, 4, 5, 9}
    assert "'payload'" in errors[2]
    assert "'payload.role'" in errors[3]
    assert "'payload.content'" in errors[4]
    assert "'payload.name'" in errors[5]
    assert "'payload.message'" in errors[9]
    by_line = {m.native_records[0].line_no: m for m in parsed.messages}
    assert by_line[6].parts[0].text == "x"
    assert by_line[6].role == "tool"
    assert by_line[7].parts[0].text == "5"
    assert by_line[8].created_at is None and by_line[8].content == "s"
    assert by_line[11].parts[0].kind == "other" and by_line[11].role == "assistant"
    compacted = by_line[12]
    assert compacted.role == "system" and compacted.content == "summary"
    assert compacted.metadata == {"compacted": True}


def test_generic_wrong_field_types(tmp_path: Path) -> None:
    lines = [
        {"role": 5, "content": "x"},
        {"role": "user", "content": 5},
        {"role": "assistant", "content": None, "tool_calls": "x"},
        {"role": "assistant", "content": None, "tool_calls": [5]},
        {"role": "user", "content": "ok", "created_at": 7},
    ]
    path = write(tmp_path, [dumps(r) for r in lines])
    parsed = parse("generic", path)
    assert_every_line_once(parsed, len(lines))
    errors = {p.line_no: p.error for p in parsed.problems}
    assert set(errors) == {1, 2, 3}
    assert "'role'" in errors[1]
    assert "'content'" in errors[2]
    assert "'tool_calls'" in errors[3]
    assert parsed.messages[0].parts[0].kind == "other"
    assert parsed.messages[1].created_at is None


# ------------------------------------------------------------------ big lines


@pytest.mark.parametrize("kind", KINDS)
def test_ten_megabyte_lines(tmp_path: Path, kind: SourceKind) -> None:
    big_text = "x" * (10 * 1024 * 1024)
    lines = sample_lines(kind)
    valid = lines[0].replace(b"hello", big_text.encode())
    invalid = valid[:-5]  # cut inside the closing braces
    path = write(tmp_path, [valid, invalid, *lines[1:]])
    parsed = parse(kind, path)
    assert [p.line_no for p in parsed.problems] == [2]
    assert len(parsed.problems[0].raw) == len(invalid)
    assert [m.content for m in parsed.messages] == [big_text, *CONTENTS[1:]]
    assert_every_line_once(parsed, 5)


@pytest.mark.parametrize("kind", KINDS)
def test_line_over_the_length_cap(
    tmp_path: Path, kind: SourceKind, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base, "MAX_LINE_BYTES", 1000)
    lines = sample_lines(kind)
    huge = lines[0].replace(b"hello", b"y" * 4500)
    path = write(tmp_path, [lines[0], huge, *lines[1:]])
    parsed = parse(kind, path)
    assert [p.line_no for p in parsed.problems] == [2]
    problem = parsed.problems[0]
    assert "longer than the 1000-byte limit" in problem.error
    assert problem.byte_offset == len(lines[0]) + 1
    assert [m.content for m in parsed.messages] == ["hello", *CONTENTS[1:]]
    assert_every_line_once(parsed, 5)
    assert_raw_exact(parsed, path)
    assert parsed.progress.end_line == 5
    assert parsed.progress.end_offset == path.stat().st_size

    # The same line unterminated at the end is a pending tail.
    tail_path = write(tmp_path, lines[:2], tail=huge, name="tail.jsonl")
    tail = parse(kind, tail_path)
    assert tail.problems == [] and tail.progress.pending_tail
    assert tail.progress.end_line == 2


# ------------------------------------------------------------------ unreadable files


@pytest.mark.parametrize("kind", KINDS)
def test_unreadable_paths_raise_oserror_naming_the_file(tmp_path: Path, kind: SourceKind) -> None:
    """Decision: a file that cannot be opened is not a line problem; ``parse()``
    itself raises the OSError (which names the file) before any event."""
    parser = parser_for(kind)
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(FileNotFoundError) as info:
        parser.parse(missing)
    assert info.value.filename == str(missing)
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    with pytest.raises(IsADirectoryError):
        parser.parse(folder)


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="running as root: chmod 000 does not stop root from reading",
)
@pytest.mark.parametrize("kind", KINDS)
def test_permission_denied_raises(tmp_path: Path, kind: SourceKind) -> None:
    path = write(tmp_path, sample_lines(kind))
    path.chmod(0)
    try:
        with pytest.raises(PermissionError) as info:
            parser_for(kind).parse(path)
        assert info.value.filename == str(path)
    finally:
        path.chmod(0o600)


def test_lone_surrogate_escape_is_kept_like_nul(tmp_path: Path) -> None:
    """Decision: like an escaped NUL, an unpaired ``\\ud800`` escape is decoded as
    JSON says and kept; the raw line stays valid UTF-8. Whether such text can be
    stored (it cannot be encoded as UTF-8) is the store's call."""
    path = write(tmp_path, [b'{"role": "user", "content": "a\\ud800b"}'])
    parsed = parse("generic", path)
    assert parsed.problems == []
    assert parsed.messages[0].content == "a\ud800b"
    assert parsed.records[0].raw == '{"role": "user", "content": "a\\ud800b"}'
