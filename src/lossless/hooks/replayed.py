"""What lossless already injected that the model still sees: no second copy.

Claude Code keeps every hook's ``additionalContext`` in the transcript and
replays it on resume until the next compaction, so injecting the DAG view at
each resume stacked copies of it (three in one request after resume ->
/compact -> resume). The model's context starts at the last compaction
boundary (Claude Code: a ``compact_boundary`` system record; Codex: a
``compacted`` rollout item); a block lossless injected after it is still
there. A new block adds nothing when every summary id it names is already in
one of those, and a block with some new summaries carries only those.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

CONTEXT_HEAD = "[lossless] Session "
_BOUNDARIES = (b'"compact_boundary"', b'"type":"compacted"', b'"type": "compacted"')
_SUMMARY_ID = re.compile(r"sum_[0-9A-Za-z]+")
_SUMMARY_LINE = re.compile(r"^\s*-\s+(sum_[0-9A-Za-z]+)\b")


def since_last_compaction(transcript: Path) -> bytes:
    """The transcript the model still sees: from its last compaction boundary on.

    The records written just before the boundary with no conversation turn
    between them (the SessionStart of the very process that ran ``/compact``)
    count too: Claude Code carries that start's hook context across the
    compaction. Without a boundary, all of it.
    """
    try:
        data = transcript.read_bytes()
    except OSError:
        return b""
    start = max(data.rfind(marker) for marker in _BOUNDARIES)
    if start < 0:
        return data
    start = data.rfind(b"\n", 0, start) + 1
    while start > 0:
        previous = data.rfind(b"\n", 0, start - 1) + 1
        if _is_turn(data[previous : start - 1]):
            break
        start = previous
    return data[start:]


def _is_turn(line: bytes) -> bool:
    """Whether a transcript line is a user or assistant message (not an attachment)."""
    try:
        record = json.loads(line)
    except ValueError:
        return False
    if not isinstance(record, dict):
        return False
    kind = record.get("type")
    if kind in ("user", "assistant"):
        return True
    payload = record.get("payload")
    return (
        kind == "response_item" and isinstance(payload, dict) and payload.get("type") == "message"
    )


def seen_summary_ids(transcript: Path | None) -> set[str] | None:
    """Summary ids named by lossless blocks since the last compaction (None: no such block)."""
    if transcript is None:
        return None
    tail = since_last_compaction(transcript)
    head = CONTEXT_HEAD.encode()
    if head not in tail:
        return None
    seen: set[str] = set()
    for line in tail.split(b"\n"):
        if head in line:
            seen.update(_SUMMARY_ID.findall(line.decode("utf-8", "replace")))
    return seen


def only_new(context: str, transcript: Path | None) -> str:
    """``context`` without the summaries the model already has ('' when nothing is new).

    The view lists one summary per line (``- sum_... (leaf, ...): ...``); lines
    for summaries a block since the last compaction named are dropped.
    """
    seen = seen_summary_ids(transcript)
    if seen is None:
        return context
    kept: list[str] = []
    new = 0
    for line in context.split("\n"):
        match = _SUMMARY_LINE.match(line)
        if match is None:
            kept.append(line)
        elif match.group(1) not in seen:
            kept.append(line)
            new += 1
    return "\n".join(kept) if new else ""
