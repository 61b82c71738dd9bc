"""The marker of a process that lossless started as a model sub-process.

A summarizer command (``claude -p``...) or an ``expand_query`` sub-agent runs
with ``LCM_IN_SUMMARIZER=1``. Hooks seeing it stay out of that session (a
summary of a summary's prompt would recurse), and an MCP server started under
it refuses ``lcm_expand_query`` (no recursive delegation). Its own module,
free of imports, because hooks must start fast and the summarizers are heavy.
"""

from __future__ import annotations

import os

CHILD_MARKER_ENV = "LCM_IN_SUMMARIZER"


def inside_subagent() -> bool:
    """True in a process that lossless started as a model sub-process."""
    return os.environ.get(CHILD_MARKER_ENV, "") not in ("", "0")
