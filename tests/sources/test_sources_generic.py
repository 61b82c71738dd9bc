"""The generic parser (.json documents, .jsonl lines) and message_from_dict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sources_helpers import assert_every_line_once, parse

from lossless.sources import generic
from lossless.sources.generic import message_from_dict

DOCUMENT = """\ufeff{
  "session_id": "chat-42",
  "title": "Démo",
  "messages": [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "héllo \\u0000 wörld", "created_at": "2026-01-01T00:00:00Z"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\\"x\\": 1}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "42"},
    {"role": "assistant", "content": [{"type": "text", "text": "done"},
      {"type": "tool_use", "id": "t1", "name": "g", "input": {"q": "ü"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    7,
    {"role": "wizard", "content": "x"},
    {"note": "not a message"}
  ]
}
"""


def write_document(tmp_path: Path, text: str = DOCUMENT, name: str = "chat.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")  # the leading U+FEFF becomes a UTF-8 BOM
    return path


def test_json_document(tmp_path: Path) -> None:
    path = write_document(tmp_path)
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    parsed = parse("generic", path)
    assert parsed.info.session_id == "chat-42"
    assert parsed.info.title == "Démo"
    assert parsed.info.started_at == "2026-01-01T00:00:00Z"
    roles = [m.role for m in parsed.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert parsed.messages[1].content == "héllo \x00 wörld"
    assert parsed.messages[2].content == '[tool_use f] {"x": 1}'
    assert parsed.messages[3].content == "[tool_result] 42"
    assert parsed.messages[4].content == 'done\n\n[tool_use g] {"q": "ü"}'
    assert parsed.messages[5].metadata == {"native_role": "user"}

    # Each element's native record is its exact source text, at its byte offset.
    for record in parsed.records:
        assert record.byte_offset is not None and record.line_no is not None
        raw = record.raw.encode("utf-8")
        assert data[record.byte_offset : record.byte_offset + len(raw)] == raw
        assert data.split(b"\n")[record.line_no - 1].lstrip().startswith(raw[:20])
    assert [r.record_type for r in parsed.standalone] == ["unknown"]
    problems = {p.line_no: p.error for p in parsed.problems}
    assert "element 6 is a int" in problems[13]
    assert "'role'" in problems[14]
    keys = [m.ingest_key for m in parsed.messages]
    assert all(k is not None and k.startswith(f"I{i}:") for i, k in enumerate(keys))
    assert parsed.progress.end_offset == len(data)
    assert parsed.progress.last_key is not None and parsed.progress.last_key.startswith("I8:")

    # Already read whole: resuming at the end yields only the session.
    again = parse("generic", path, start_offset=len(data), start_line=parsed.progress.end_line)
    assert again.events == [] and again.info == parsed.info
    assert again.progress.last_key == parsed.progress.last_key


def test_json_plain_list_and_stable_keys(tmp_path: Path) -> None:
    path = tmp_path / "plain.json"
    path.write_text(
        json.dumps([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    )
    first = parse("generic", path)
    assert first.info.session_id.startswith("plain-")
    assert [m.content for m in first.messages] == ["a", "b"]
    # Re-reading (e.g. after the document was rewritten) gives the same keys.
    assert [m.ingest_key for m in parse("generic", path).messages] == [
        m.ingest_key for m in first.messages
    ]


def test_broken_json_document(tmp_path: Path) -> None:
    path = write_document(tmp_path, DOCUMENT[:300])
    growing = parse("generic", path, final=False)
    assert growing.events == [] and growing.progress.pending_tail
    assert growing.progress.end_offset == 0
    done = parse("generic", path, final=True)
    assert len(done.problems) == 1
    problem = done.problems[0]
    assert problem.error.startswith("malformed JSON document")
    assert problem.line_no > 1
    assert problem.raw == path.read_bytes()
    assert done.progress.end_offset == path.stat().st_size


def test_document_without_messages(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"conversations": []}')
    parsed = parse("generic", path)
    assert [p.error for p in parsed.problems] == [
        "JSON document is neither a list of messages nor an object with a 'messages' list"
    ]


def test_oversized_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generic, "MAX_DOCUMENT_BYTES", 100)
    path = write_document(tmp_path)
    parsed = parse("generic", path)
    assert len(parsed.problems) == 1
    assert "over the 100-byte limit" in parsed.problems[0].describe()
    assert parsed.problems[0].describe().startswith(f"{path}:1:")


def test_locomo_is_not_a_message_list(data_dir: Path) -> None:
    parsed = parse("generic", data_dir / "locomo" / "locomo10.json")
    assert parsed.messages == [] and parsed.problems == []
    assert len(parsed.standalone) == 10  # README: 10 conversations


def test_jsonl_with_session_header(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    rows: list[dict[str, Any]] = [
        {"session_id": "s-9", "type": "session"},
        {"role": "user", "content": "q", "timestamp": "2026-02-02T00:00:00Z"},
        {"role": "assistant", "content": "a"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    parsed = parse("generic", path)
    assert parsed.info.session_id == "s-9"
    assert parsed.info.started_at == "2026-02-02T00:00:00Z"
    assert [r.record_type for r in parsed.standalone] == ["session"]
    assert [m.content for m in parsed.messages] == ["q", "a"]
    assert_every_line_once(parsed, 3)


# ------------------------------------------------------------------ message_from_dict


def test_openai_shapes() -> None:
    message = message_from_dict(
        {
            "role": "assistant",
            "content": "let me look",
            "reasoning_content": "thinking...",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
            ],
            "name": "bot",
        }
    )
    assert [p.kind for p in message.parts] == ["reasoning", "text", "tool_use"]
    assert message.content == "thinking...\n\nlet me look\n\n[tool_use read] {}"
    assert message.parts[2].tool_call_id == "c1"
    assert message.metadata == {"name": "bot"}

    tool = message_from_dict(
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [{"type": "text", "text": "line 1"}, {"type": "text", "text": "line\n2"}],
        }
    )
    assert tool.role == "tool"
    assert tool.parts[0].text == "line 1\nline\n2"
    assert tool.parts[0].metadata == {"text_block_lengths": [6, 6]}

    dev = message_from_dict({"role": "developer", "content": "rules"})
    assert dev.role == "system" and dev.content == "rules"
    assert dev.metadata == {"native_role": "developer"}

    image = message_from_dict(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        }
    )
    assert image.content == "see\n\n[image image/png]"
    assert image.parts[1].metadata is not None
    assert image.parts[1].metadata["image_url"]["url"].endswith("AAAA")

    legacy = message_from_dict(
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}
    )
    assert legacy.parts[0].kind == "tool_use" and legacy.parts[0].tool_name == "f"


def test_plain_string_is_kept_exactly() -> None:
    text = "  spaced\r\n\ttext \u0000 with NUL and emoji 🎉  "
    message = message_from_dict({"role": "user", "content": text}, ingest_key="k1")
    assert message.content == text
    assert message.ingest_key == "k1"
    assert [p.text for p in message.parts] == [text]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"content": "x"}, "'role'"),
        ({"role": "robot", "content": "x"}, "'role'"),
        ({"role": "user", "content": 3.5}, "'content'"),
        ({"role": "user", "content": {"a": 1}}, "'content'"),
        ({"role": "assistant", "tool_calls": {"id": 1}}, "'tool_calls'"),
    ],
)
def test_unusable_messages_raise(data: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        message_from_dict(data)
