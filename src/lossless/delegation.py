"""The marker of a process that lossless started as a model sub-process.

A summarizer command (``claude -p``...) or an ``expand_query`` sub-agent runs
with ``LCM_IN_SUMMARIZER=1``. Hooks seeing it stay out of that session (a
summary of a summary's prompt would recurse), and an MCP server started under
it applies the scope guard to the tools that delegate (``lcm_expand_query``,
``lcm_llm_map``, ``lcm_agentic_map``): the sub-agent must state the work it
keeps, and the depth (``LCM_DELEGATION_DEPTH``, one more per level) is bounded. Its own module,
free of imports, because hooks must start fast and the summarizers are heavy.
"""

from __future__ import annotations

import os

CHILD_MARKER_ENV = "LCM_IN_SUMMARIZER"
#: How many levels of lossless-started sub-agents this process sits under
#: (0: none). Each child lossless starts gets one more; the scope guard
#: (engine/operators/scope_guard.py) refuses to delegate past a bound.
DEPTH_ENV = "LCM_DELEGATION_DEPTH"


def inside_subagent() -> bool:
    """True in a process that lossless started as a model sub-process."""
    return os.environ.get(CHILD_MARKER_ENV, "") not in ("", "0")


def delegation_depth() -> int:
    """This process's delegation depth (0 at the top)."""
    try:
        return max(0, int(os.environ.get(DEPTH_ENV, "0")))
    except ValueError:
        return 0


def child_environment(base: dict[str, str]) -> dict[str, str]:
    """``base`` for a model sub-process: the marker set, the depth one deeper."""
    return {**base, CHILD_MARKER_ENV: "1", DEPTH_ENV: str(delegation_depth() + 1)}
