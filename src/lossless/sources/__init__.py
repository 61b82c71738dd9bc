"""Transcript sources: parsers for Claude Code, Codex CLI and generic message files.

Besides ``detect_kind``/``parser_for`` this module holds what every parser shares,
so the three formats behave the same way:

- ``scan_lines``: file -> decoded lines or ``ParseProblem``s, with the pending-tail
  rule and over-long line handling;
- ``block_to_part``: one Anthropic / OpenAI / Codex content block -> ``NewPart``;
- ``render_content``: the single rule that turns parts into a message's plain text.

What every parser guarantees (tested in tests/sources):

- ``parse()`` raises the OSError itself when the file cannot be opened; the
  event stream then never fails on I/O of the file's lines.
- Exactly one ``SessionInfo``, first, derived from the head of the file (so a
  resumed parse reports the same session); empty files fall back to the name.
- Every line becomes exactly one record (inside a message or standalone) or one
  ``ParseProblem``, or is the pending tail; nothing raises out of the iterator.
- While iterating, ``progress`` covers exactly the lines of the events yielded
  so far; on resume (``start_offset > 0``) ``last_key``/``last_sha256`` start
  as the anchor of the line before the offset.
- Parsing in pieces (``final=False`` while the file grows, then resuming at
  ``end_offset``/``end_line``) yields the same events as one parse.

The parser modules import from here, so the parsers themselves are imported
lazily in ``parser_for`` (no import cycle).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lossless.models import NewMessage, NewNativeRecord, NewPart
from lossless.sources import base
from lossless.sources.base import (
    LineError,
    ParseProblem,
    ParseProgress,
    Parser,
    RawLine,
    SourceKind,
    decode_json_line,
    iter_lines,
)

__all__ = [
    "ScannedLine",
    "ToolPairing",
    "block_to_part",
    "check_readable",
    "detect_kind",
    "flatten_tool_result",
    "head_records",
    "line_before",
    "mark_consumed",
    "native_record",
    "parser_for",
    "render_content",
    "render_part",
    "scan_lines",
    "start_progress",
    "str_field",
    "tool_pairing",
]

# Bytes of an over-long line kept in its ParseProblem; the rest is unusable anyway.
PROBLEM_SAMPLE_BYTES = 1024 * 1024


# --------------------------------------------------------------------------- lines


@dataclass(frozen=True, slots=True)
class ScannedLine:
    """One line of a transcript: either decoded (``data``/``text``) or a ``problem``."""

    raw: RawLine
    end_offset: int
    sha256: str
    data: dict[str, Any] | None = None
    text: str | None = None
    problem: ParseProblem | None = None

    @property
    def line_key(self) -> str:
        # Same value as base.line_key(line_no, data), but also right for over-long
        # lines whose ``raw.data`` is only a sample.
        return f"L{self.raw.line_no}:{self.sha256[:16]}"


def check_readable(path: Path) -> None:
    """Open and close ``path`` so an unreadable file fails at ``parse()`` time.

    The OSError (PermissionError, FileNotFoundError, IsADirectoryError) names the
    file; raising it up front keeps it out of the event stream, where the caller
    would otherwise have to tell an I/O failure from a bad line.
    """
    with path.open("rb"):
        pass


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return True


def scan_lines(
    path: Path,
    start_offset: int = 0,
    start_line: int = 0,
    progress: ParseProgress | None = None,
) -> Iterator[ScannedLine]:
    """Yield every line from ``start_offset`` decoded, or with its ParseProblem.

    Stops before an incomplete trailing line that is not valid JSON (the writer
    is still busy) and sets ``progress.pending_tail``. A line longer than
    ``base.MAX_LINE_BYTES`` arrives from ``iter_lines`` in several chunks; it is
    reassembled into one problem (with a sample of its bytes) so later line
    numbers stay right.
    """
    source = str(path)
    if start_offset > 0:
        with path.open("rb") as fh:
            fh.seek(start_offset - 1)
            around = fh.read(2)
        if around[:1] != b"\n" and around[1:] == b"\n":
            # The last read consumed a JSON line whose newline had not been
            # written yet; that newline ends the old line, it is not a blank one.
            start_offset += 1
            if progress is not None:
                progress.end_offset = start_offset
    lines = iter_lines(path, start_offset, start_line)
    shift = 0  # extra chunks of over-long lines seen so far
    current = next(lines, None)
    while current is not None:
        following = next(lines, None)
        line_no = current.line_no - shift
        if not current.complete and following is not None:
            digest = hashlib.sha256(current.data)
            total = len(current.data)
            chunk = following
            while True:
                shift += 1
                digest.update(chunk.data)
                total += len(chunk.data)
                after = next(lines, None)
                if chunk.complete or after is None:
                    break
                chunk = after
            following = after
            if not chunk.complete:
                # Unterminated at EOF: still being written, like any pending tail.
                if progress is not None:
                    progress.pending_tail = True
                return
            sample = current.data[:PROBLEM_SAMPLE_BYTES]
            raw = RawLine(line_no, current.byte_offset, sample, True)
            problem = ParseProblem(
                source,
                line_no,
                current.byte_offset,
                f"line is {total} bytes, longer than the {base.MAX_LINE_BYTES}-byte limit;"
                f" the first {len(sample)} bytes are kept",
                sample,
            )
            end = current.byte_offset + total + 1
            yield ScannedLine(raw, end, digest.hexdigest(), problem=problem)
            current = following
            continue
        raw = (
            current
            if shift == 0
            else RawLine(line_no, current.byte_offset, current.data, current.complete)
        )
        end = raw.byte_offset + len(raw.data) + (1 if raw.complete else 0)
        digest_hex = hashlib.sha256(raw.data).hexdigest()
        try:
            data = decode_json_line(raw)
        except LineError as exc:
            if not raw.complete and not _is_json(raw.data):
                if progress is not None:
                    progress.pending_tail = True
                return
            problem = ParseProblem(source, raw.line_no, raw.byte_offset, str(exc), raw.data)
            yield ScannedLine(raw, end, digest_hex, problem=problem)
        else:
            yield ScannedLine(raw, end, digest_hex, data=data, text=raw.data.decode("utf-8"))
        current = following


def line_before(path: Path, offset: int, limit: int = 16 * 1024 * 1024) -> bytes | None:
    """The complete line ending just before ``offset`` (without its newline).

    Used on resume to recover the anchor and any one-line context; None at the
    start of the file or when the line is longer than ``limit``.
    """
    if offset <= 0:
        return None
    with path.open("rb") as fh:
        fh.seek(offset - 1)
        # A line consumed before its newline was written ends right at offset.
        end = pos = offset - 1 if fh.read(1) == b"\n" else offset
        chunks: list[bytes] = []
        while pos > 0:
            step = min(64 * 1024, pos)
            pos -= step
            fh.seek(pos)
            chunk = fh.read(step)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                chunks.append(chunk[newline + 1 :])
                break
            chunks.append(chunk)
            if end - pos > limit:
                return None
        return b"".join(reversed(chunks))


def start_progress(
    path: Path, start_offset: int, start_line: int, key_of: Callable[[RawLine], str]
) -> tuple[ParseProgress, bytes | None]:
    """Progress for a parse starting at ``start_offset``, and the line before it.

    When resuming, ``last_key``/``last_sha256`` already describe the line just
    before the start, so a parse that finds nothing new still reports the
    cursor's anchor instead of None.
    """
    progress = ParseProgress(end_offset=start_offset, end_line=start_line)
    before = line_before(path, start_offset)
    if before is not None:
        progress.last_key = key_of(RawLine(start_line, 0, before, True))
        progress.last_sha256 = hashlib.sha256(before).hexdigest()
    return progress, before


def head_records(path: Path, limit: int = 64) -> Iterator[dict[str, Any]]:
    """The decoded objects among the first ``limit`` lines (for session metadata)."""
    for count, line in enumerate(scan_lines(path), start=1):
        if line.data is not None:
            yield line.data
        if count >= limit:
            return


def mark_consumed(progress: ParseProgress, line: ScannedLine, key: str) -> None:
    """Advance ``progress`` to include ``line`` (whose native key is ``key``)."""
    progress.end_offset = line.end_offset
    progress.end_line = line.raw.line_no
    progress.last_key = key
    progress.last_sha256 = line.sha256


def native_record(
    line: ScannedLine, key: str, record_type: object, source_path: str
) -> NewNativeRecord:
    assert line.text is not None
    return NewNativeRecord(
        native_key=key,
        record_type=record_type if isinstance(record_type, str) and record_type else "unknown",
        raw=line.text,
        source_path=source_path,
        line_no=line.raw.line_no,
        byte_offset=line.raw.byte_offset,
    )


def str_field(data: dict[str, Any], key: str, coerced: list[str], name: str = "") -> str | None:
    """``data[key]`` when it is a string; None when absent/null; otherwise None and
    the field name appended to ``coerced`` so the message says what was ignored."""
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    coerced.append(f"{name or key}: expected a string, got {type(value).__name__}")
    return None


# --------------------------------------------------------------------------- parts


def _extras(block: dict[str, Any], canonical_type: str, *consumed: str) -> dict[str, Any] | None:
    """The keys of ``block`` not mapped onto NewPart fields, so it can be rebuilt.

    ``type`` is kept only when it differs from the part kind's canonical block
    type (thinking vs redacted_thinking, input_text vs text...).
    """
    skip = set(consumed)
    if block.get("type") == canonical_type:
        skip.add("type")
    extras = {k: v for k, v in block.items() if k not in skip}
    return extras or None


def _media_type_of_url(url: object) -> str | None:
    if isinstance(url, str) and url.startswith("data:"):
        head = url[5:].split(",", 1)[0]
        media = head.split(";", 1)[0]
        return media or None
    return None


def flatten_tool_result(content: object) -> tuple[str, dict[str, Any]]:
    """Flatten a tool result's content to text, plus metadata to rebuild its shape.

    A list of plain text blocks is joined with newlines and rebuilt from the
    lengths; any other list (images...) is kept as-is in metadata, base64 and all,
    while the text only says ``[image]``.
    """
    if isinstance(content, str):
        return content, {}
    if isinstance(content, list):
        texts: list[str] = []
        plain = True
        for item in content:
            if isinstance(item, str):
                texts.append(item)
                plain = False
            elif isinstance(item, dict):
                itype = item.get("type")
                if itype in ("text", "input_text", "output_text") and isinstance(
                    item.get("text"), str
                ):
                    texts.append(item["text"])
                    plain = plain and itype == "text" and set(item) == {"type", "text"}
                elif itype in ("image", "input_image", "image_url"):
                    texts.append("[image]")
                    plain = False
                else:
                    texts.append(f"[{itype}]" if isinstance(itype, str) else "[block]")
                    plain = False
            else:
                texts.append(json.dumps(item, ensure_ascii=False))
                plain = False
        if plain:
            return "\n".join(texts), {"text_block_lengths": [len(t) for t in texts]}
        return "\n".join(texts), {"content": content}
    if content is None:
        return "", {"content": None}
    return json.dumps(content, ensure_ascii=False), {"content": content}


def block_to_part(block: object) -> NewPart:
    """Convert one content block (Anthropic, OpenAI chat or Responses/Codex) to a part.

    Never raises: a block of unknown or malformed shape becomes an ``other`` part
    holding the original block.
    """
    if isinstance(block, str):
        return NewPart("text", text=block, metadata={"bare_string": True})
    if not isinstance(block, dict):
        return NewPart("other", metadata={"block": block})
    btype = block.get("type")
    if btype in ("text", "input_text", "output_text") and isinstance(block.get("text"), str):
        return NewPart("text", text=block["text"], metadata=_extras(block, "text", "text"))
    if btype == "refusal" and isinstance(block.get("refusal"), str):
        return NewPart("text", text=block["refusal"], metadata=_extras(block, "text", "refusal"))
    if btype == "thinking" and isinstance(block.get("thinking"), str):
        return NewPart(
            "reasoning", text=block["thinking"], metadata=_extras(block, "thinking", "thinking")
        )
    if btype == "redacted_thinking":
        return NewPart("reasoning", text="", metadata=_extras(block, "thinking"))
    if btype == "tool_use" and isinstance(block.get("name"), str):
        tool_id = block.get("id")
        text = json.dumps(block["input"], ensure_ascii=False) if "input" in block else None
        consumed = ["name", "input"] + (["id"] if isinstance(tool_id, str) else [])
        return NewPart(
            "tool_use",
            text=text,
            tool_name=block["name"],
            tool_call_id=tool_id if isinstance(tool_id, str) else None,
            metadata=_extras(block, "tool_use", *consumed),
        )
    if btype == "tool_result":
        use_id = block.get("tool_use_id")
        consumed = ["content"] + (["tool_use_id"] if isinstance(use_id, str) else [])
        meta = _extras(block, "tool_result", *consumed) or {}
        if "content" in block:
            text, shape = flatten_tool_result(block["content"])
            meta.update(shape)
        else:
            text = ""
            meta["content_missing"] = True
        return NewPart(
            "tool_result",
            text=text,
            tool_call_id=use_id if isinstance(use_id, str) else None,
            metadata=meta or None,
        )
    if btype in ("image", "image_url", "input_image"):
        meta = _extras(block, "image") or {}
        source = block.get("source")
        media: object = None
        if isinstance(source, dict):
            media = source.get("media_type") or _media_type_of_url(source.get("url"))
        url = block.get("image_url")
        if isinstance(url, dict):
            url = url.get("url")
        media = media or _media_type_of_url(url)
        if isinstance(media, str):
            meta["media_type"] = media
        return NewPart("image", metadata=meta or None)
    if btype in ("document", "file", "input_file"):
        meta = _extras(block, "document") or {}
        source = block.get("source")
        text = None
        if isinstance(source, dict):
            if source.get("type") == "text" and isinstance(source.get("data"), str):
                text = source["data"]
            if isinstance(source.get("media_type"), str):
                meta["media_type"] = source["media_type"]
        return NewPart("file", text=text, metadata=meta or None)
    text = block.get("text")
    return NewPart("other", text=text if isinstance(text, str) else None, metadata={"block": block})


def render_part(part: NewPart) -> str | None:
    """One part's contribution to ``content``; None when it contributes nothing."""
    meta = part.metadata or {}
    text = part.text or ""
    if part.kind == "text":
        return text
    if part.kind == "reasoning":
        return text or None
    if part.kind == "tool_use":
        head = f"[tool_use {part.tool_name or 'unknown'}]"
        return f"{head} {text}" if text else head
    if part.kind == "tool_result":
        return f"[tool_result] {text}" if text else "[tool_result]"
    if part.kind == "image":
        media = meta.get("media_type")
        return f"[image {media}]" if isinstance(media, str) else "[image]"
    if part.kind == "file":
        label = next(
            (meta[k] for k in ("title", "filename", "media_type") if isinstance(meta.get(k), str)),
            None,
        )
        head = f"[file {label}]" if label else "[file]"
        return f"{head} {text}" if text else head
    block = meta.get("block")
    btype = block.get("type") if isinstance(block, dict) else None
    head = f"[{btype}]" if isinstance(btype, str) else "[other]"
    return f"{head} {text}" if text else head


def render_content(parts: Iterable[NewPart]) -> str:
    """The plain-text ``content`` of a message built from structured parts.

    (A message that is a plain string in its source keeps that string instead;
    the parsers apply that rule before calling this.)
    """
    return "\n\n".join(r for r in map(render_part, parts) if r is not None)


# --------------------------------------------------------------------------- pairing


@dataclass(frozen=True, slots=True)
class ToolPairing:
    """Tool calls without a result and results without an earlier call, by call id."""

    unanswered: tuple[str, ...]
    orphans: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.unanswered and not self.orphans


def tool_pairing(messages: Sequence[NewMessage]) -> ToolPairing:
    """Check that every tool_use (with an id) is answered by a later tool_result.

    tool_use parts without an id (Codex web_search_call: a server-side tool with
    no result record) are not expected to have a result.
    """
    open_calls: dict[str, None] = {}
    answered: set[str] = set()
    orphans: list[str] = []
    for message in messages:
        for part in message.parts:
            if part.kind == "tool_use" and part.tool_call_id:
                open_calls[part.tool_call_id] = None
            elif part.kind == "tool_result":
                call_id = part.tool_call_id or ""
                if call_id in open_calls:
                    answered.add(call_id)
                else:
                    orphans.append(call_id)
    unanswered = tuple(c for c in open_calls if c not in answered)
    return ToolPairing(unanswered, tuple(orphans))


# --------------------------------------------------------------------------- kinds

_CODEX_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_CLAUDE_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "progress",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "custom-title",
    }
)


def _is_codex_legacy_header(data: dict[str, Any]) -> bool:
    """First line of an early-2025 rollout: ``{"id", "timestamp", "instructions"...}``."""
    return (
        "type" not in data
        and "role" not in data
        and isinstance(data.get("id"), str)
        and isinstance(data.get("timestamp"), str)
    )


def _sniff_record(data: dict[str, Any]) -> SourceKind | None:
    rtype = data.get("type")
    if not isinstance(rtype, str):
        rtype = None  # (an unhashable value would break the set lookups)
    if rtype in _CODEX_TYPES and "payload" in data:
        return "codex"
    if rtype in _CLAUDE_TYPES and ("sessionId" in data or "uuid" in data):
        return "claude-code"
    if rtype in ("file-history-snapshot", "summary", "queue-operation"):
        return "claude-code"
    if "role" in data and ("content" in data or "tool_calls" in data):
        return "generic"
    return None


def detect_kind(path: Path) -> SourceKind | None:
    """Guess which parser reads ``path``: by content first, then by path shape.

    Returns None for files that look like none of the three (e.g. a JSON
    document that is not a message list).
    """
    try:
        if path.suffix == ".json":
            with path.open("rb") as fh:
                head = fh.read(1024 * 1024)
            start = head.lstrip()[:1]
            return "generic" if start in (b"[", b"{") and b'"role"' in head else None
        for count, line in enumerate(scan_lines(path), start=1):
            if line.data is not None:
                if count == 1 and _is_codex_legacy_header(line.data):
                    return "codex"
                kind = _sniff_record(line.data)
                if kind is not None:
                    return kind
            if count >= 8:
                break
    except OSError:
        return None
    parts = path.parts
    if path.suffix == ".jsonl":
        if ".claude" in parts and "projects" in parts:
            return "claude-code"
        if path.name.startswith("rollout-") and ".codex" in parts:
            return "codex"
    return None


def parser_for(kind: SourceKind) -> Parser:
    """A parser instance for ``kind``."""
    # Imported here: the parser modules import this package's helpers.
    if kind == "claude-code":
        from lossless.sources.claude_code import ClaudeCodeParser

        return ClaudeCodeParser()
    if kind == "codex":
        from lossless.sources.codex import CodexParser

        return CodexParser()
    if kind == "generic":
        from lossless.sources.generic import GenericParser

        return GenericParser()
    raise ValueError(f"unknown source kind: {kind!r}")
