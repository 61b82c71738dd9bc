"""What lossless already injected that the model still sees: no second copy.

Claude Code keeps every hook's ``additionalContext`` in the transcript and
replays it on resume until the next compaction, so injecting the DAG view at
each resume stacked copies of it (three in one request after resume ->
/compact -> resume). The model's context starts at the last compaction
boundary (Claude Code: a ``compact_boundary`` system record; Codex: a
``compacted`` rollout item); a block lossless injected after it is still
there. A new block adds nothing when every summary id it names is already in
one of those, and a block with some new summaries carries only those.

One block is invisible to that check: Claude Code carries the context its
own process got at start (``SessionStart`` on resume) across a ``/compact``,
but writes it to the transcript only after the compact-time ``SessionStart``
hook ran, so that hook repeated its lines (seen with Claude Code 2.1.332:
a summary listed twice in every request after resume -> /compact -> resume).
The ids each ``SessionStart`` injected are therefore also kept per session
(``remember_injected``), and the compact-time hook counts the last start's
as seen.
"""

from __future__ import annotations

import hashlib
import json
import os
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


def only_new(
    context: str, transcript: Path | None, also_seen: set[str] | frozenset[str] = frozenset()
) -> str:
    """``context`` without the summaries the model already has ('' when nothing is new).

    The view lists one summary per line (``- sum_... (leaf, ...): ...``); lines
    for summaries a block since the last compaction named (or ``also_seen``
    names) are dropped.
    """
    seen = seen_summary_ids(transcript)
    if seen is None and not also_seen:
        return context
    seen = (seen or set()) | set(also_seen)
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


def summary_ids(context: str) -> list[str]:
    """The summaries a DAG view lists, one per line."""
    return [m.group(1) for line in context.split("\n") if (m := _SUMMARY_LINE.match(line))]


def _injected_file(home: Path, session_id: str) -> Path:
    name = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return home / "hooks" / "injected" / f"{name}.json"


def remember_injected(home: Path, session_id: str, ids: list[str]) -> None:
    """Keep which summaries this session's ``SessionStart`` just injected."""
    import tempfile  # only SessionStart writes: the other hooks stay lean

    path = _injected_file(home, session_id)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".injected-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"session_id": session_id, "summary_ids": ids}, fh)
        os.replace(tmp, path)
    except OSError:
        # Only costs a repeated line after the next /compact.
        return


def last_injected(home: Path, session_id: str) -> set[str]:
    """What this session's last ``SessionStart`` injected (empty when unknown)."""
    try:
        data = json.loads(_injected_file(home, session_id).read_text("utf-8"))
    except (OSError, ValueError):
        return set()
    ids = data.get("summary_ids") if isinstance(data, dict) else None
    if not isinstance(ids, list) or data.get("session_id") != session_id:
        return set()
    return {i for i in ids if isinstance(i, str)}
