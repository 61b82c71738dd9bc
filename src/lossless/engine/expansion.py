"""Expand a summary into what it covers: paged, focusable, complete.

A summary's expansion is one ordered sequence: the DAG below it walked depth
first, each summary followed at once by what it was built from, down to the
verbatim messages of its leaves. ``depth`` says how many levels below the
summary are shown (``None``: all of them, down to every message); a summary
at the last shown level is a frontier to expand on its own.

The sequence is read a page at a time, under a token cap. A page ends before
the first node that does not fit; a node larger than the whole cap is split
across pages by character offset. ``Expansion.cursor`` names exactly where
the page stopped (the node and, inside a split node, the character), so
following cursors yields every node once and in order, and concatenating a
split node's pieces gives its content byte for byte. The DAG is immutable
(compaction only adds summaries above it), so a cursor stays valid.

``around=MESSAGE_ID`` focuses the expansion on one covered message: the page
opens with that message (a grep hit's message, reached through its
``covering_summary_id``), ``cursor`` continues after it and ``before_cursor``
reads the page that leads up to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from lossless.errors import InputError, NotFoundError
from lossless.models import Message, Summary
from lossless.store.contract import Repositories
from lossless.tokens import TokenEstimator, estimate_tokens

__all__ = ["ExpandedNode", "Expansion", "expand", "parse_cursor"]

NodeKind = Literal["summary", "message"]
# How many nodes' content is fetched at a time while filling a page.
_BATCH = 64


@dataclass(slots=True)
class ExpandedNode:
    """One summary or message of the expansion (or, when ``clipped``, a piece of it).

    ``offset`` is the character where this piece starts in the node's full
    content; ``clipped`` means more of it follows on the next page.
    """

    kind: NodeKind
    id: str
    level: int
    content: str
    token_count: int
    created_at: str | None = None
    role: str | None = None
    depth: int | None = None
    clipped: bool = False
    offset: int = 0


@dataclass(slots=True)
class Expansion:
    """One page of a summary's expansion.

    ``cursor`` continues exactly where this page stopped (None when nothing is
    left); ``truncated`` is True whenever there is a cursor. ``position`` is
    the index of the page's first node in the whole sequence of
    ``total_nodes``; ``messages_total`` counts the covered messages the
    sequence holds (0 when ``depth`` stops above them). ``levels`` is how many
    levels lie below the root (a leaf has 1: its messages); ``depth`` is how
    many this expansion shows (None: all).
    """

    root: Summary
    nodes: list[ExpandedNode] = field(default_factory=list)
    truncated: bool = False
    token_count: int = 0
    cursor: str | None = None
    before_cursor: str | None = None
    position: int = 0
    total_nodes: int = 0
    messages_total: int = 0
    levels: int = 1
    depth: int | None = 1
    around: int | None = None

    @property
    def cited_ids(self) -> list[str]:
        return [n.id for n in self.nodes]

    def as_dict(self) -> dict[str, Any]:
        return {
            "root": self.root.id,
            "truncated": self.truncated,
            "cursor": self.cursor,
            "before_cursor": self.before_cursor,
            "position": self.position,
            "total_nodes": self.total_nodes,
            "messages_total": self.messages_total,
            "levels": self.levels,
            "depth": self.depth,
            "around": self.around,
            "token_count": self.token_count,
            "cited_ids": self.cited_ids,
            "nodes": [
                {
                    "kind": n.kind,
                    "id": n.id,
                    "level": n.level,
                    "depth": n.depth,
                    "role": n.role,
                    "created_at": n.created_at,
                    "token_count": n.token_count,
                    "clipped": n.clipped,
                    "offset": n.offset,
                    "content": n.content,
                }
                for n in self.nodes
            ],
        }


# --------------------------------------------------------------------- cursors


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a page starts: node ``index`` of the sequence, character ``offset``
    in it; ``stop`` (exclusive) bounds a ``before_cursor``'s reading."""

    root: str
    depth: int | None
    include_messages: bool
    index: int
    offset: int = 0
    stop: int | None = None

    def encode(self) -> str:
        depth = "all" if self.depth is None else str(self.depth)
        stop = "" if self.stop is None else str(self.stop)
        messages = "m" if self.include_messages else "s"
        return f"{self.root}:{depth}:{messages}:{self.index}:{self.offset}:{stop}"


def parse_cursor(text: str) -> Cursor:
    """The cursor an expansion returned; ``InputError`` for anything else."""
    fields = text.strip().split(":")
    bad = InputError(
        f"{text!r} is not an expansion cursor: pass the `cursor` an earlier expand returned"
    )
    if len(fields) != 6 or not fields[0].startswith("sum_"):
        raise bad
    root, depth, messages, index, offset, stop = fields
    try:
        cursor = Cursor(
            root=root,
            depth=None if depth == "all" else int(depth),
            include_messages=messages == "m",
            index=int(index),
            offset=int(offset),
            stop=int(stop) if stop else None,
        )
    except ValueError:
        raise bad from None
    if messages not in ("m", "s") or cursor.index < 0 or cursor.offset < 0:
        raise bad
    if cursor.depth is not None and cursor.depth < 1:
        raise bad
    return cursor


# --------------------------------------------------------------------- the sequence


@dataclass(frozen=True, slots=True)
class _Entry:
    """One node of an expansion: a summary or message id, and its depth below the root."""

    kind: NodeKind
    id: str
    level: int


def _sequence(
    repos: Repositories, root: Summary, depth: int | None, include_messages: bool
) -> list[_Entry]:
    """Every node of the expansion in reading order (ids only, no content)."""
    out: list[_Entry] = []

    def walk(summary_id: str, kind: str, level: int) -> None:
        if depth is not None and level > depth:
            return
        if kind == "condensed":
            for child_id in repos.summaries.source_summary_ids(summary_id):
                child = repos.summaries.get(child_id)
                if child is None:
                    continue
                out.append(_Entry("summary", child.id, level))
                walk(child.id, child.kind, level + 1)
        elif include_messages:
            out.extend(
                _Entry("message", str(m), level)
                for m in repos.summaries.source_message_ids(summary_id)
            )

    walk(root.id, root.kind, 1)
    return out


def _summary_node(summary: Summary, level: int) -> ExpandedNode:
    return ExpandedNode(
        kind="summary",
        id=summary.id,
        level=level,
        content=summary.content,
        token_count=summary.token_count,
        created_at=summary.latest_at,
        depth=summary.depth,
    )


def _message_node(message: Message, level: int) -> ExpandedNode:
    return ExpandedNode(
        kind="message",
        id=str(message.id),
        level=level,
        content=message.content,
        token_count=message.token_count,
        created_at=message.created_at,
        role=message.role,
    )


def _nodes(repos: Repositories, entries: list[_Entry]) -> list[ExpandedNode]:
    """Full nodes (with content) for ``entries``, in the same order."""
    message_ids = [int(e.id) for e in entries if e.kind == "message"]
    messages = {m.id: m for m in repos.messages.get_many(message_ids)} if message_ids else {}
    out: list[ExpandedNode] = []
    for entry in entries:
        if entry.kind == "message":
            message = messages.get(int(entry.id))
            if message is None:
                raise NotFoundError(f"summary links to missing message {entry.id}")
            out.append(_message_node(message, entry.level))
        else:
            summary = repos.summaries.get(entry.id)
            if summary is None:  # pragma: no cover - listed a moment ago
                raise NotFoundError(f"summary links to missing summary {entry.id}")
            out.append(_summary_node(summary, entry.level))
    return out


def _fit_chars(text: str, tokens: int, estimate: TokenEstimator) -> int:
    """The most characters of ``text`` whose estimate stays within ``tokens`` (at least 1)."""
    low, high = 1, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if estimate(text[:mid]) <= tokens:
            low = mid
        else:
            high = mid - 1
    return low


# --------------------------------------------------------------------- expand


def expand(
    repos: Repositories,
    summary_id: str,
    *,
    depth: int | None = 1,
    token_cap: int = 4000,
    include_messages: bool = True,
    cursor: str | None = None,
    around: int | str | None = None,
    estimate: TokenEstimator = estimate_tokens,
) -> Expansion:
    """One page of ``summary_id``'s expansion, at most ``token_cap`` tokens.

    ``depth``: levels below the summary to show (``None``: all, down to every
    message). ``cursor``: continue a previous page (it carries that call's
    depth and include_messages). ``around``: open the page at this covered
    message (implies all levels). See the module docstring.
    """
    if token_cap < 1:
        raise InputError("token cap must be 1 or more")
    if depth is not None and depth < 1:
        raise InputError("depth must be 1 or more (or all levels)")
    if cursor is not None and around is not None:
        raise InputError("pass either a cursor or around, not both")
    root = repos.summaries.get(summary_id.strip())
    if root is None:
        raise NotFoundError(f"no summary {summary_id}")
    start = offset = 0
    stop: int | None = None
    if cursor is not None:
        parsed = parse_cursor(cursor)
        if parsed.root != root.id:
            raise InputError(f"that cursor belongs to {parsed.root}, not {root.id}")
        depth, include_messages = parsed.depth, parsed.include_messages
        start, offset, stop = parsed.index, parsed.offset, parsed.stop
    focus: int | None = None
    if around is not None:
        focus = _message_ref(around)
        if not include_messages:
            raise InputError("around needs the messages: drop --no-messages")
        depth = None
    entries = _sequence(repos, root, depth, include_messages)
    expansion = Expansion(
        root=root,
        total_nodes=len(entries),
        messages_total=sum(1 for e in entries if e.kind == "message"),
        levels=root.depth + 1,
        depth=depth,
        around=focus,
    )
    if focus is not None:
        start = next(
            (i for i, e in enumerate(entries) if e.kind == "message" and e.id == str(focus)),
            -1,
        )
        if start < 0:
            covering = repos.summaries.covering([focus]).get(focus)
            where = f"; it is under {covering}" if covering else ""
            raise NotFoundError(f"message {focus} is not covered by {root.id}{where}")
        if start > 0:
            first = _page_start_before(repos, entries, start, token_cap, estimate)
            expansion.before_cursor = Cursor(
                root.id, depth, include_messages, first, 0, start
            ).encode()
    end = len(entries) if stop is None else min(stop, len(entries))
    if cursor is not None and start >= end:
        raise InputError("that cursor points past the end of this expansion")
    expansion.position = start
    _fill(repos, expansion, entries, start, offset, end, token_cap, estimate)
    if expansion.cursor is not None:
        index, at = (int(x) for x in expansion.cursor.split(":"))
        expansion.cursor = Cursor(root.id, depth, include_messages, index, at, stop).encode()
        expansion.truncated = True
    return expansion


def _message_ref(ref: int | str) -> int:
    text = str(ref).strip()
    if text.startswith("msg_"):
        text = text[4:]
    if not text.isdigit():
        raise InputError(f"around takes a message id (123 or msg_123), not {ref!r}")
    return int(text)


def _fill(
    repos: Repositories,
    expansion: Expansion,
    entries: list[_Entry],
    index: int,
    offset: int,
    end: int,
    cap: int,
    estimate: TokenEstimator,
) -> None:
    """Add nodes from ``index`` (``offset`` characters in) until the cap or ``end``.

    Leaves ``expansion.cursor`` as ``"index:offset"`` of the first node not
    (wholly) shown, or None when ``end`` was reached.
    """
    size = 4
    while index < end:
        batch = _nodes(repos, entries[index : min(end, index + size)])
        # Small first fetches for small pages; larger ones once they fill slowly.
        size = min(_BATCH, size * 2)
        for node in batch:
            if offset:
                node.content = node.content[offset:]
                node.offset = offset
            tokens = estimate(node.content)
            room = cap - expansion.token_count
            if tokens <= room:
                node.token_count = tokens
                expansion.nodes.append(node)
                expansion.token_count += tokens
                index += 1
                offset = 0
                continue
            if expansion.nodes:
                # It would not fit whole: the next page opens with it.
                expansion.cursor = f"{index}:{offset}"
                return
            # Larger than a whole page: split it by characters.
            chars = _fit_chars(node.content, room, estimate)
            node.content = node.content[:chars]
            node.token_count = estimate(node.content)
            node.clipped = True
            expansion.nodes.append(node)
            expansion.token_count += node.token_count
            expansion.cursor = f"{index}:{offset + chars}"
            return
    expansion.cursor = None


def _page_start_before(
    repos: Repositories,
    entries: list[_Entry],
    index: int,
    cap: int,
    estimate: TokenEstimator,
) -> int:
    """The first node of the page that ends just before ``index`` (at least one node)."""
    total = 0
    first = index
    size = 4
    while first > 0:
        low = max(0, first - size)
        size = min(_BATCH, size * 2)
        batch = _nodes(repos, entries[low:first])
        for node in reversed(batch):
            tokens = estimate(node.content)
            if total + tokens > cap and first < index:
                return first
            total += tokens
            first -= 1
    return first
