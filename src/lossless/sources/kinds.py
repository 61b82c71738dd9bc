"""Which format a transcript file is in, and the parser that reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lossless.sources.base import Parser, SourceKind
from lossless.sources.lines import scan_lines

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
    # Imported here: a hook loads only the parser of its own format.
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
