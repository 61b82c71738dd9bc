"""Find and recover anything: grep, describe and expand.

These are the engine functions behind ``lcm grep/describe/expand`` and the MCP
tools. Results are plain dataclasses with ids an agent can follow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lossless.errors import InputError, NotFoundError
from lossless.models import (
    Conversation,
    LargeFile,
    Message,
    Part,
    Summary,
)
from lossless.store.contract import GrepHits, GrepMode, GrepQuery, GrepScope, Repositories
from lossless.tokens import TokenEstimator, estimate_tokens


def grep(
    repos: Repositories,
    pattern: str,
    *,
    mode: GrepMode = "regex",
    scope: GrepScope = "both",
    conversation_id: int | None = None,
    session_id: str | None = None,
    project: str | None = None,
    since: str | None = None,
    limit: int = 50,
    time_budget_s: float | None = None,
) -> GrepHits:
    """Search messages and/or summaries. Each hit carries ids to describe/expand next.

    A regex scan stops after ``time_budget_s`` seconds (None: no limit); the
    result then says how far back it got (``GrepHits.scanned_until``).
    """
    if limit < 0:
        raise InputError("limit must be 0 or more")
    if time_budget_s is not None and time_budget_s < 0:
        raise InputError("time budget must be 0 or more seconds")
    return repos.search.grep(
        GrepQuery(
            pattern=pattern,
            mode=mode,
            scope=scope,
            conversation_id=conversation_id,
            session_id=session_id,
            project=project,
            since=since,
            limit=limit,
            time_budget_s=time_budget_s,
        )
    )


@dataclass(frozen=True, slots=True)
class MessageDescription:
    kind: Literal["message"]
    message: Message
    parts: list[Part]
    conversation: Conversation | None
    covering_summary_id: str | None
    native_record_count: int


@dataclass(frozen=True, slots=True)
class SummaryDescription:
    kind: Literal["summary"]
    summary: Summary
    source_message_ids: list[int]
    source_summary_ids: list[str]
    condensed_into: str | None
    conversation: Conversation | None


@dataclass(frozen=True, slots=True)
class FileDescription:
    kind: Literal["file"]
    file: LargeFile
    content: str | None
    error: str | None = None


Description = MessageDescription | SummaryDescription | FileDescription


def parse_message_id(ref: str) -> int | None:
    text = ref.strip()
    if text.startswith("msg_"):
        text = text[4:]
    # Beyond SQLite's 64-bit integers no message can have the id.
    return int(text) if text.isdigit() and len(text) <= 18 else None


def describe(repos: Repositories, ref: str, *, include_file_content: bool = True) -> Description:
    """Metadata and content of a message (``123`` or ``msg_123``), summary or large file."""
    ref = ref.strip()
    if ref.startswith("sum_"):
        summary = repos.summaries.get(ref)
        if summary is None:
            raise NotFoundError(f"no summary {ref}")
        return SummaryDescription(
            kind="summary",
            summary=summary,
            source_message_ids=repos.summaries.source_message_ids(ref),
            source_summary_ids=repos.summaries.source_summary_ids(ref),
            condensed_into=repos.summaries.condensed_into(ref),
            conversation=repos.conversations.get(summary.conversation_id),
        )
    if ref.startswith("file_"):
        large = repos.files.get(ref)
        if large is None:
            raise NotFoundError(f"no large file {ref}")
        content: str | None = None
        error: str | None = None
        if include_file_content:
            try:
                content = Path(large.path).read_text("utf-8", errors="replace")
            except OSError as exc:
                error = f"content file {large.path} cannot be read: {exc.strerror or exc}"
        return FileDescription(kind="file", file=large, content=content, error=error)
    message_id = parse_message_id(ref)
    if message_id is None and ref.removeprefix("msg_").isdigit():
        raise NotFoundError(f"no message {ref}")
    if message_id is None:
        raise InputError(
            f"{ref!r} is not an id: use a message id (123 or msg_123), a summary id "
            "(sum_...) or a file id (file_...)"
        )
    message = repos.messages.get(message_id)
    if message is None:
        raise NotFoundError(f"no message {message_id}")
    return MessageDescription(
        kind="message",
        message=message,
        parts=repos.messages.parts([message_id])[message_id],
        conversation=repos.conversations.get(message.conversation_id),
        covering_summary_id=repos.summaries.covering([message_id]).get(message_id),
        native_record_count=len(
            repos.messages.native_records(message.conversation_id, message_id=message_id)
        ),
    )


@dataclass(slots=True)
class ExpandedNode:
    kind: Literal["summary", "message"]
    id: str
    level: int
    content: str
    token_count: int
    created_at: str | None = None
    role: str | None = None
    depth: int | None = None
    clipped: bool = False


@dataclass(slots=True)
class Expansion:
    root: Summary
    nodes: list[ExpandedNode] = field(default_factory=list)
    truncated: bool = False
    token_count: int = 0

    @property
    def cited_ids(self) -> list[str]:
        return [n.id for n in self.nodes]

    def as_dict(self) -> dict[str, Any]:
        return {
            "root": self.root.id,
            "truncated": self.truncated,
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
                    "content": n.content,
                }
                for n in self.nodes
            ],
        }


def expand(
    repos: Repositories,
    summary_id: str,
    *,
    depth: int = 1,
    token_cap: int = 4000,
    include_messages: bool = True,
    estimate: TokenEstimator = estimate_tokens,
) -> Expansion:
    """Walk from a summary down to its sources, breadth first, ``depth`` levels deep.

    A condensed summary expands into the summaries it was built from; a leaf
    expands into its source messages (verbatim). Output stops at ``token_cap``
    tokens: the node that crosses the cap is clipped and ``truncated`` is set,
    so the caller knows to expand a narrower id instead.
    """
    if depth < 1:
        raise InputError("depth must be 1 or more")
    if token_cap < 1:
        raise InputError("token cap must be 1 or more")
    root = repos.summaries.get(summary_id)
    if root is None:
        raise NotFoundError(f"no summary {summary_id}")
    expansion = Expansion(root=root)
    frontier = [root]
    for level in range(1, depth + 1):
        next_frontier: list[Summary] = []
        for summary in frontier:
            if summary.kind == "condensed":
                for child_id in repos.summaries.source_summary_ids(summary.id):
                    child = repos.summaries.get(child_id)
                    if child is None:
                        continue
                    if not _add(expansion, _summary_node(child, level), token_cap, estimate):
                        return expansion
                    next_frontier.append(child)
            elif include_messages:
                messages = repos.messages.get_many(repos.summaries.source_message_ids(summary.id))
                for message in messages:
                    if not _add(expansion, _message_node(message, level), token_cap, estimate):
                        return expansion
        frontier = next_frontier
        if not frontier:
            break
    return expansion


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


def _add(expansion: Expansion, node: ExpandedNode, cap: int, estimate: TokenEstimator) -> bool:
    """Append ``node`` within the cap; False once the cap is reached."""
    remaining = cap - expansion.token_count
    tokens = estimate(node.content)
    if tokens > remaining:
        keep_chars = max(0, remaining * 4 - 40)
        if keep_chars > 0:
            node.content = node.content[:keep_chars] + " …[clipped: expand a narrower id]"
            node.clipped = True
            node.token_count = estimate(node.content)
            expansion.nodes.append(node)
            expansion.token_count += node.token_count
        expansion.truncated = True
        return False
    node.token_count = tokens
    expansion.nodes.append(node)
    expansion.token_count += tokens
    return True
