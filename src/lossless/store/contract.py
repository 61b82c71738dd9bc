"""The storage contract: what the engine needs from a backend, and nothing else.

Every backend (``store.sqlite``, ``store.postgres``) implements these Protocols
and passes the same conformance suite (``tests/store/conformance.py``). No SQL,
connection or driver object crosses this boundary.

Transactions are explicit::

    with store.transaction() as tx:
        result = tx.messages.append(conversation.id, messages)
        tx.context.append_messages(conversation.id, result.inserted)

``tx`` has the same repositories as ``store``, bound to the transaction; leaving
the block commits, an exception rolls everything back and propagates. Opening a
transaction inside another raises ``NestedTransactionError``. A repository call
made outside any transaction is atomic on its own.

Text inputs containing U+0000 are refused with ``InputError`` by every backend
(PostgreSQL cannot store it, SQLite's full-text index would silently cut it).

Coordination between machines is optional. ``store.coordination`` is a
``Coordination`` (a shared job queue and the receipts of delivered outbox
events) on a backend many machines share, and None on one that only this
machine uses (SQLite: the worker scans conversation metadata and hooks never
capture offline). ``capabilities.distributed_coordination`` says the same
before anything is called. Callers test it and use the interfaces below;
none casts to a backend class::

    coordination = store.coordination
    if coordination is not None:
        coordination.jobs.enqueue("compact", conversation.id)

``tx.coordination`` inside a transaction is bound to it, so an event's
effect and its receipt commit together (see ``lossless.store.outbox``).
"""

from __future__ import annotations

import builtins
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from lossless.models import (
    JSON,
    ContextItem,
    ContextStats,
    Conversation,
    LargeFile,
    Message,
    NativeRecord,
    NewLargeFile,
    NewMessage,
    NewNativeRecord,
    NewSummary,
    Part,
    QuarantinedLine,
    SearchHit,
    SourceCursor,
    Summary,
)

if TYPE_CHECKING:
    # The map jobs' records are built only where a command uses them.
    from lossless.store.map_jobs import MapJobRepository

GrepMode = Literal["regex", "full_text"]
# How often a job is tried (a claim that expired counts) before it fails for good.
DEFAULT_JOB_ATTEMPTS = 5
GrepScope = Literal["messages", "summaries", "both"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a backend can do: the searches it runs, whether it coordinates several hosts."""

    full_text: bool = True
    regex: bool = True
    substring_index: bool = True
    distributed_coordination: bool = False
    # Vectors for semantic search: "exact" (a scan of every vector, SQLite),
    # "hnsw" (an approximate index, pgvector), or None (this server has no
    # vector support: search stays lexical).
    vector_search: Literal["exact", "hnsw"] | None = None
    # Why ``vector_search`` is None on this store and what would turn it on,
    # where the backend can tell (PostgreSQL: pgvector missing, or a privilege).
    vector_search_off: str | None = None


@dataclass(frozen=True, slots=True)
class AppendResult:
    """The messages an append stored, and how many it skipped as already stored."""

    inserted: list[Message]
    skipped: int


@dataclass(frozen=True, slots=True)
class GrepQuery:
    """A grep/search request. ``since`` is a canonical UTC timestamp string.

    Ordering contract: ``full_text`` hits are ranked best first (ties broken by
    newest first, then id); ``regex`` hits are newest first, then id descending.
    ``full_text`` matches any of the words; a backend may fill the page from
    the rows holding every word first (cheap to rank) and only then rank the
    rest, so a page is always best-first among what it returns.
    """

    pattern: str
    mode: GrepMode = "full_text"
    scope: GrepScope = "both"
    conversation_id: int | None = None
    session_id: str | None = None
    project: str | None = None
    since: str | None = None
    limit: int = 50
    # Regex only: stop scanning after this many seconds and return what was
    # found (newest first, so the recent past is always covered). None: no limit.
    time_budget_s: float | None = None


class GrepHits(list[SearchHit]):
    """The hits of one grep, and whether the search looked at everything.

    ``complete`` is False when a regex scan stopped at its time budget;
    ``scanned_until`` is then the time of the oldest message it reached:
    older messages were not searched.
    """

    def __init__(
        self,
        hits: Iterable[SearchHit] = (),
        *,
        complete: bool = True,
        scanned_until: str | None = None,
    ) -> None:
        super().__init__(hits)
        self.complete = complete
        self.scanned_until = scanned_until


@dataclass(frozen=True, slots=True)
class Lease:
    """A conversation's lease as taken: its holder, fencing token and end (epoch seconds)."""

    conversation_id: int
    owner: str
    fence: int
    expires_at: float


@dataclass(frozen=True, slots=True)
class LeaseHolder:
    """Who holds a conversation's lease now: epoch seconds it was taken and ends.

    ``since`` is None for a lease taken before the store recorded it.
    """

    owner: str
    fence: int
    since: float | None
    expires_at: float


@dataclass(frozen=True, slots=True)
class Job:
    """A claimed job: what to do, and the claim that entitles a worker to do it.

    ``fence`` grows with every claim of the job: a worker whose claim expired
    and was taken over cannot complete or fail the job any more.
    """

    id: int
    kind: str
    conversation_id: int | None
    payload: JSON
    attempts: int
    max_attempts: int
    owner: str
    fence: int
    expires_at: float


@dataclass(frozen=True, slots=True)
class PartRewrite:
    """New searchable text and metadata for one stored part (``MessageRepository.rewrite``)."""

    ordinal: int
    text: str | None
    metadata: JSON | None


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Counts over the whole store, or over one project's conversations
    (``Store.stats(project=...)``; ``quarantined`` is always store-wide: a
    line that could not be imported belongs to no conversation)."""

    conversations: int
    messages: int
    parts: int
    native_records: int
    summaries: int
    context_items: int
    large_files: int
    quarantined: int
    message_tokens: int
    summary_tokens: int
    # Tokens of the active context of every conversation counted.
    context_tokens: int
    by_client: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConversationOverview:
    """What a listing of conversations shows about one (``ConversationRepository.overview``).

    ``first_prompt`` is the start of the first user message (at most
    ``OVERVIEW_PROMPT_CHARS``); ``last_activity`` the newest message's time;
    ``max_depth`` None when the conversation has no summary yet.
    """

    messages: int = 0
    message_tokens: int = 0
    last_activity: str | None = None
    first_prompt: str | None = None
    summaries: int = 0
    max_depth: int | None = None
    context_tokens: int = 0


OVERVIEW_PROMPT_CHARS = 300


@dataclass(frozen=True, slots=True)
class ConversationListing:
    """What a page listing conversations shows about one
    (``ConversationRepository.listing``), read from indexes and the context
    rows only, never from the messages' rows: cheap for a conversation of
    any length.

    ``history_tokens`` is what the context stands for: its raw messages'
    tokens plus the source tokens of the summaries in it.
    """

    messages: int = 0
    last_activity: str | None = None
    summaries_by_depth: dict[int, int] = field(default_factory=dict)
    context_items: int = 0
    context_tokens: int = 0
    raw_in_context: int = 0
    history_tokens: int = 0


@dataclass(frozen=True, slots=True)
class EscalationTally:
    """``SummaryRepository.escalation``: ``levels`` maps normal / aggressive /
    fallback (and "unrecorded" for summaries written without the level) to
    counts; ``latest_*`` describe the newest summary that is not ``normal``."""

    levels: dict[str, int] = field(default_factory=dict)
    latest_level: str | None = None
    latest_at: str | None = None
    latest_why: str | None = None


class ConversationRepository(Protocol):
    def get_or_create(
        self,
        *,
        project: str,
        session_id: str,
        client: str,
        title: str | None = None,
        parent_id: int | None = None,
        metadata: JSON | None = None,
        created_at: str | None = None,
    ) -> Conversation:
        """Return the conversation for (project, client, session_id), creating it once."""
        ...

    def discard_if_empty(self, conversation_id: int) -> bool:
        """Delete a conversation that holds nothing at all; False (and kept) otherwise.

        For an import whose first write failed (a full disk) after it created
        the conversation: no empty row is left behind. A conversation with a
        message, a native record, a summary or anything else pointing at it
        is never deleted.
        """
        ...

    def get(self, conversation_id: int) -> Conversation | None: ...

    def find_by_session(
        self, session_id: str, *, project: str | None = None
    ) -> Conversation | None:
        """Newest conversation with exactly this session id (optionally in one project)."""
        ...

    def list(
        self, *, project: str | None = None, client: str | None = None, limit: int | None = None
    ) -> builtins.list[Conversation]:
        """Conversations ordered by created_at, then id."""
        ...

    def overview(self, conversation_ids: Sequence[int]) -> dict[int, ConversationOverview]:
        """Counts, last activity and first prompt of each conversation, in a
        fixed number of queries whatever the number of ids (unknown ids map to
        an empty overview)."""
        ...

    def listing(self, conversation_ids: Sequence[int]) -> dict[int, ConversationListing]:
        """The listing figures of each conversation, in a fixed number of queries
        whatever the number of ids (unknown ids map to an empty listing)."""
        ...

    def last_activity(self, conversation_ids: Sequence[int]) -> dict[int, str | None]:
        """The newest message's time of each conversation (None without messages):
        one index lookup per conversation, for sorting a whole store's list."""
        ...

    def update_metadata(self, conversation_id: int, metadata: JSON) -> None:
        """Merge ``metadata`` into the conversation's metadata (shallow)."""
        ...

    def rewrite(self, conversation_id: int, *, title: str | None, metadata: JSON) -> None:
        """Replace a conversation's title and its whole metadata, in place.

        Only for redacting what is already stored (``lcm sensitive purge``);
        project, session id, client and parent are kept. Raises
        ``NotFoundError`` for an unknown conversation.
        """
        ...


@dataclass(frozen=True, slots=True)
class HashedRow:
    """A stored row with the content hash recorded when it was written.

    ``fields`` are what ``lossless.store.hashing`` hashes for its ``kind``
    (message: role, content; part: kind, text, tool_name, tool_call_id;
    native_record: raw); ``recorded`` is None only if the hash column was
    emptied after the fact.
    """

    kind: Literal["message", "part", "native_record"]
    message_id: int | None
    ordinal: int | None
    record_id: int | None
    recorded: str | None
    fields: tuple[str | None, ...]


class MessageRepository(Protocol):
    def append(self, conversation_id: int, messages: Sequence[NewMessage]) -> AppendResult:
        """Append messages with contiguous ``seq`` values, their parts and native records.

        Idempotent: a message whose ``ingest_key`` is already stored in the
        conversation is skipped (counted in ``skipped``); native records whose
        ``native_key`` is already stored are skipped too. Atomic as a whole.
        """
        ...

    def add_native_records(self, conversation_id: int, records: Sequence[NewNativeRecord]) -> int:
        """Store records that belong to no message; returns how many were new."""
        ...

    def get(self, message_id: int) -> Message | None: ...

    def get_many(self, message_ids: Sequence[int]) -> builtins.list[Message]:
        """Messages with these ids, ordered by conversation then seq."""
        ...

    def list(
        self, conversation_id: int, *, after_seq: int | None = None, limit: int | None = None
    ) -> builtins.list[Message]:
        """Messages ordered by seq; ``after_seq`` is exclusive."""
        ...

    def iter_all(self, conversation_id: int, *, batch: int = 1000) -> Iterator[Message]: ...

    def parts(self, message_ids: Sequence[int]) -> dict[int, builtins.list[Part]]:
        """Parts of each message, ordered by ordinal (messages without parts map to [])."""
        ...

    def native_records(
        self, conversation_id: int, *, message_id: int | None = None
    ) -> builtins.list[NativeRecord]:
        """Native records in insertion order (optionally only one message's)."""
        ...

    def has_native_keys(self, conversation_id: int, keys: Sequence[str]) -> set[str]:
        """The subset of ``keys`` already stored for the conversation."""
        ...

    def native_raw_hashes(self, conversation_id: int, keys: Sequence[str]) -> dict[str, str | None]:
        """The raw hash recorded for each of ``keys`` already stored (to tell an
        unchanged line from one edited after it was imported)."""
        ...

    def native_records_by_key(
        self, conversation_id: int, keys: Sequence[str]
    ) -> dict[str, NativeRecord]:
        """The stored native records of ``keys`` (unknown keys are left out): how
        a transcript's ``parentUuid`` chain is followed through records that are
        not messages (progress, telemetry)."""
        ...

    def count(self, conversation_id: int | None = None) -> int: ...

    def count_by_conversation(self, conversation_ids: Sequence[int]) -> dict[int, int]:
        """Messages of each conversation, in one query (unknown ids map to 0)."""
        ...

    def last(self, conversation_id: int) -> Message | None: ...

    def high_water(self) -> int:
        """The largest message id in the store (0 when empty). Ids are handed out
        in order and never reused, so it changes whenever a message is added
        anywhere: a cheap version for figures cached over the whole store."""
        ...

    def rewrite(
        self,
        message_id: int,
        content: str,
        metadata: JSON | None,
        parts: Sequence[PartRewrite] = (),
    ) -> None:
        """Replace a stored message's content and metadata, and the text and
        metadata of the listed parts, in place.

        Only for redacting what is already stored (``lcm sensitive purge``):
        messages are otherwise immutable. Ids, seq, role, token counts and the
        other part columns are kept; full-text indexes follow the new text.
        Raises ``NotFoundError`` for an unknown message or part.
        """
        ...

    def rewrite_native_record(self, record_id: int, raw: str) -> None:
        """Replace a native record's raw line (redaction); ``NotFoundError`` if unknown."""
        ...

    def store_texts_once(self, conversation_id: int) -> int:
        """Re-store the conversation's parts and raw lines that were written in
        full (before migration 0010) as references to their message's texts
        where they repeat them (``lossless.store.stored_once``); what is read
        back stays byte-exact. A backend that keeps hashes as bytes (SQLite,
        ``lossless.store.hashing.stored``) also turns the hex text of rows
        hashed before into bytes. Returns the rows changed (``lcm gc``)."""
        ...

    def drop_native_records(self, *, created_before: str, dry_run: bool = False) -> int:
        """Delete the raw transcript lines of messages created before
        ``created_before`` (ISO 8601), keeping every message and part; records
        that belong to no message are kept. Returns how many were (or, with
        ``dry_run``, would be) deleted (``lcm gc --raw-older-than``)."""
        ...

    def hashed_rows(self, conversation_id: int) -> builtins.list[HashedRow]:
        """Every message, part and native record of the conversation with its
        recorded content hash (``lcm verify`` recomputes and compares)."""
        ...


class SummaryRepository(Protocol):
    def create(
        self,
        summary: NewSummary,
        *,
        message_ids: Sequence[int] = (),
        source_summary_ids: Sequence[str] = (),
    ) -> Summary:
        """Store a summary (id ``sum_`` + 16 hex) linked to the messages or summaries it covers."""
        ...

    def get(self, summary_id: str) -> Summary | None: ...

    def list(self, conversation_id: int, *, depth: int | None = None) -> builtins.list[Summary]:
        """Summaries in the order they were created."""
        ...

    def source_message_ids(self, summary_id: str) -> builtins.list[int]:
        """Messages a leaf summary was built from, in order."""
        ...

    def source_summary_ids(self, summary_id: str) -> builtins.list[str]:
        """Summaries a condensed summary was built from, in order (its ``<parents>``)."""
        ...

    def covering(self, message_ids: Sequence[int]) -> dict[int, str]:
        """For each message id, the leaf summary that covers it (if any)."""
        ...

    def condensed_into(self, summary_id: str) -> str | None:
        """The condensed summary this summary was merged into, if any."""
        ...

    def count_by_conversation(self, conversation_ids: Sequence[int]) -> dict[int, int]:
        """Summaries of each conversation, in one query (unknown ids map to 0)."""
        ...

    def escalation(self, *, project: str | None = None) -> EscalationTally:
        """Stored summaries by the escalation level that wrote them, and why the
        newest one below ``normal`` was not the model's first answer."""
        ...

    def rewrite(self, summary_id: str, content: str) -> None:
        """Replace a summary's content in place (redaction only; token count kept).

        Raises ``NotFoundError`` for an unknown summary.
        """
        ...

    def restore(
        self,
        summary: Summary,
        *,
        message_ids: Sequence[int] = (),
        source_summary_ids: Sequence[str] = (),
    ) -> bool:
        """Store ``summary`` exactly as given (its id and created_at too), with its links.

        For importing an export. Restored summaries keep their creation order
        as the order of calls. Returns False, changing nothing, if a summary
        with this id is already stored.
        """
        ...


class ContextRepository(Protocol):
    def list(self, conversation_id: int) -> builtins.list[ContextItem]:
        """Context items ordered by ordinal."""
        ...

    def summaries(self, conversation_id: int) -> builtins.list[Summary]:
        """The summaries in the context (what the model sees of the DAG), by ordinal,
        without listing its raw message items."""
        ...

    def append_messages(self, conversation_id: int, messages: Sequence[Message]) -> None: ...

    def replace_range(
        self, conversation_id: int, first_ordinal: int, last_ordinal: int, summary: Summary
    ) -> None:
        """Replace the items with ordinals in [first, last] by one summary item.

        Raises ``StoreError`` if the range does not match existing items.
        """
        ...

    def token_total(self, conversation_id: int) -> int: ...

    def stats(self, conversation_id: int) -> ContextStats:
        """Item count, token sum, summary count and raw-message token sum, kept by every
        context write: the cost does not grow with the conversation."""
        ...

    def newest(
        self, conversation_id: int, *, before_ordinal: int | None = None, limit: int
    ) -> builtins.list[ContextItem]:
        """Up to ``limit`` items just older than ``before_ordinal`` (the newest when None),
        ordered by ordinal: lets assembly read from the end back, never the whole context."""
        ...

    def tool_uses_before(
        self, conversation_id: int, call_ids: Sequence[str], before_ordinal: int
    ) -> set[str]:
        """Those of ``call_ids`` used by a tool_use part of a raw message item older
        than ``before_ordinal`` (a pair straddling the start of what assembly read)."""
        ...

    def prompt_candidates(
        self, conversation_id: int, *, before_ordinal: int, limit: int
    ) -> builtins.list[ContextItem]:
        """Up to ``limit`` items older than ``before_ordinal``, newest first, that are
        summaries or could be a user prompt: user-role messages with a part that is not
        a tool_result, or with no parts. A prefilter only: the caller decides."""
        ...

    def remove_messages(
        self, conversation_id: int, message_ids: Sequence[int]
    ) -> builtins.list[int]:
        """Take these messages' items out of the context (the messages stay
        stored); returns the ids whose items went (a message already folded into
        a summary has none). For an abandoned transcript branch."""
        ...

    def restore(self, conversation_id: int, items: Sequence[ContextItem]) -> None:
        """Make ``items`` (ordinals and token counts as given) the conversation's
        whole context, replacing what it had. For importing an export."""
        ...


class LargeFileRepository(Protocol):
    def create(self, large_file: NewLargeFile) -> LargeFile: ...

    def get(self, file_id: str) -> LargeFile | None: ...

    def list(self, conversation_id: int) -> builtins.list[LargeFile]: ...

    def list_all(self, conversation_ids: Sequence[int] | None = None) -> builtins.list[LargeFile]:
        """Every large file (or those of ``conversation_ids``), in one query."""
        ...

    def restore(self, large_file: LargeFile) -> bool:
        """Store ``large_file`` exactly as given (id, created_at ...); for imports.

        Returns False, changing nothing, if a file with this id is already stored.
        """
        ...

    def rewrite(
        self,
        file_id: str,
        *,
        path: str,
        sha256: str,
        byte_size: int,
        token_count: int,
        exploration_summary: str,
    ) -> LargeFile:
        """Point a stored file at new (redacted) content and summary, in place.

        Only for ``lcm sensitive purge``: the caller has already written the
        content at ``path``. Id, conversation, message, media type, original
        name and created_at are kept. Raises ``NotFoundError`` for an unknown id.
        """
        ...

    def paths_in_use(self, paths: Sequence[str]) -> set[str]:
        """The subset of ``paths`` that some stored file still points at."""
        ...


class SearchRepository(Protocol):
    def grep(self, query: GrepQuery) -> GrepHits:
        """Search messages and/or summaries; see ``GrepQuery`` for ordering.

        Raises ``InputError`` for an invalid regex or an empty pattern.
        """
        ...

    def index_backlog(self) -> int:
        """Messages stored but not yet in the substring (trigram) index.

        A backend may build that index behind the writes, so bulk imports are
        not bound by it. Grep results never depend on it (unindexed messages
        are scanned); only regex speed does. 0 where the index is maintained
        as rows are written.
        """
        ...

    def catch_up(self, max_rows: int) -> int:
        """Add up to ``max_rows`` of the backlog to the substring index, oldest
        first, in one transaction; how many were added."""
        ...


EmbeddingKind = Literal["message", "summary", "memory", "file"]
EMBEDDING_KINDS: tuple[EmbeddingKind, ...] = ("memory", "summary", "file", "message")


@dataclass(frozen=True, slots=True)
class EmbeddingSource:
    """A stored item that has no vector yet for a model: what to embed.

    ``text`` is the item's text (a message's content, a summary, a memory
    with its tags, a large file's exploration summary); ``path`` is a large
    file's content file, which the engine reads and chunks.
    """

    kind: EmbeddingKind
    ref: str
    conversation_id: int | None
    text: str
    path: str | None = None


@dataclass(frozen=True, slots=True)
class NewVector:
    """One chunk's unit vector; ``vector`` None records an item with nothing to embed."""

    kind: EmbeddingKind
    ref: str
    chunk: int
    conversation_id: int | None
    vector: tuple[float, ...] | None


@dataclass(frozen=True, slots=True)
class VectorHit:
    """An item near a query: its best chunk's cosine similarity."""

    kind: EmbeddingKind
    ref: str
    conversation_id: int | None
    score: float


@dataclass(frozen=True, slots=True)
class MessageNeighbour:
    """A message near another in its conversation, and its chunk-0 vector."""

    offset: int
    """Its ``seq`` minus the other's (0: the message itself)."""
    message_id: int
    vector: Sequence[float]


@dataclass(frozen=True, slots=True)
class EmbeddingProgress:
    """Items with and without vectors for one model, per kind."""

    embedded: dict[str, int]
    pending: dict[str, int]

    @property
    def total_pending(self) -> int:
        return sum(self.pending.values())

    @property
    def total(self) -> int:
        return self.total_pending + sum(self.embedded.values())


class VectorRepository(Protocol):
    """Embedding vectors of messages, summaries, memories and large files.

    Vectors are keyed by (model, kind, ref, chunk); every embedded item has a
    chunk 0 (with no vector when it had no text). A rewritten text
    (``lcm sensitive purge``) loses its vectors, so it is embedded again from
    the new text. Only on a store whose ``capabilities.vector_search`` is set.
    """

    def pending(
        self, model: str, *, limit: int, after_message_id: int = 0
    ) -> builtins.list[EmbeddingSource]:
        """Up to ``limit`` items without vectors: memories, summaries and files
        first, then messages with ids above ``after_message_id`` in id order."""
        ...

    def progress(self, model: str) -> EmbeddingProgress: ...

    def add(self, model: str, vectors: Sequence[NewVector]) -> int:
        """Store vectors (an item's chunks together); ones already stored are
        kept. How many were added."""
        ...

    def nearest(
        self,
        model: str,
        query: Sequence[float],
        *,
        limit: int,
        kinds: Sequence[EmbeddingKind] = EMBEDDING_KINDS,
        conversation_id: int | None = None,
        project: str | None = None,
    ) -> builtins.list[VectorHit]:
        """The ``limit`` items most similar to the unit vector ``query``, best
        first (an item scores by its best chunk). Archived memories are left out."""
        ...

    def similarities(
        self, model: str, query: Sequence[float], items: Sequence[tuple[EmbeddingKind, str]]
    ) -> dict[tuple[EmbeddingKind, str], float]:
        """Cosine of ``query`` with each given item that has a vector (best chunk)."""
        ...

    def neighbourhoods(
        self, model: str, message_ids: Sequence[int], *, before: int, after: int
    ) -> dict[int, builtins.list[MessageNeighbour]]:
        """Each message's own chunk-0 vector and those of the messages up to
        ``before`` earlier and ``after`` later in its conversation (by ``seq``),
        the ones that have a vector. Directions only: not necessarily unit length."""
        ...


class QuarantineRepository(Protocol):
    def add(
        self,
        *,
        source_path: str,
        line_no: int,
        byte_offset: int,
        error: str,
        raw: bytes,
        created_at: str | None = None,
    ) -> bool:
        """Keep a line that could not be imported; False if it was already kept.

        ``created_at`` defaults to now (an import from an export passes the original).
        """
        ...

    def list(
        self, *, source_path: str | None = None, limit: int = 100, after_id: int | None = None
    ) -> builtins.list[QuarantinedLine]:
        """Kept lines ordered by id; ``after_id`` (exclusive) pages through them."""
        ...

    def count(self) -> int: ...

    def rewrite(self, line_id: int, raw: bytes) -> None:
        """Replace a kept line's raw bytes (redaction).

        If the same file and line is already kept with exactly these bytes,
        this copy is dropped instead: they have become one line. Raises
        ``NotFoundError`` for an unknown id.
        """
        ...


class CursorRepository(Protocol):
    def get(self, source_path: str) -> SourceCursor | None: ...

    def put(self, cursor: SourceCursor) -> None: ...


class LeaseRepository(Protocol):
    def acquire(self, conversation_id: int, owner: str, ttl_s: float) -> Lease | None:
        """Take the conversation's lease if free or expired; None if someone else holds it.

        Each successful acquisition gets a strictly larger fencing token.
        Re-acquiring a lease one already holds extends it and keeps the token.
        """
        ...

    def renew(self, lease: Lease, ttl_s: float) -> Lease:
        """Extend a held lease; raises ``LeaseLostError`` if it was taken over."""
        ...

    def release(self, lease: Lease) -> None: ...

    def check(self, lease: Lease) -> None:
        """Raise ``LeaseLostError`` unless ``lease`` is still the current holder."""
        ...

    def holder(self, conversation_id: int) -> LeaseHolder | None:
        """The live holder of the conversation's lease, or None when it is free."""
        ...

    def take_over(
        self, conversation_id: int, holder: LeaseHolder, owner: str, ttl_s: float
    ) -> Lease | None:
        """Take a live lease from ``holder`` (known to be dead); a new, larger token.

        None when the lease moved on meanwhile (another process took it over,
        or ``holder`` released it): only the holder that was judged dead is
        replaced, never whoever holds it now.
        """
        ...


# -- durable memory ---------------------------------------------------------

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def normalize_memory_text(text: str) -> str:
    """The form two memories are compared in for de-duplication.

    NFKC, case-folded, every run of punctuation/whitespace collapsed to one
    space. So "Use uv, not pip." and "use uv not pip" are the same memory,
    while any change of words is a different one: cheap, predictable, and the
    same on every backend (no fuzzy threshold that could merge opposites such
    as "always X" / "never X").
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _NON_WORD.sub(" ", folded).strip()


def memory_text_hash(text: str) -> str:
    """SHA-256 (hex) of ``normalize_memory_text(text)``: the de-duplication key."""
    import hashlib  # not at the top: reading a store needs no hashlib (~2 ms of OpenSSL)

    return hashlib.sha256(normalize_memory_text(text).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A durable fact to keep for a project: a decision, a fix, a convention.

    ``confidence`` is in [0, 1]: 1.0 for what a user said to remember, lower
    for what was promoted automatically from summaries.
    """

    project: str
    text: str
    tags: tuple[str, ...] = ()
    confidence: float = 1.0
    source_summary_id: str | None = None
    source_conversation_id: int | None = None
    created_at: str | None = None


@dataclass(frozen=True, slots=True)
class Memory:
    """A stored memory of a project, with where it came from and how often it was used."""

    id: str
    project: str
    text: str
    tags: tuple[str, ...]
    confidence: float
    source_summary_id: str | None
    source_conversation_id: int | None
    created_at: str
    text_hash: str
    last_surfaced_at: str | None = None
    last_used_at: str | None = None
    surfaced_count: int = 0
    used_count: int = 0
    archived: bool = False


@dataclass(frozen=True, slots=True)
class MemoryWrite:
    """What ``MemoryRepository.create`` did: ``created`` is False for a duplicate."""

    memory: Memory
    created: bool


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """A memory matching a search. ``score`` is the backend's relevance (higher is
    better); it orders one result list and is not comparable across backends."""

    memory: Memory
    score: float


class MemoryRepository(Protocol):
    def create(self, memory: NewMemory) -> MemoryWrite:
        """Store a memory (id ``mem_`` + 16 hex), or return the near-duplicate.

        A near-duplicate is a memory of the same project whose
        ``memory_text_hash`` is equal (archived or not). It is returned with
        ``created=False``; if it is not archived, the new tags are appended to
        its tags and its confidence is raised to the new one if higher, so
        re-stating a fact reinforces it. An archived duplicate is returned
        unchanged: forgetting stays in force until ``revive``.

        Tags are stripped, empty ones dropped, duplicates removed (order kept).
        Raises ``InputError`` for empty text, confidence outside [0, 1], or a
        source summary/conversation that does not exist.
        """
        ...

    def get(self, memory_id: str) -> Memory | None: ...

    def list(
        self, *, project: str | None = None, include_archived: bool = False
    ) -> builtins.list[Memory]:
        """Memories ordered by created_at, then id."""
        ...

    def search(
        self,
        query: str,
        *,
        project: str | None = None,
        limit: int = 20,
        include_archived: bool = False,
    ) -> builtins.list[MemoryHit]:
        """Full-text search over text and tags; any word may match, best first.

        Ties are broken newest first, then by id. Raises ``InputError`` if
        ``query`` has no searchable words.
        """
        ...

    def archive(self, memory_id: str) -> Memory:
        """Hide a memory from listing, search and recall; raises ``NotFoundError``."""
        ...

    def revive(self, memory_id: str) -> Memory:
        """Undo ``archive``; raises ``NotFoundError``."""
        ...

    def record_surfaced(self, memory_ids: Sequence[str], at: str) -> None:
        """Count one surfacing of each memory (shown to an agent) at time ``at``.

        Unknown ids are ignored: a memory may be archived or gone by the time
        feedback arrives, and feedback must never fail the agent's turn.
        """
        ...

    def record_used(self, memory_id: str, at: str) -> Memory:
        """Count one use (the agent relied on it); raises ``NotFoundError``."""
        ...

    def rewrite(self, memory_id: str, text: str, tags: Sequence[str]) -> Memory:
        """Replace a memory's text and tags in place (redaction); returns it.

        Only for ``lcm sensitive purge``. The text is stored as given (after
        stripping) and ``text_hash`` is recomputed: the old hash is a
        fingerprint of the old text, secret included. Tags are cleaned as by
        ``create``. If another memory of the project already has the new
        hash, the two become one: that memory is kept, gains this one's tags,
        the higher confidence, the summed counters and the later timestamps,
        and is archived only if both were; this one is deleted and the kept
        one returned. Full-text search follows the new text.

        Raises ``NotFoundError`` for an unknown id, ``InputError`` for empty text.
        """
        ...

    def restore(self, memory: Memory) -> bool:
        """Store ``memory`` exactly as given: id, created_at, counters, archived.

        For importing an export. Returns False, changing nothing, if this id
        is already stored or the project already holds a memory with the
        same ``text_hash`` (the stored one stands). ``text_hash`` is
        recomputed from the text, never trusted.
        """
        ...


class JobQueue(Protocol):
    """A work queue shared by workers on many machines.

    N workers claiming at once get N different jobs and never wait on each
    other; a claim expires (by the server's clock) and is then claimed again
    with a larger fence, up to ``max_attempts``. A ready job for a
    conversation is not handed out while another job of the same kind for
    that conversation is running.
    """

    def enqueue(
        self,
        kind: str,
        conversation_id: int | None = None,
        payload: JSON | None = None,
        *,
        delay_s: float = 0.0,
        max_attempts: int = DEFAULT_JOB_ATTEMPTS,
    ) -> int | None:
        """Add a job; its id, or None if one of this kind already waits for the conversation."""
        ...

    def claim(
        self, owner: str, ttl_s: float, *, kinds: builtins.list[str] | None = None
    ) -> Job | None:
        """The oldest due job (or one whose claim expired), claimed for ``ttl_s`` seconds."""
        ...

    def renew(self, job: Job, ttl_s: float) -> Job:
        """Extend a claim; ``LeaseLostError`` if the job was claimed again since."""
        ...

    def complete(self, job: Job) -> None:
        """Record the job as done; ``LeaseLostError`` if this claim was superseded."""
        ...

    def fail(self, job: Job, error: str, *, retry_in_s: float | None = None) -> str:
        """Record a failed attempt; returns the job's new state (``ready`` or ``failed``)."""
        ...

    def counts(self) -> dict[str, int]:
        """Jobs per state (``ready``, ``running``, ``done``, ``failed``)."""
        ...

    def get(self, job_id: int) -> dict[str, Any] | None:
        """Everything recorded about a job (for diagnostics)."""
        ...


class ReceiptLog(Protocol):
    """Outbox events already delivered, keyed by (origin outbox, event id)."""

    def record(self, origin: str, event_id: str, kind: str, captured_at: str) -> bool:
        """Record an event as delivered; False if it already was (do not apply it again).

        Called inside the transaction that applies the event, a concurrent
        deliverer of the same event waits for that transaction, then sees
        the receipt.
        """
        ...

    def exists(self, origin: str, event_id: str) -> bool: ...

    def count(self, origin: str | None = None) -> int: ...


class Coordination(Protocol):
    """What many machines sharing one store coordinate through (optional)."""

    @property
    def jobs(self) -> JobQueue: ...
    @property
    def receipts(self) -> ReceiptLog: ...


class Repositories(Protocol):
    """The repositories of one store, bound to its connection or transaction."""

    @property
    def conversations(self) -> ConversationRepository: ...
    @property
    def messages(self) -> MessageRepository: ...
    @property
    def summaries(self) -> SummaryRepository: ...
    @property
    def context(self) -> ContextRepository: ...
    @property
    def files(self) -> LargeFileRepository: ...
    @property
    def search(self) -> SearchRepository: ...
    @property
    def quarantine(self) -> QuarantineRepository: ...
    @property
    def cursors(self) -> CursorRepository: ...
    @property
    def leases(self) -> LeaseRepository: ...
    @property
    def memory(self) -> MemoryRepository: ...
    @property
    def map_jobs(self) -> MapJobRepository: ...
    @property
    def vectors(self) -> VectorRepository: ...
    @property
    def coordination(self) -> Coordination | None:
        """The job queue and receipts, or None where the backend has none
        (``capabilities.distributed_coordination`` is then False)."""
        ...


class Store(Repositories, Protocol):
    backend: str
    capabilities: Capabilities

    def transaction(self) -> AbstractContextManager[Repositories]: ...

    def stats(self, *, project: str | None = None) -> StoreStats:
        """Counts in a fixed number of queries, whatever the store's size: over
        the whole store, or over the conversations of ``project``."""
        ...

    def info(self) -> dict[str, Any]:
        """Backend facts for ``lcm status``/``doctor`` (location, versions, migrations)."""
        ...

    def size_by_table(self) -> dict[str, int]:
        """Bytes each table takes, its indexes included (a full-text index counts
        as one table), largest first. Reads the storage's own accounting; no
        table is scanned."""
        ...

    def integrity_check(self) -> builtins.list[str]:
        """The backend's own consistency check of its files and indexes.

        Returns one line per problem found; an empty list means healthy.
        """
        ...

    def scrub(self) -> None:
        """Physically drop data no longer referenced, so rewritten text (an old
        secret) does not survive in free pages, index segments or logs.

        Slow and exclusive (SQLite: VACUUM; PostgreSQL: VACUUM FULL of the
        rewritable tables); run it after ``lcm sensitive purge``, never inside
        a transaction (``StoreError``).
        """
        ...

    def close(self) -> None: ...
