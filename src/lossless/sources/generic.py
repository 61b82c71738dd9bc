"""Generic message files: OpenAI- or Anthropic-shaped messages.

Accepted files:
- ``.jsonl``: one message object per line (lines without ``role`` are kept as
  native records, e.g. a ``{"session_id": ...}`` header);
- ``.json``: a list of messages, or ``{"messages": [...], "session_id": ...}``.
  A JSON document cannot be read from the middle, so it is always parsed whole
  (up to 256 MiB); keys derived from each element make re-reading idempotent.

``message_from_dict`` is also the converter for messages handed to the engine
by an embedding agent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from lossless.models import NewMessage, NewNativeRecord, NewPart, Role
from lossless.sources.base import (
    ParseEvent,
    ParseProblem,
    ParseProgress,
    RawLine,
    SessionInfo,
    SourceKind,
    line_key,
)
from lossless.sources.lines import (
    check_readable,
    head_records,
    mark_consumed,
    native_record,
    scan_lines,
    start_progress,
)
from lossless.sources.parts import block_to_part, flatten_tool_result, render_content

__all__ = ["MAX_DOCUMENT_BYTES", "GenericParser", "message_from_dict"]

MAX_DOCUMENT_BYTES = 256 * 1024 * 1024

_ROLES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}
_CONSUMED = frozenset(
    {
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "function_call",
        "reasoning_content",
        "created_at",
        "timestamp",
    }
)
_BOM = b"\xef\xbb\xbf"


def _tool_call_part(call: object) -> NewPart:
    """An OpenAI ``tool_calls`` entry (or legacy ``function_call``) as a tool_use part."""
    if not isinstance(call, dict):
        return NewPart("other", metadata={"block": call})
    function = call.get("function", call)
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return NewPart("other", metadata={"block": call})
    arguments = function.get("arguments")
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    call_id = call.get("id")
    extras = {k: v for k, v in call.items() if k not in ("id", "function", "name", "arguments")}
    if extras.get("type") == "function":
        del extras["type"]
    return NewPart(
        "tool_use",
        text=text,
        tool_name=function["name"],
        tool_call_id=call_id if isinstance(call_id, str) else None,
        metadata=extras or None,
    )


def message_from_dict(
    data: Mapping[str, Any],
    *,
    ingest_key: str | None = None,
    native_records: tuple[NewNativeRecord, ...] = (),
) -> NewMessage:
    """Convert one OpenAI- or Anthropic-shaped message dict into a ``NewMessage``.

    Raises ValueError naming the field when the dict is not a usable message.
    Keys that are not mapped onto parts (``name``, ``id``...) go to metadata.
    """
    native_role = data.get("role")
    role = _ROLES.get(native_role) if isinstance(native_role, str) else None
    if role is None:
        raise ValueError(f"field 'role' has unsupported value {native_role!r}")
    content = data.get("content")
    if content is not None and not isinstance(content, str | list):
        raise ValueError(
            f"field 'content' must be a string, a list or null, got {type(content).__name__}"
        )
    tool_calls = data.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, list):
        raise ValueError(f"field 'tool_calls' must be a list, got {type(tool_calls).__name__}")

    parts: list[NewPart] = []
    plain: str | None = None
    reasoning = data.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.append(NewPart("reasoning", text=reasoning))
    call_id = data.get("tool_call_id")
    if role == "tool" and not (
        isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    ):
        # OpenAI tool message: the whole content is the result of one call.
        text, shape = flatten_tool_result(content)
        parts.append(
            NewPart(
                "tool_result",
                text=text,
                tool_call_id=call_id if isinstance(call_id, str) else None,
                metadata=shape or None,
            )
        )
    elif isinstance(content, str):
        parts.append(NewPart("text", text=content))
        plain = content
    elif isinstance(content, list):
        parts.extend(block_to_part(block) for block in content)
    parts.extend(_tool_call_part(call) for call in tool_calls or ())
    if data.get("function_call") is not None:
        parts.append(_tool_call_part(data["function_call"]))
    if plain is not None and len(parts) > 1:
        plain = None
    if role == "user" and parts and all(p.kind == "tool_result" for p in parts):
        role = "tool"

    metadata = {k: v for k, v in data.items() if k not in _CONSUMED}
    if native_role != role:
        metadata["native_role"] = native_role
    if isinstance(call_id, str) and role == "tool" and not any(p.tool_call_id for p in parts):
        metadata["tool_call_id"] = call_id
    created: str | None = None
    for key in ("created_at", "timestamp"):
        value = data.get(key)
        if isinstance(value, str):
            created = value
            break
        if value is not None:
            metadata.setdefault("coerced", []).append(
                f"{key}: expected a string, got {type(value).__name__}"
            )
    return NewMessage(
        role=role,
        content=plain if plain is not None else render_content(parts),
        parts=tuple(parts),
        created_at=created,
        ingest_key=ingest_key,
        metadata=metadata or None,
        native_records=native_records,
    )


def file_session_id(path: Path) -> str:
    """The session id of a message-list file that names none itself.

    The file name alone would merge ``a/talk.json`` and ``b/talk.json`` into
    one conversation, interleaving their messages; the name stays readable and
    a hash of the file's absolute path tells the files apart. The same file
    imported again gets the same id (and its import cursor finds the
    conversation even when it was stored under the bare name before).
    """
    resolved = str(path.expanduser().resolve())
    return f"{path.stem}-{hashlib.sha256(resolved.encode('utf-8')).hexdigest()[:10]}"


def _raw_key(raw: RawLine) -> str:
    return line_key(raw.line_no, raw.data)


def _created_at(data: object) -> str | None:
    if isinstance(data, dict):
        for key in ("created_at", "timestamp"):
            if isinstance(data.get(key), str):
                return str(data[key])
    return None


# --------------------------------------------------------------------------- .json


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\n\r":
        i += 1
    return i


def _array_items(
    text: str, i: int, decoder: json.JSONDecoder
) -> tuple[list[tuple[int, int, object]], int]:
    """(start, end, value) of each element of the array opening at ``text[i]``."""
    items: list[tuple[int, int, object]] = []
    i = _skip_ws(text, i + 1)
    while text[i] != "]":
        value, end = decoder.raw_decode(text, i)
        items.append((i, end, value))
        i = _skip_ws(text, end)
        if text[i] == ",":
            i = _skip_ws(text, i + 1)
    return items, i + 1


def _document_items(
    text: str,
) -> tuple[list[tuple[int, int, object]] | None, dict[str, Any]]:
    """The message elements (with their character spans) and the other top-level keys.

    Walks an already validated document with ``raw_decode`` so each element's
    exact source text can be kept as its native record.
    """
    decoder = json.JSONDecoder()
    i = _skip_ws(text, 0)
    if text[i] == "[":
        return _array_items(text, i, decoder)[0], {}
    if text[i] != "{":
        return None, {}
    header: dict[str, Any] = {}
    items: list[tuple[int, int, object]] | None = None
    i = _skip_ws(text, i + 1)
    while text[i] != "}":
        key, i = decoder.raw_decode(text, i)
        i = _skip_ws(text, _skip_ws(text, i) + 1)  # past ':'
        if key == "messages" and text[i] == "[":
            items, i = _array_items(text, i, decoder)
        else:
            header[key], i = decoder.raw_decode(text, i)
        i = _skip_ws(text, i)
        if text[i] == ",":
            i = _skip_ws(text, i + 1)
    return items, header


def _line_count(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


class GenericParser:
    """Parser for OpenAI/Anthropic-shaped message lists (``.json`` or ``.jsonl``)."""

    kind: SourceKind = "generic"

    def parse(
        self, path: Path, *, start_offset: int = 0, start_line: int = 0, final: bool = True
    ) -> tuple[Iterator[ParseEvent], ParseProgress]:
        check_readable(path)
        if path.suffix.lower() == ".json":
            progress = ParseProgress(end_offset=start_offset, end_line=start_line)
            return self._document_events(path, start_offset, final, progress), progress
        progress, _ = start_progress(path, start_offset, start_line, _raw_key)
        return self._line_events(path, start_offset, start_line, progress), progress

    # -- .jsonl

    def _line_events(
        self, path: Path, start_offset: int, start_line: int, progress: ParseProgress
    ) -> Iterator[ParseEvent]:
        session_id = file_session_id(path)
        started: str | None = None
        for head in head_records(path, limit=8):
            if "role" not in head and isinstance(head.get("session_id"), str):
                session_id = head["session_id"]
            started = started or _created_at(head)
        yield SessionInfo(client="generic", session_id=session_id, started_at=started)
        source = str(path)
        for line in scan_lines(path, start_offset, start_line, progress):
            key = line.line_key
            event: ParseEvent
            if line.problem is not None:
                event = line.problem
            else:
                data = line.data
                assert data is not None
                if "role" not in data:
                    event = native_record(line, key, data.get("type"), source)
                else:
                    record = native_record(line, key, "message", source)
                    try:
                        event = message_from_dict(data, ingest_key=key, native_records=(record,))
                    except ValueError as exc:
                        event = ParseProblem(
                            source, line.raw.line_no, line.raw.byte_offset, str(exc), line.raw.data
                        )
            mark_consumed(progress, line, key)
            yield event

    # -- .json

    def _document_events(
        self, path: Path, start_offset: int, final: bool, progress: ParseProgress
    ) -> Iterator[ParseEvent]:
        source = str(path)
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            yield SessionInfo(client="generic", session_id=file_session_id(path))
            progress.end_offset = size
            yield ParseProblem(
                source,
                1,
                0,
                f"JSON document is {size} bytes, over the {MAX_DOCUMENT_BYTES}-byte limit"
                " (convert it to JSONL, one message per line)",
                b"",
            )
            return
        data = path.read_bytes()
        found = self._document(source, file_session_id(path), data)
        if found is None:
            if final:
                found = self._broken_document(source, file_session_id(path), data)
            else:
                progress.pending_tail = True  # probably still being written
                yield SessionInfo(client="generic", session_id=file_session_id(path))
                return
        info, events, last_key = found
        progress.end_offset = len(data)
        progress.end_line = _line_count(data)
        progress.last_key = last_key
        progress.last_sha256 = hashlib.sha256(data).hexdigest()
        yield info
        if start_offset > 0 and start_offset == len(data):
            # Read whole before. An edited document changes size or anchor,
            # and the caller then re-reads it from 0.
            return
        yield from events

    def _broken_document(
        self, source: str, stem: str, data: bytes
    ) -> tuple[SessionInfo, list[ParseEvent], str | None]:
        bom = len(_BOM) if data.startswith(_BOM) else 0
        try:
            text = data[bom:].decode("utf-8")
            json.loads(text)
        except UnicodeDecodeError as exc:
            offset = bom + exc.start
            line_no = data.count(b"\n", 0, offset) + 1
            error = f"JSON document is not valid UTF-8 (byte {offset})"
        except json.JSONDecodeError as exc:
            line_no = exc.lineno
            offset = bom + len(text[: exc.pos].encode("utf-8"))
            error = f"malformed JSON document: {exc.msg} at line {exc.lineno} column {exc.colno}"
        except (ValueError, RecursionError) as exc:
            line_no, offset = 1, 0
            error = f"JSON document cannot be decoded: {exc or 'nested too deeply'}"
        else:
            line_no, offset = 1, 0
            error = (
                "JSON document is neither a list of messages nor an object with a 'messages' list"
            )
        info = SessionInfo(client="generic", session_id=stem)
        return info, [ParseProblem(source, line_no, offset, error, data)], None

    def _document(
        self, source: str, stem: str, data: bytes
    ) -> tuple[SessionInfo, list[ParseEvent], str | None] | None:
        """SessionInfo, events and last key of a well-formed document, else None."""
        bom = len(_BOM) if data.startswith(_BOM) else 0
        try:
            text = data[bom:].decode("utf-8")
            json.loads(text)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None
        items, header = _document_items(text)
        if items is None:
            return None
        session_id = header.get("session_id")
        title = header.get("title")
        project = header.get("project", header.get("cwd"))
        info = SessionInfo(
            client="generic",
            session_id=session_id if isinstance(session_id, str) and session_id else stem,
            project=project if isinstance(project, str) else None,
            started_at=next((c for _, _, v in items if (c := _created_at(v))), None),
            title=title if isinstance(title, str) else None,
        )
        events: list[ParseEvent] = []
        last_key: str | None = None
        char_pos, byte_pos, line_no = 0, bom, 1
        for index, (start, end, value) in enumerate(items):
            byte_pos += len(text[char_pos:start].encode("utf-8"))
            line_no += text.count("\n", char_pos, start)
            char_pos = start
            raw = text[start:end]
            raw_bytes = raw.encode("utf-8")
            key = f"I{index}:{hashlib.sha256(raw_bytes).hexdigest()[:16]}"
            last_key = key
            if not isinstance(value, dict):
                error = f"element {index} is a {type(value).__name__}, not a message object"
                events.append(ParseProblem(source, line_no, byte_pos, error, raw_bytes))
                continue
            record = NewNativeRecord(
                native_key=key,
                record_type="message" if "role" in value else str(value.get("type") or "unknown"),
                raw=raw,
                source_path=source,
                line_no=line_no,
                byte_offset=byte_pos,
            )
            if "role" not in value:
                events.append(record)
                continue
            try:
                events.append(message_from_dict(value, ingest_key=key, native_records=(record,)))
            except ValueError as exc:
                events.append(ParseProblem(source, line_no, byte_pos, str(exc), raw_bytes))
        return info, events, last_key
