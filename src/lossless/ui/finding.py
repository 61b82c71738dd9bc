"""The search page: the same engine calls as ``lcm search`` and ``lcm grep``,
with the matched words marked for highlighting.

Snippets come back from the store with each match in ``[brackets]``. A
bracketed piece that the query matches is turned into a highlight span (the
brackets dropped); a bracket that was in the text all along stays text.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from lossless.engine.engine import Engine
from lossless.errors import InputError, LosslessError
from lossless.store.contract import GrepHits
from lossless.store.regex import UserRegex, compile_user_regex
from lossless.timeutil import parse_since

SearchMode = Literal["search", "regex", "full_text"]
MODES: tuple[SearchMode, ...] = ("search", "regex", "full_text")
MAX_LIMIT = 200
_BRACKETED = re.compile(r"\[([^\[\]\n]{1,200})\]")
_WORD = re.compile(r"\w+", re.UNICODE)


# Highlighting a snippet may not take longer than this (a pattern that
# backtracks without end is cut off and the snippet shown plain).
HIGHLIGHT_TIMEOUT_S = 0.05


class _Matcher:
    def __init__(self, pattern: str, mode: SearchMode) -> None:
        self.regex: UserRegex | None = None
        self.words: list[str] = []
        if mode == "regex":
            try:
                self.regex = compile_user_regex(pattern)
            except LosslessError:
                self.regex = None
        else:
            self.words = [w.casefold() for w in _WORD.findall(pattern) if len(w) >= 2]

    def hits(self, piece: str) -> bool:
        if self.regex is not None:
            try:
                return self.regex.search(piece, HIGHLIGHT_TIMEOUT_S) is not None
            except TimeoutError:
                return False
        folded = piece.casefold()
        # Full-text search matches stems: "compacting" is a hit for "compaction".
        return any(
            folded.startswith(w[: max(3, len(w) - 3)]) or w.startswith(folded)
            for w in self.words
            if folded
        )

    def spans_in(self, text: str) -> list[tuple[int, int]]:
        if self.regex is not None:
            try:
                found = self.regex.finditer(text, HIGHLIGHT_TIMEOUT_S)
            except TimeoutError:
                return []
            return [(m.start(), m.end()) for m in found if m.end() > m.start()]
        spans = []
        for m in _WORD.finditer(text):
            if self.hits(m.group(0)):
                spans.append((m.start(), m.end()))
        return spans


def highlight(text: str, pattern: str, mode: SearchMode) -> dict[str, Any]:
    """``text`` without the store's match brackets, and the spans to highlight."""
    matcher = _Matcher(pattern, mode)
    out: list[str] = []
    spans: list[list[int]] = []
    position = 0
    length = 0
    for found in _BRACKETED.finditer(text):
        inner = found.group(1)
        if not matcher.hits(inner):
            continue
        before = text[position : found.start()]
        out.append(before)
        length += len(before)
        spans.append([length, length + len(inner)])
        out.append(inner)
        length += len(inner)
        position = found.end()
    out.append(text[position:])
    plain = "".join(out)
    if not spans:
        spans = [[a, b] for a, b in matcher.spans_in(plain)]
    return {"text": plain, "highlights": spans}


def search(
    engine: Engine,
    query: str,
    *,
    mode: str = "search",
    scope: str = "both",
    project: str | None = None,
    conversation: str | None = None,
    since: str | None = None,
    limit: int = 50,
) -> dict[str, Any]:
    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"limit must be 1..{MAX_LIMIT}")
    if not query.strip():
        raise InputError("type something to search for")
    chosen: SearchMode = mode
    if chosen == "search":
        unified = engine.search(query, project=project, limit=limit)
        hits = [
            {
                "kind": h.kind,
                "id": h.id,
                "score": round(h.score, 4),
                "matched": list(h.matched),
                "project": h.project,
                "conversation_id": h.conversation_id,
                "session_id": h.session_id,
                "created_at": h.created_at,
                "role": None,
                "tags": list(h.tags),
                "covering_summary_id": h.covering_summary_id,
                **highlight(h.text, query, chosen),
            }
            for h in unified
        ]
        return {
            "query": query,
            "mode": mode,
            "complete": True,
            "semantic": unified.semantic,
            "hits": hits,
        }
    if scope not in ("messages", "summaries", "both"):
        raise InputError(f"unknown scope {scope!r}; use messages, summaries or both")
    try:
        since_ts = parse_since(since) if since else None
    except ValueError as exc:
        raise InputError(f"since: {exc}") from None
    found: GrepHits = engine.grep(
        query,
        mode=chosen,
        scope=scope,  # type: ignore[arg-type]
        conversation=conversation or None,
        project=project,
        since=since_ts,
        limit=limit,
    )
    return {
        "query": query,
        "mode": mode,
        "complete": found.complete,
        "scanned_until": found.scanned_until,
        "hits": [
            {
                "kind": h.kind,
                "id": h.id,
                "score": h.rank,
                "project": h.project,
                "conversation_id": h.conversation_id,
                "session_id": h.session_id,
                "created_at": h.created_at,
                "role": h.role,
                "tags": [],
                "covering_summary_id": h.covering_summary_id,
                **highlight(h.snippet, query, chosen),
            }
            for h in found
        ],
    }
