"""Whether every tool call in a parsed stream is answered by a later result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lossless.models import NewMessage


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
