"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``.

Every line is ``{"timestamp", "type", "payload"}``. Each ``response_item`` is one
message (Codex already writes one item per model output: message, reasoning,
tool call, tool output); ``event_msg`` and ``turn_context`` lines are UI and
bookkeeping, kept as native records. Lines have no ids, so keys are positional.

Two wrinkles handled here:
- Some rollouts (Codex Desktop) record the user's prompt only as an
  ``event_msg``/``user_message``; when the line just before it is not the same
  prompt as a user ``response_item``, the event becomes the user message.
- Legacy rollouts (early 2025) have no envelope: a first line with ``id`` and
  ``timestamp`` and then bare response items.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lossless.models import NewMessage, NewPart, Role
from lossless.sources.base import (
    LineError,
    ParseEvent,
    ParseProblem,
    ParseProgress,
    RawLine,
    SessionInfo,
    SourceKind,
    decode_json_line,
    line_key,
)
from lossless.sources.lines import (
    ScannedLine,
    check_readable,
    head_records,
    mark_consumed,
    native_record,
    scan_lines,
    start_progress,
    str_field,
)
from lossless.sources.parts import block_to_part, flatten_tool_result, render_content

__all__ = ["CodexParser", "codex_session_info"]

_UUID_TAIL = re.compile(
    r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
)
# Bare response items of legacy rollouts, recognised by their own ``type``.
_LEGACY_ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)
_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "developer": "system",
    "system": "system",
    "tool": "tool",
}


def _session_id_from_name(path: Path) -> str:
    match = _UUID_TAIL.search(path.stem)
    return match.group(1) if match else path.stem


def _find_parent_thread(value: object) -> str | None:
    """``parent_thread_id`` anywhere inside ``session_meta.source`` (sub-agent threads)."""
    if isinstance(value, dict):
        found = value.get("parent_thread_id")
        if isinstance(found, str) and found:
            return found
        for inner in value.values():
            found = _find_parent_thread(inner)
            if found:
                return found
    return None


def codex_session_info(path: Path) -> SessionInfo:
    """Session facts from the file's ``session_meta`` (read from the head, so a
    resumed parse reports the same), falling back to the file name."""
    meta_payload: dict[str, Any] | None = None
    first_ts: str | None = None
    cwd: str | None = None
    for data in head_records(path, limit=16):
        ts = data.get("timestamp")
        if first_ts is None and isinstance(ts, str):
            first_ts = ts
        payload = data.get("payload")
        if data.get("type") == "session_meta" and isinstance(payload, dict):
            meta_payload = payload
            break
        if "type" not in data and isinstance(data.get("id"), str):
            meta_payload = data  # legacy rollout header
            break
        if data.get("type") == "turn_context" and isinstance(payload, dict) and cwd is None:
            cwd_value = payload.get("cwd")
            cwd = cwd_value if isinstance(cwd_value, str) else None
    if meta_payload is None:
        return SessionInfo(
            client="codex",
            session_id=_session_id_from_name(path),
            project=cwd,
            started_at=first_ts,
        )
    metadata = {
        key: meta_payload[key]
        # forked_from_id: a thread forked from another (its history copied in).
        for key in (
            "originator",
            "cli_version",
            "source",
            "model_provider",
            "git",
            "forked_from_id",
        )
        if meta_payload.get(key) is not None
    }
    session_id = meta_payload.get("id")
    project = meta_payload.get("cwd")
    started = meta_payload.get("timestamp")
    return SessionInfo(
        client="codex",
        session_id=session_id
        if isinstance(session_id, str) and session_id
        else _session_id_from_name(path),
        project=project if isinstance(project, str) else cwd,
        parent_session_id=_find_parent_thread(meta_payload.get("source")),
        started_at=started if isinstance(started, str) else first_ts,
        metadata=metadata,
    )


def _raw_key(raw: RawLine) -> str:
    return line_key(raw.line_no, raw.data)


def _user_item_texts(data: dict[str, Any] | None) -> tuple[str, ...] | None:
    """Texts of a user ``message`` response item (for user_message dedupe)."""
    if data is None:
        return None
    payload = data.get("payload") if "payload" in data else data
    if not isinstance(payload, dict):
        return None
    if payload.get("type") != "message" or payload.get("role") != "user":
        return None
    content = payload.get("content")
    if isinstance(content, str):
        return (content,)
    if not isinstance(content, list):
        return None
    texts = tuple(
        b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
    )
    return (*texts, "".join(texts), "\n".join(texts))


def _tool_output(payload: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    output = payload.get("output")
    if isinstance(output, str):
        return output, None
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return output["content"], {"output": output}
    if isinstance(output, list):
        text, _ = flatten_tool_result(output)
        return text, {"output": output}
    return json.dumps(output, ensure_ascii=False), {"output": output}


def _extras(payload: dict[str, Any], *consumed: str) -> dict[str, Any] | None:
    skip = {"type", *consumed}
    extras = {k: v for k, v in payload.items() if k not in skip}
    return extras or None


class CodexParser:
    """Parser for Codex CLI / Codex Desktop rollout files."""

    kind: SourceKind = "codex"

    def parse(
        self, path: Path, *, start_offset: int = 0, start_line: int = 0, final: bool = True
    ) -> tuple[Iterator[ParseEvent], ParseProgress]:
        check_readable(path)
        progress, before = start_progress(path, start_offset, start_line, _raw_key)
        return self._events(path, start_offset, start_line, progress, before), progress

    def _events(
        self,
        path: Path,
        start_offset: int,
        start_line: int,
        progress: ParseProgress,
        before: bytes | None,
    ) -> Iterator[ParseEvent]:
        yield codex_session_info(path)
        source = str(path)
        previous_user: tuple[str, ...] | None = None
        if before is not None:
            try:
                previous_user = _user_item_texts(
                    decode_json_line(RawLine(start_line, 0, before, True))
                )
            except LineError:
                previous_user = None
        for line in scan_lines(path, start_offset, start_line, progress):
            key = line.line_key
            event: ParseEvent
            if line.problem is not None:
                event = line.problem
                previous_user = None
            else:
                event = self._line_event(line, key, source, previous_user)
                previous_user = _user_item_texts(line.data)
            mark_consumed(progress, line, key)
            yield event

    def _line_event(
        self,
        line: ScannedLine,
        key: str,
        source: str,
        previous_user: tuple[str, ...] | None,
    ) -> ParseEvent:
        data = line.data
        assert data is not None
        rtype = data.get("type")
        payload = data.get("payload")
        if "payload" not in data and isinstance(rtype, str) and rtype in _LEGACY_ITEM_TYPES:
            rtype, payload = "response_item", data
        record = native_record(line, key, rtype, source)

        def problem(error: str) -> ParseProblem:
            return ParseProblem(
                source, line.raw.line_no, line.raw.byte_offset, error, line.raw.data
            )

        if rtype not in ("response_item", "compacted", "event_msg"):
            return record
        if not isinstance(payload, dict):
            if rtype == "event_msg":
                return record
            return problem(f"{rtype} record: field 'payload' must be an object")
        coerced: list[str] = []
        created = str_field(data, "timestamp", coerced)
        meta: dict[str, Any] = {}
        role: Role
        plain: str | None = None
        if rtype == "event_msg":
            message = payload.get("message")
            if payload.get("type") != "user_message" or not isinstance(message, str):
                return record
            if previous_user is not None and message in previous_user:
                return record  # mirrors the user response_item just before it
            role = "user"
            parts = [NewPart("text", text=message)]
            images = payload.get("images")
            for url in images if isinstance(images, list) else []:
                parts.append(block_to_part({"type": "input_image", "image_url": url}))
            local = payload.get("local_images")
            for image_path in local if isinstance(local, list) else []:
                parts.append(NewPart("image", metadata={"local_path": image_path}))
            plain = message if len(parts) == 1 else None
            meta["from_event"] = "user_message"
        elif rtype == "compacted":
            message = payload.get("message")
            if not isinstance(message, str):
                return problem("compacted record: field 'payload.message' must be a string")
            role, parts, plain = "system", [NewPart("text", text=message)], message
            meta["compacted"] = True
        else:
            found = self._response_item(payload, meta)
            if isinstance(found, str):
                return problem(found)
            role, parts, plain = found
        if coerced:
            meta["coerced"] = coerced
        return NewMessage(
            role=role,
            content=plain if plain is not None else render_content(parts),
            parts=tuple(parts),
            created_at=created,
            ingest_key=key,
            metadata=meta,
            native_records=(record,),
        )

    def _response_item(
        self, payload: dict[str, Any], meta: dict[str, Any]
    ) -> tuple[Role, list[NewPart], str | None] | str:
        """(role, parts, plain string content or None) of one item, or an error."""
        ptype = payload.get("type")
        meta["item_type"] = ptype if isinstance(ptype, str) else "unknown"
        if ptype == "message":
            native_role = payload.get("role")
            role = _ROLES.get(native_role) if isinstance(native_role, str) else None
            if role is None:
                return f"message item: field 'payload.role' has unsupported value {native_role!r}"
            if native_role != role:
                meta["native_role"] = native_role
            for field_name in ("phase", "id", "status", "end_turn"):
                if payload.get(field_name) is not None:
                    meta[field_name] = payload[field_name]
            content = payload.get("content")
            if isinstance(content, str):
                return role, [NewPart("text", text=content)], content
            if not isinstance(content, list):
                return (
                    "message item: field 'payload.content' must be a list or a string,"
                    f" got {type(content).__name__}"
                )
            return role, [block_to_part(b) for b in content], None
        if ptype == "reasoning":
            summary = payload.get("summary")
            texts = [
                s["text"]
                for s in (summary if isinstance(summary, list) else [])
                if isinstance(s, dict) and isinstance(s.get("text"), str)
            ]
            part_meta: dict[str, Any] = {"encrypted": bool(payload.get("encrypted_content"))}
            content = payload.get("content")
            if content is not None:
                # Open reasoning text (when a provider returns it) is kept for rebuild.
                part_meta["content"] = content
            return (
                "assistant",
                [NewPart("reasoning", text="\n\n".join(texts), metadata=part_meta)],
                None,
            )
        if ptype in ("function_call", "custom_tool_call", "local_shell_call"):
            name = payload.get("name")
            if ptype == "local_shell_call":
                name = "local_shell"
                body: object = payload.get("action")
            else:
                body = payload.get("arguments" if ptype == "function_call" else "input")
            if not isinstance(name, str):
                return f"{ptype} item: field 'payload.name' must be a string"
            text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
            call_id = payload.get("call_id")
            part = NewPart(
                "tool_use",
                text=text,
                tool_name=name,
                tool_call_id=call_id if isinstance(call_id, str) else None,
                metadata=_extras(payload, "name", "arguments", "input", "call_id", "action"),
            )
            return "assistant", [part], None
        if ptype in ("function_call_output", "custom_tool_call_output"):
            call_id = payload.get("call_id")
            text, out_meta = _tool_output(payload)
            extra = _extras(payload, "call_id", "output") or {}
            part = NewPart(
                "tool_result",
                text=text,
                tool_call_id=call_id if isinstance(call_id, str) else None,
                metadata={**extra, **(out_meta or {})} or None,
            )
            return "tool", [part], None
        if ptype == "web_search_call":
            # Server-side tool: no call_id and no output item follows.
            part = NewPart(
                "tool_use",
                text=json.dumps(payload.get("action"), ensure_ascii=False),
                tool_name="web_search",
                metadata=_extras(payload, "action"),
            )
            return "assistant", [part], None
        return "assistant", [NewPart("other", metadata={"block": payload})], None
