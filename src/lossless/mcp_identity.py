"""What the MCP server says about itself: name, instructions, protocol versions, tool hints.

Shared by the stdlib-only stdio front (``mcp_stdio``, which answers
``initialize`` before the SDK loads), the SDK server (``mcp_server``) and the
map tools (``mcp_map_tools``), so none of them imports another for these.
Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SERVER_NAME = "lossless"
# Protocol revisions negotiated through ``initialize`` (the SDK's
# HANDSHAKE_PROTOCOL_VERSIONS, oldest first); a client asking for another one
# is offered the newest, as the SDK does.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
# What the SDK's MCPServer announces for a server with tools only.
CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}
INSTRUCTIONS = """\
lossless keeps every message of your past sessions in this project verbatim, and \
compacts older context into summaries (ids sum_...) that point back to their \
sources. When you need something no longer in your context: lcm_search (ranked \
words) or lcm_grep (regex) to find it, lcm_describe for one id in full, lcm_expand \
to open a summary into what it was built from, lcm_expand_query to answer a \
question from the history. lcm_store keeps a durable memory (a decision, a \
convention, a fix) that future sessions will see; if a memory shown to you \
(mem_...) helps, mention its id. Tools see only the current project unless you \
pass all_projects=true."""


@dataclass(frozen=True, slots=True)
class ToolHints:
    """MCP tool annotations (hints to the client, e.g. what it may run unasked).

    Every hint is stated, none left to a default: clients differ in which
    defaults they assume (the spec's ``destructiveHint`` defaults to true, and
    some clients read it even when ``readOnlyHint`` is true).
    """

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


# The retrieval tools only read the local store. Codex runs a tool under its
# default "never ask" policy only when it says readOnlyHint: true.
READ_ONLY = ToolHints(read_only=True, destructive=False, idempotent=True, open_world=False)
# lcm_expand_query reads too, but may send evidence to the configured model
# provider (an outside service): open world.
READ_ONLY_DELEGATING = ToolHints(
    read_only=True, destructive=False, idempotent=False, open_world=True
)
# lcm_store adds a memory and never deletes or overwrites one; storing the
# same fact again merges into the existing memory, so a retry is harmless.
STORE_HINTS = ToolHints(read_only=False, destructive=False, idempotent=True, open_world=False)


def tool_annotations(hints: ToolHints) -> Any:
    """``hints`` as the SDK's ``ToolAnnotations``."""
    from mcp.types import ToolAnnotations

    # By the wire names: mcp 2 names its fields in snake_case, mcp 1 in camelCase.
    return ToolAnnotations.model_validate(
        {
            "readOnlyHint": hints.read_only,
            "destructiveHint": hints.destructive,
            "idempotentHint": hints.idempotent,
            "openWorldHint": hints.open_world,
        }
    )
