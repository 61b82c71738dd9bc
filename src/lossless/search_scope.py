"""What a search looked through, said the same way by ``lcm grep``, ``lcm search`` and MCP.

Both commands search everything by default; ``--project``, ``--conversation``
(and grep's ``--session``) narrow it. Every answer names its scope, so an
empty result is never mistaken for "not stored".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SearchScope:
    """The narrowing a search was given (None: not narrowed by it)."""

    project: str | None = None
    conversation_id: int | None = None
    session_id: str | None = None

    def describe(self) -> str:
        """``'all projects'``, ``'project /x'``, ``'conversation 3'``, joined when several."""
        parts = []
        if self.conversation_id is not None:
            parts.append(f"conversation {self.conversation_id}")
        if self.session_id is not None:
            parts.append(f"session {self.session_id}")
        if self.project is not None:
            parts.append(f"project {self.project}")
        return ", ".join(parts) if parts else "all projects"

    def as_json(self) -> dict[str, object]:
        return {
            "searched": self.describe(),
            "project": self.project,
            "conversation_id": self.conversation_id,
            "session_id": self.session_id,
        }
