"""The hook events lossless handles, their payload, and what one hook did."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    # Claude Code fires this instead of PostToolUse when a tool call fails.
    "PostToolUseFailure",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "SessionEnd",
)
CLIENTS: tuple[str, ...] = ("claude-code", "codex")


def canonical_event(event: str) -> str:
    """The event's canonical spelling (clients and users vary the case)."""
    return next((e for e in EVENTS if e.lower() == event.lower()), event)


class HookInputError(Exception):
    """The event JSON is unusable (empty, malformed, missing a field)."""


@dataclass(slots=True)
class HookOutcome:
    """What one hook did: ``output`` goes to stdout, ``notes`` to the log line.

    ``status`` is the log line's word: ``ok``, or ``warn`` when the hook kept
    its data safe but the operator should look (a store error on a live
    server); failures are logged as ``error`` by the dispatcher.
    """

    output: str = ""
    status: str = "ok"
    notes: list[str] = field(default_factory=list)
    conversation_ids: list[int] = field(default_factory=list)
    worker_started: int | None = None


def parse_payload(raw: bytes) -> dict[str, Any]:
    """The event JSON as an object; ``HookInputError`` for anything else."""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        raise HookInputError("empty stdin: expected the hook event JSON")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise HookInputError(f"stdin is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HookInputError(f"hook event JSON must be an object, got {type(data).__name__}")
    return data
