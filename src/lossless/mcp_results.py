"""The result types of the MCP tools: what each tool returns, as typed data.

The SDK turns these return annotations into each tool's ``outputSchema`` and
validates every result against it before it goes on the wire, so a client
(and the model) can rely on the shape. ``typing_extensions.TypedDict``
because pydantic needs it below Python 3.12; imported only by the SDK path
of the server (``mcp_server``), never by the stdio front that answers
``initialize``.
"""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

Mode = Literal["regex", "full_text", "hybrid"]


class Hit(TypedDict):
    """One message or summary that matched."""

    id: str
    kind: Literal["message", "summary"]
    role: str | None
    created_at: str | None
    session_id: str | None
    project: str | None
    conversation_id: int
    covering_summary_id: str | None
    snippet: str


class GrepResult(TypedDict):
    pattern: str
    mode: Mode
    project: str
    searched: str
    hits: list[Hit]
    next_offset: int | None
    hint: str
    complete: NotRequired[bool]
    note: NotRequired[str]


class RankedHit(TypedDict):
    """A search hit: a message, summary, large file or durable memory (mem_), best first.

    ``matched`` says why: ``lexical`` (its words), ``semantic`` (its meaning), or both.
    """

    id: str
    kind: Literal["memory", "message", "summary", "file"]
    score: float
    matched: list[Literal["lexical", "semantic"]]
    created_at: str | None
    session_id: str | None
    project: str | None
    conversation_id: int | None
    covering_summary_id: str | None
    tags: list[str]
    snippet: str


class SearchResult(TypedDict):
    query: str
    mode: Mode
    project: str
    searched: str
    hits: list[RankedHit] | list[Hit]
    next_offset: int | None
    hint: str
    complete: NotRequired[bool]
    note: NotRequired[str]
    semantic: NotRequired[str | None]


class StoreResult(TypedDict):
    id: str
    created: bool
    project: str
    tags: list[str]
    confidence: float
    note: str


class PartInfo(TypedDict):
    kind: str
    tool_name: NotRequired[str]
    tool_call_id: NotRequired[str]


class DescribeResult(TypedDict):
    """A message, summary or file: common fields, then those of its kind."""

    kind: Literal["message", "summary", "file"]
    id: str
    token_count: int
    content: str
    content_offset: int
    content_chars: int
    truncated: bool
    next_offset: int | None
    conversation_id: NotRequired[int]
    session_id: NotRequired[str | None]
    # message
    role: NotRequired[str]
    created_at: NotRequired[str | None]
    seq: NotRequired[int]
    project: NotRequired[str | None]
    covering_summary_id: NotRequired[str | None]
    parts: NotRequired[list[PartInfo]]
    # summary
    summary_kind: NotRequired[str]
    depth: NotRequired[int]
    earliest_at: NotRequired[str | None]
    latest_at: NotRequired[str | None]
    source_summary_ids: NotRequired[list[str]]
    source_message_count: NotRequired[int]
    source_message_range: NotRequired[list[str] | None]
    condensed_into: NotRequired[str | None]
    # file
    name: NotRequired[str | None]
    media_type: NotRequired[str | None]
    byte_size: NotRequired[int]
    exploration_summary: NotRequired[str | None]


class ExpandedNode(TypedDict):
    kind: Literal["summary", "message"]
    id: str
    level: int
    depth: int | None
    role: str | None
    created_at: str | None
    token_count: int
    clipped: bool
    offset: int
    content: str


class RootSummary(TypedDict):
    kind: str
    depth: int
    earliest_at: str | None
    latest_at: str | None


class ExpandResult(TypedDict):
    root: str
    truncated: bool
    cursor: str | None
    before_cursor: str | None
    position: int
    total_nodes: int
    messages_total: int
    levels: int
    depth: int | None
    around: int | None
    token_count: int
    cited_ids: list[str]
    nodes: list[ExpandedNode]
    root_summary: RootSummary
    hint: NotRequired[str]


class EvidenceItem(TypedDict):
    id: str
    kind: Literal["message", "summary"]
    relation: Literal["match", "context", "summary"]
    session_id: str | None
    when: str | None
    text: str


class SubagentTokens(TypedDict):
    input: int
    output: int


class ExpandQueryResult(TypedDict):
    """An answer (mode "answer") or the evidence to read (mode "evidence")."""

    question: str
    project: str
    mode: Literal["answer", "evidence"]
    truncated: bool
    evidence_tokens: int
    answer: str | None
    cited_ids: list[str]
    subagent_error: NotRequired[str]
    note: NotRequired[str]
    evidence: NotRequired[list[EvidenceItem]]
    evidence_ids: NotRequired[list[str]]
    subagent: NotRequired[str | None]
    subagent_tokens: NotRequired[SubagentTokens]


class StoreInfo(TypedDict):
    backend: str
    home: str
    conversations: int
    messages: int
    summaries: int


class StatusResult(TypedDict):
    project: str
    conversations: int
    messages: int
    summaries: int
    context_tokens: int
    newest_session: str | None
    compaction_pending: list[int]
    compaction_errors: dict[str, str]
    worker_pid: int | None
    summarizer: str
    expand_query_mode: Literal["answer", "evidence"]
    store: StoreInfo
