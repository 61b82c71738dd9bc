"""A failing summarizer is logged once, not on every turn.

The worker compacts after each agent turn; with a dead endpoint or a bad
command every summary falls back to truncation, and one log line per turn
would bury everything else. ``note_summarizer_health`` writes one line to
``logs/hooks.log`` (where ``lcm doctor`` and users look) when the cause first
appears or changes, and one when summaries come from the model again.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from lossless.logfile import append_line

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.engine.compaction import CompactionResult

STATE_FILE = "summarizer-failing"


def _cause_key(cause: str) -> str:
    # "retry after 59s" and "retry after 58s" are one cause.
    return re.sub(r"\d+", "N", cause)[:500]


def note_summarizer_health(config: Config, results: Iterable[CompactionResult]) -> str | None:
    """Log a new fallback cause, or the recovery; return the line written (None: nothing)."""
    passes = [p for r in results for p in r.passes if p.acted]
    if not passes or config.summarizer_provider == "extractive":
        return None  # offline: no model to fail
    # A model failure, not a chunk too small to shrink.
    fallbacks = [
        p for p in passes if p.level == "fallback" and p.why and "not smaller" not in p.why
    ]
    state = config.log_dir / STATE_FILE
    try:
        previous = state.read_text("utf-8")
    except OSError:
        previous = None
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    if fallbacks:
        cause = next((p.why for p in fallbacks if p.why), "no cause recorded")
        key = _cause_key(cause)
        # An open circuit breaker only echoes the failure already logged.
        if previous == key or (previous is not None and "circuit open" in cause):
            return None
        line = (
            f"{stamp}Z summarizer session=- pid={os.getpid()} warn {len(fallbacks)} of {len(passes)} "
            f"summaries fell back to truncation: {cause} (run `lcm doctor`; logged once until "
            "the cause changes)"
        )
        append_line(config.log_dir, line)
        state.write_text(key, "utf-8")
        return line
    if previous is not None and any(p.level == "normal" for p in passes):
        line = f"{stamp}Z summarizer session=- pid={os.getpid()} ok summaries come from the model again"
        append_line(config.log_dir, line)
        state.unlink(missing_ok=True)
        return line
    return None
