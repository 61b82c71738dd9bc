"""How source material is rendered for a summarizer.

The engine concatenates messages (depth 0) or summaries (depth >= 1) into one
text. Using these helpers gives every block a header line the extractive
summarizer recognises (it also accepts close variants), and keeps the
timestamps every prompt asks the model to anchor events to.

    [2026-02-17T07:37:00.000Z] user (msg 412):
    please fix the failing migration

    [2026-02-17T07:37:00.000Z .. 2026-02-17T08:23:00.000Z] summary sum_ab12 (depth 0):
    ...
"""

from __future__ import annotations

from collections.abc import Iterable


def format_message_block(
    role: str, created_at: str | None, content: str, *, message_id: int | None = None
) -> str:
    """A message's header and text; ``message_id`` lets a summary name where a
    passage came from (the extractive summarizer's note on withheld lines)."""
    stamp = f"[{created_at}] " if created_at else ""
    label = f"{role} (msg {message_id})" if message_id is not None else role
    return f"{stamp}{label}:\n{content.rstrip()}"


def format_summary_block(
    earliest_at: str | None,
    latest_at: str | None,
    content: str,
    *,
    summary_id: str | None = None,
    depth: int | None = None,
) -> str:
    if earliest_at and latest_at and earliest_at != latest_at:
        stamp = f"[{earliest_at} .. {latest_at}] "
    elif earliest_at or latest_at:
        stamp = f"[{earliest_at or latest_at}] "
    else:
        stamp = ""
    label = "summary"
    if summary_id:
        label += f" {summary_id}"
    if depth is not None:
        label += f" (depth {depth})"
    return f"{stamp}{label}:\n{content.rstrip()}"


def join_blocks(blocks: Iterable[str]) -> str:
    return "\n\n".join(blocks)
