"""Domain records shared by sources, the engine and every storage backend.

Plain frozen dataclasses: no behaviour, no SQL, no driver types. ``New*`` records
are what callers hand to the store; the others are what the store returns.

Every class has a docstring: for one without, ``@dataclass`` computes
``inspect.signature`` at import to write one, and every hook imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant", "system", "tool"]
ROLES: tuple[Role, ...] = ("user", "assistant", "system", "tool")

PartKind = Literal["text", "tool_use", "tool_result", "reasoning", "image", "file", "other"]
PART_KINDS: tuple[PartKind, ...] = (
    "text",
    "tool_use",
    "tool_result",
    "reasoning",
    "image",
    "file",
    "other",
)

Client = Literal["claude-code", "codex", "generic", "api", "map"]
SummaryKind = Literal["leaf", "condensed"]
ItemType = Literal["message", "summary"]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class NewPart:
    """One structured block of a message, in the order the client produced it.

    ``text`` is the block's searchable text: the prose of a text/reasoning block,
    the JSON-encoded input of a tool_use, the flattened output of a tool_result.
    ``metadata`` is opaque to the store: whatever the source needs to rebuild the
    original block (ids, is_error, signatures, media types, original shapes).
    """

    kind: PartKind
    text: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    metadata: JSON | None = None


@dataclass(frozen=True, slots=True)
class NewNativeRecord:
    """One line of a client-native transcript, kept verbatim for provenance."""

    native_key: str
    record_type: str
    raw: str
    source_path: str | None = None
    line_no: int | None = None
    byte_offset: int | None = None


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to append to a conversation.

    ``ingest_key`` makes appends idempotent: a message whose key is already
    stored in the conversation is skipped, never duplicated.
    """

    role: Role
    content: str
    parts: tuple[NewPart, ...] = ()
    created_at: str | None = None
    ingest_key: str | None = None
    token_count: int | None = None
    metadata: JSON | None = None
    native_records: tuple[NewNativeRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class Conversation:
    """A stored conversation: one client session in one project."""

    id: int
    project: str
    session_id: str
    client: str
    created_at: str
    title: str | None = None
    parent_id: int | None = None
    metadata: JSON = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Part:
    """A stored ``NewPart``, numbered by ``ordinal`` within its message."""

    message_id: int
    ordinal: int
    kind: PartKind
    text: str | None
    tool_name: str | None
    tool_call_id: str | None
    metadata: JSON | None


@dataclass(frozen=True, slots=True)
class Message:
    """A stored message; ``seq`` orders it within its conversation."""

    id: int
    conversation_id: int
    seq: int
    role: Role
    content: str
    token_count: int
    created_at: str
    ingest_key: str | None
    metadata: JSON | None = None


@dataclass(frozen=True, slots=True)
class NativeRecord:
    """A stored ``NewNativeRecord``, linked to the message built from it (if any)."""

    id: int
    conversation_id: int
    message_id: int | None
    native_key: str
    record_type: str
    raw: str
    source_path: str | None
    line_no: int | None
    byte_offset: int | None


@dataclass(frozen=True, slots=True)
class NewSummary:
    """A summary to store: a leaf (over messages) or a condensed one (over summaries)."""

    conversation_id: int
    kind: SummaryKind
    depth: int
    content: str
    token_count: int
    earliest_at: str | None
    latest_at: str | None
    descendant_count: int = 0
    source_token_count: int = 0
    file_ids: tuple[str, ...] = ()
    metadata: JSON | None = None


@dataclass(frozen=True, slots=True)
class Summary:
    """A stored summary, a node of its conversation's DAG."""

    id: str
    conversation_id: int
    kind: SummaryKind
    depth: int
    content: str
    token_count: int
    earliest_at: str | None
    latest_at: str | None
    descendant_count: int
    source_token_count: int
    created_at: str
    file_ids: tuple[str, ...] = ()
    metadata: JSON | None = None


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One entry of a conversation's active context: a message or a summary."""

    conversation_id: int
    ordinal: int
    item_type: ItemType
    message_id: int | None
    summary_id: str | None
    token_count: int


@dataclass(frozen=True, slots=True)
class ContextStats:
    """Counts and token sums of a conversation's active context, read without listing it."""

    items: int
    tokens: int
    summaries: int
    message_tokens: int


@dataclass(frozen=True, slots=True)
class NewLargeFile:
    """Content too large to keep inline, to store apart (``lcm describe file_...``)."""

    conversation_id: int
    path: str
    byte_size: int
    token_count: int
    sha256: str
    media_type: str
    exploration_summary: str
    message_id: int | None = None
    original_name: str | None = None


@dataclass(frozen=True, slots=True)
class LargeFile:
    """A stored ``NewLargeFile``."""

    id: str
    conversation_id: int
    message_id: int | None
    path: str
    byte_size: int
    token_count: int
    sha256: str
    media_type: str
    exploration_summary: str
    original_name: str | None
    created_at: str


@dataclass(frozen=True, slots=True)
class QuarantinedLine:
    """A transcript line that could not be parsed, kept verbatim."""

    id: int
    source_path: str
    line_no: int
    byte_offset: int
    error: str
    raw: bytes
    created_at: str


@dataclass(frozen=True, slots=True)
class SourceCursor:
    """How far a transcript file has been ingested, for incremental re-reads.

    ``anchor_key``/``anchor_sha256`` identify the last consumed line so a
    rewritten file (not a simple append) is detected and fully reconciled.
    """

    source_path: str
    conversation_id: int
    byte_offset: int
    line_no: int
    anchor_key: str | None
    anchor_sha256: str | None
    updated_at: str


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One grep/search result, from a message or a summary.

    A match inside a message's externalized large file is a message hit that
    also names the file and the character offset of the match in it.
    """

    kind: Literal["message", "summary"]
    id: str
    conversation_id: int
    role: str | None
    created_at: str | None
    snippet: str
    rank: float = 0.0
    seq: int | None = None
    session_id: str | None = None
    project: str | None = None
    covering_summary_id: str | None = None
    file_id: str | None = None
    file_offset: int | None = None
