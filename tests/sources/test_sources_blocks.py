"""Content blocks -> parts, the content rendering rule, and format details."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sources_helpers import assert_every_line_once, parse

from lossless.models import NewMessage, NewPart
from lossless.sources import block_to_part, flatten_tool_result, render_content, tool_pairing

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def test_block_kinds() -> None:
    text = block_to_part({"type": "text", "text": "hi", "citations": [1]})
    assert text == NewPart("text", text="hi", metadata={"citations": [1]})
    thinking = block_to_part({"type": "thinking", "thinking": "hmm", "signature": "sig"})
    assert thinking == NewPart("reasoning", text="hmm", metadata={"signature": "sig"})
    redacted = block_to_part({"type": "redacted_thinking", "data": "opaque"})
    assert redacted == NewPart(
        "reasoning", text="", metadata={"type": "redacted_thinking", "data": "opaque"}
    )
    use = block_to_part({"type": "tool_use", "id": "t1", "name": "Bash", "input": {"c": "ls ü"}})
    assert use == NewPart("tool_use", text='{"c": "ls ü"}', tool_name="Bash", tool_call_id="t1")
    image = block_to_part(
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    )
    assert image.kind == "image" and image.text is None
    assert image.metadata is not None
    assert image.metadata["media_type"] == "image/png"
    assert image.metadata["source"]["data"] == PNG  # kept, but never in text
    doc = block_to_part(
        {
            "type": "document",
            "title": "notes",
            "source": {"type": "text", "media_type": "text/plain", "data": "body"},
        }
    )
    assert doc.kind == "file" and doc.text == "body"
    unknown = block_to_part({"type": "server_tool_use", "id": "s", "name": "web_search"})
    assert unknown.kind == "other"
    assert unknown.metadata == {
        "block": {"type": "server_tool_use", "id": "s", "name": "web_search"}
    }


def test_tool_result_shapes() -> None:
    assert flatten_tool_result("plain") == ("plain", {})
    text, meta = flatten_tool_result(
        [{"type": "text", "text": "a\nb"}, {"type": "text", "text": "c"}]
    )
    assert text == "a\nb\nc"
    lengths = meta["text_block_lengths"]
    rebuilt, pos = [], 0
    for n in lengths:  # the exact blocks come back from text + lengths
        rebuilt.append(text[pos : pos + n])
        pos += n + 1
    assert rebuilt == ["a\nb", "c"]
    blocks = [
        {"type": "text", "text": "shot"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
    ]
    text, meta = flatten_tool_result(blocks)
    assert text == "shot\n[image]"
    assert PNG not in text and meta == {"content": blocks}
    result = block_to_part(
        {"type": "tool_result", "tool_use_id": "t1", "content": blocks, "is_error": True}
    )
    assert result.tool_call_id == "t1"
    assert result.metadata == {"is_error": True, "content": blocks}
    missing = block_to_part({"type": "tool_result", "tool_use_id": "t2"})
    assert missing.text == "" and missing.metadata == {"content_missing": True}


def test_render_rules() -> None:
    parts = [
        NewPart("reasoning", text=""),
        NewPart("reasoning", text="why"),
        NewPart("text", text="answer"),
        NewPart("tool_use", text="{}", tool_name="Read"),
        NewPart("tool_result", text="out"),
        NewPart("tool_result", text=""),
        NewPart("image", metadata={"media_type": "image/jpeg"}),
        NewPart("image"),
        NewPart("file", text="body", metadata={"title": "notes"}),
        NewPart("other", metadata={"block": {"type": "mystery"}}),
    ]
    assert render_content(parts) == "\n\n".join(
        [
            "why",
            "answer",
            "[tool_use Read] {}",
            "[tool_result] out",
            "[tool_result]",
            "[image image/jpeg]",
            "[image]",
            "[file notes] body",
            "[mystery]",
        ]
    )


def test_tool_pairing_reports_both_directions() -> None:
    def message(*parts: NewPart) -> NewMessage:
        return NewMessage(role="assistant", content="", parts=parts)

    messages = [
        message(NewPart("tool_result", tool_call_id="early")),
        message(NewPart("tool_use", tool_call_id="a"), NewPart("tool_use", tool_call_id="b")),
        message(NewPart("tool_result", tool_call_id="a")),
    ]
    pairing = tool_pairing(messages)
    assert pairing.unanswered == ("b",) and pairing.orphans == ("early",)
    assert not pairing.ok


def lines_file(tmp_path: Path, records: list[dict[str, Any]], name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_claude_record_details(tmp_path: Path) -> None:
    base = {"sessionId": "s", "cwd": "/w", "version": "2.1.40", "gitBranch": "main"}
    records: list[dict[str, Any]] = [
        {"type": "summary", "summary": "Old title", "leafUuid": "x"},
        {
            **base,
            "type": "system",
            "subtype": "local_command",
            "uuid": "y1",
            "content": "<command-name>/model</command-name>",
            "timestamp": "T1",
        },
        {
            **base,
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "y2",
            "content": "Conversation compacted",
            "logicalParentUuid": "y1",
        },
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "Summary of the conversation"},
        },
        {
            **base,
            "type": "user",
            "uuid": "u2",
            "isMeta": True,
            "message": {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                    },
                ],
            },
        },
        {**base, "type": "system", "subtype": "turn_duration", "uuid": "y3", "durationMs": 5},
        {**base, "type": "custom-title", "customTitle": "Mine"},
        {**base, "type": "brand-new-record", "uuid": "n1"},
    ]
    parsed = parse("claude-code", lines_file(tmp_path, records))
    assert_every_line_once(parsed, len(records))
    assert parsed.info.started_at == "T1"
    assert parsed.info.metadata == {"version": "2.1.40", "git_branch": "main"}
    local, boundary, summary, meta = parsed.messages
    assert local.role == "system" and local.content == "<command-name>/model</command-name>"
    assert local.metadata == {"uuid": "y1", "subtype": "local_command"}
    assert boundary.metadata is not None
    assert boundary.metadata["compact_boundary"] == {}  # no compactMetadata given
    assert boundary.metadata["logical_parent_uuid"] == "y1"
    assert summary.metadata == {"uuid": "u1", "is_compact_summary": True}
    assert meta.content == "look\n\n[image image/png]" and meta.metadata is not None
    assert meta.metadata["is_meta"] is True
    assert [r.record_type for r in parsed.standalone] == [
        "summary",
        "system",
        "custom-title",
        "brand-new-record",
    ]


def test_claude_merge_across_progress_and_split_by_user(tmp_path: Path) -> None:
    def assistant(uuid: str, msg_id: str, block: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {
            "type": "assistant",
            "uuid": uuid,
            "sessionId": "s",
            "requestId": f"r-{uuid}",
            "message": {
                "id": msg_id,
                "role": "assistant",
                "model": "m",
                "usage": {"n": uuid},
                "content": [block],
            },
            **extra,
        }

    records: list[dict[str, Any]] = [
        {
            "type": "user",
            "uuid": "u0",
            "sessionId": "s",
            "message": {"role": "user", "content": "go"},
        },
        assistant("a1", "m1", {"type": "thinking", "thinking": "plan", "signature": "s1"}),
        {"type": "progress", "uuid": "p1", "sessionId": "s", "data": {"type": "hook_progress"}},
        assistant("a2", "m1", {"type": "text", "text": "on it"}),
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
        assistant("a3", "m1", {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}),
        {
            "type": "user",
            "uuid": "u1",
            "sessionId": "s",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
        },
        assistant("a4", "m1", {"type": "text", "text": "done"}),
        assistant("a5", "m2", {"type": "text", "text": "next"}),
    ]
    parsed = parse("claude-code", lines_file(tmp_path, records))
    kinds = [type(e).__name__ for e in parsed.events]
    # The group's message comes first, then the records held while it was open.
    assert kinds == [
        "NewMessage",
        "NewMessage",
        "NewNativeRecord",
        "NewNativeRecord",
        "NewMessage",
        "NewMessage",
        "NewMessage",
    ]
    first, merged, result, tail, last = parsed.messages
    assert first.content == "go"
    assert merged.ingest_key == "a1"
    assert [r.native_key for r in merged.native_records] == ["a1", "a2", "a3"]
    assert [p.kind for p in merged.parts] == ["reasoning", "text", "tool_use"]
    assert merged.content == "plan\n\non it\n\n[tool_use Bash] {}"
    assert merged.metadata is not None
    assert merged.metadata["usage"] == {"n": "a3"} and merged.metadata["request_id"] == "r-a3"
    assert merged.metadata["uuids"] == ["a1", "a2", "a3"]
    assert result.role == "tool"
    # Same message.id after a tool result: a new message (keeps use before result).
    assert tail.ingest_key == "a4" and tail.metadata is not None
    assert tail.metadata["message_id"] == "m1"
    assert last.ingest_key == "a5"
    assert tool_pairing(parsed.messages).ok


def test_codex_legacy_rollout(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"id": "0194-legacy", "timestamp": "2025-03-01T00:00:00Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
        {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"command":["ls"]}',
            "call_id": "c1",
        },
        {"type": "function_call_output", "call_id": "c1", "output": '{"output":"a"}'},
        {
            "type": "local_shell_call",
            "call_id": "c2",
            "action": {"command": ["pwd"]},
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "c2", "output": "/w"},
    ]
    path = lines_file(tmp_path, records, "rollout-2025-03-01T00-00-00-0194-legacy.jsonl")
    parsed = parse("codex", path)
    assert parsed.info.session_id == "0194-legacy"
    assert parsed.info.started_at == "2025-03-01T00:00:00Z"
    assert_every_line_once(parsed, len(records))
    assert [m.role for m in parsed.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert parsed.messages[3].parts[0].tool_name == "local_shell"
    assert tool_pairing(parsed.messages).ok


def test_codex_without_session_meta(tmp_path: Path) -> None:
    uuid = "019e0000-1111-7222-8333-444455556666"
    records: list[dict[str, Any]] = [
        {"timestamp": "T0", "type": "turn_context", "payload": {"cwd": "/proj", "model": "m"}},
        {
            "timestamp": "T1",
            "type": "event_msg",
            "payload": {
                "type": "user_message",
                "message": "look",
                "images": ["data:image/png;base64,AAAA"],
            },
        },
        {
            "timestamp": "T2",
            "type": "response_item",
            "payload": {
                "type": "reasoning",
                "summary": [
                    {"type": "summary_text", "text": "a"},
                    {"type": "summary_text", "text": "b"},
                ],
                "encrypted_content": "gAAAA-secret",
            },
        },
        {
            "timestamp": "T3",
            "type": "response_item",
            "payload": {"type": "web_search_call", "status": "completed", "action": {"query": "q"}},
        },
    ]
    path = lines_file(tmp_path, records, f"rollout-2026-01-01T00-00-00-{uuid}.jsonl")
    parsed = parse("codex", path)
    assert parsed.info.session_id == uuid
    assert parsed.info.project == "/proj" and parsed.info.started_at == "T0"
    prompt, reasoning, search = parsed.messages
    assert prompt.role == "user" and prompt.content == "look\n\n[image image/png]"
    assert reasoning.parts[0].text == "a\n\nb" and reasoning.content == "a\n\nb"
    assert reasoning.parts[0].metadata == {"encrypted": True}
    assert search.parts[0].tool_call_id is None
    assert search.content == '[tool_use web_search] {"query": "q"}'


def test_claude_sidechain_detection(tmp_path: Path) -> None:
    def record(n: int, **extra: Any) -> dict[str, Any]:
        return {
            "type": "user",
            "uuid": f"u{n}",
            "sessionId": "parent-1",
            "message": {"role": "user", "content": f"m{n}"},
            **extra,
        }

    # Old layout: an agent file beside the sessions, known only by its records.
    agent = parse(
        "claude-code",
        lines_file(tmp_path, [record(1, isSidechain=True, agentId="a9")], "agent-a9.jsonl"),
    )
    assert agent.info.session_id == "parent-1/agent-a9"
    assert agent.info.parent_session_id == "parent-1" and agent.info.agent_id == "a9"
    # A main transcript with sidechain records later on stays the main session.
    main = parse(
        "claude-code",
        lines_file(
            tmp_path, [record(1), record(2, isSidechain=True, agentId="a9")], "parent-1.jsonl"
        ),
    )
    assert main.info.session_id == "parent-1"
    assert main.info.parent_session_id is None and main.info.agent_id is None
    # In <session>/subagents/ the path decides, even without agentId in records.
    nested = tmp_path / "parent-1" / "subagents"
    nested.mkdir(parents=True)
    sub = parse("claude-code", lines_file(nested, [record(1, isSidechain=True)], "agent-b7.jsonl"))
    assert sub.info.session_id == "parent-1/agent-b7"
    assert sub.info.parent_session_id == "parent-1" and sub.info.agent_id == "b7"
