"""What every backend does the same way with rows: input checks, row -> model, hit order.

No SQL here: a row is any mapping from column name to value (``sqlite3.Row``,
psycopg's ``dict_row``). ``decode`` turns a JSON column's value into Python:
SQLite hands back text, PostgreSQL an already-decoded value.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from lossless.errors import InputError
from lossless.models import (
    JSON,
    ContextItem,
    Conversation,
    LargeFile,
    Message,
    NativeRecord,
    NewLargeFile,
    NewSummary,
    Part,
    QuarantinedLine,
    SearchHit,
    SourceCursor,
    Summary,
)
from lossless.store.contract import GrepHits, Memory, StoreStats
from lossless.timeutil import utc_now_iso

if TYPE_CHECKING:
    from uuid import UUID

    # Built only by the map jobs' repositories (imported when first used).
    from lossless.store.map_jobs import MapItem, MapJob


class Row(Protocol):
    def __getitem__(self, key: str, /) -> Any: ...


Decode = Callable[[Any], Any]


def random_uuid() -> UUID:
    """A random UUID; ``uuid`` (which loads ``platform``) is imported only when one is made,
    which a hook that only appends messages never does."""
    import uuid

    return uuid.uuid4()


def check_text(value: str | None, what: str) -> None:
    """Refuse text no backend can store faithfully, before any SQL is sent."""
    if value is None:
        return
    if "\x00" in value:
        raise InputError(f"{what} contains U+0000 (NUL), which lossless does not store")
    if value.isascii():  # a flag CPython keeps: no copy, and no surrogate in ASCII
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{what} contains a lone UTF-16 surrogate (invalid Unicode)") from None


def dumps_json(value: JSON | None) -> str | None:
    if value is None:
        return None
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    check_text(text, "metadata")
    return text


def conversation(row: Row, decode: Decode) -> Conversation:
    return Conversation(
        id=row["id"],
        project=row["project"],
        session_id=row["session_id"],
        client=row["client"],
        created_at=row["created_at"],
        title=row["title"],
        parent_id=row["parent_id"],
        metadata=decode(row["metadata"]) or {},
    )


def message(row: Row, decode: Decode) -> Message:
    return Message(
        id=row["id"],
        conversation_id=row["conversation_id"],
        seq=row["seq"],
        role=row["role"],
        content=row["content"],
        token_count=row["token_count"],
        created_at=row["created_at"],
        ingest_key=row["ingest_key"],
        metadata=decode(row["metadata"]),
    )


def part(row: Row, decode: Decode) -> Part:
    return Part(
        message_id=row["message_id"],
        ordinal=row["ordinal"],
        kind=row["kind"],
        text=row["text"],
        tool_name=row["tool_name"],
        tool_call_id=row["tool_call_id"],
        metadata=decode(row["metadata"]),
    )


def native_record(row: Row, raw: str) -> NativeRecord:
    """A native record row; ``raw`` is its line as text (a backend may store it packed)."""
    return NativeRecord(
        id=row["id"],
        conversation_id=row["conversation_id"],
        message_id=row["message_id"],
        native_key=row["native_key"],
        record_type=row["record_type"],
        raw=raw,
        source_path=row["source_path"],
        line_no=row["line_no"],
        byte_offset=row["byte_offset"],
    )


def context_item(row: Row) -> ContextItem:
    return ContextItem(
        conversation_id=row["conversation_id"],
        ordinal=row["ordinal"],
        item_type=row["item_type"],
        message_id=row["message_id"],
        summary_id=row["summary_id"],
        token_count=row["token_count"],
    )


def quarantined_line(row: Row) -> QuarantinedLine:
    return QuarantinedLine(
        id=row["id"],
        source_path=row["source_path"],
        line_no=row["line_no"],
        byte_offset=row["byte_offset"],
        error=row["error"],
        raw=bytes(row["raw"]),
        created_at=row["created_at"],
    )


def source_cursor(row: Row) -> SourceCursor:
    return SourceCursor(
        source_path=row["source_path"],
        conversation_id=row["conversation_id"],
        byte_offset=row["byte_offset"],
        line_no=row["line_no"],
        anchor_key=row["anchor_key"],
        anchor_sha256=row["anchor_sha256"],
        updated_at=row["updated_at"],
    )


def iter_in_pages(page: Callable[[int, int], Sequence[Message]], batch: int) -> Iterator[Message]:
    """Every message ``page(after_seq, limit)`` returns, page after page, in seq order."""
    after = -1
    while True:
        found = page(after, batch)
        if not found:
            return
        yield from found
        after = found[-1].seq


def summary(row: Row, decode: Decode) -> Summary:
    return Summary(
        id=row["id"],
        conversation_id=row["conversation_id"],
        kind=row["kind"],
        depth=row["depth"],
        content=row["content"],
        token_count=row["token_count"],
        earliest_at=row["earliest_at"],
        latest_at=row["latest_at"],
        descendant_count=row["descendant_count"],
        source_token_count=row["source_token_count"],
        created_at=row["created_at"],
        file_ids=tuple(decode(row["file_ids"]) or ()),
        metadata=decode(row["metadata"]),
    )


def new_summary(summary: NewSummary) -> Summary:
    """The stored form of a new summary: a fresh ``sum_`` id and creation time.

    The id is 16 hex characters of a SHA-256 over content, time and a random
    UUID, so two summaries of the same text never collide.
    """
    created_at = utc_now_iso()
    import hashlib  # not at the top: reading a store needs no hashlib (~2 ms of OpenSSL)

    digest = hashlib.sha256(f"{summary.content}\x1f{created_at}\x1f{random_uuid()}".encode())
    fields = {f.name: getattr(summary, f.name) for f in dataclasses.fields(summary)}
    fields["file_ids"] = tuple(summary.file_ids)
    return Summary(id=f"sum_{digest.hexdigest()[:16]}", created_at=created_at, **fields)


def new_large_file(large_file: NewLargeFile) -> LargeFile:
    """The stored form of a new large file: a fresh ``file_`` id and creation time."""
    fields = {f.name: getattr(large_file, f.name) for f in dataclasses.fields(large_file)}
    return LargeFile(id=f"file_{random_uuid().hex[:16]}", created_at=utc_now_iso(), **fields)


def large_file(row: Row) -> LargeFile:
    return LargeFile(
        id=row["id"],
        conversation_id=row["conversation_id"],
        message_id=row["message_id"],
        path=row["path"],
        byte_size=row["byte_size"],
        token_count=row["token_count"],
        sha256=row["sha256"],
        media_type=row["media_type"],
        exploration_summary=row["exploration_summary"],
        original_name=row["original_name"],
        created_at=row["created_at"],
    )


def memory(row: Row, decode: Decode) -> Memory:
    return Memory(
        id=row["id"],
        project=row["project"],
        text=row["text"],
        tags=tuple(decode(row["tags"]) or ()),
        confidence=float(row["confidence"]),
        source_summary_id=row["source_summary_id"],
        source_conversation_id=row["source_conversation_id"],
        created_at=row["created_at"],
        text_hash=row["text_hash"],
        last_surfaced_at=row["last_surfaced_at"],
        last_used_at=row["last_used_at"],
        surfaced_count=int(row["surfaced_count"]),
        used_count=int(row["used_count"]),
        archived=bool(row["archived"]),
    )


def merged_memories(kept: Memory, dropped: Memory, dropped_tags: Sequence[str]) -> Memory:
    """``kept`` after absorbing ``dropped`` (``MemoryRepository.rewrite``: the
    two now say the same thing). Still visible if either was: a fact that
    could be recalled before a purge must not vanish because of it."""

    def later(a: str | None, b: str | None) -> str | None:
        return max((t for t in (a, b) if t is not None), default=None)

    return dataclasses.replace(
        kept,
        tags=tuple(clean_tags([*kept.tags, *dropped_tags])),
        confidence=max(kept.confidence, dropped.confidence),
        last_surfaced_at=later(kept.last_surfaced_at, dropped.last_surfaced_at),
        last_used_at=later(kept.last_used_at, dropped.last_used_at),
        surfaced_count=kept.surfaced_count + dropped.surfaced_count,
        used_count=kept.used_count + dropped.used_count,
        archived=kept.archived and dropped.archived,
    )


def clean_tags(tags: Sequence[str]) -> list[str]:
    """Tags with whitespace collapsed, empty ones dropped, first occurrence kept."""
    cleaned: dict[str, None] = {}
    for tag in tags:
        check_text(tag, "memory tag")
        text = " ".join(tag.split())
        if text:
            cleaned[text] = None
    return list(cleaned)


def one_line(text: str) -> str:
    return " ".join(text.split())


def numeric_id(hit: SearchHit) -> int:
    return int(hit.id) if hit.kind == "message" else 0


def with_cover(hit: SearchHit, summary_id: str | None) -> SearchHit:
    return hit if summary_id is None else dataclasses.replace(hit, covering_summary_id=summary_id)


def ranked_hits(
    hits: list[SearchHit],
    *,
    full_text: bool,
    limit: int,
    covering: Callable[[list[int]], dict[int, str]],
    stopped_at: str | None,
) -> GrepHits:
    """One grep's page in the contract's order (``GrepQuery``), each message hit
    naming the leaf summary that covers it (``covering`` maps message ids)."""
    # Stable sorts, least significant key first: id, then time, then rank.
    hits.sort(key=numeric_id, reverse=True)
    hits.sort(key=lambda h: h.created_at or "", reverse=True)
    if full_text:
        hits.sort(key=lambda h: h.rank)
    hits = hits[:limit]
    message_ids = [int(h.id) for h in hits if h.kind == "message"]
    cover = covering(message_ids) if message_ids else {}
    return GrepHits(
        (with_cover(h, cover.get(int(h.id))) if h.kind == "message" else h for h in hits),
        complete=stopped_at is None,
        scanned_until=stopped_at,
    )


def store_stats(row: Row, by_client: dict[str, int]) -> StoreStats:
    """``StoreStats`` from one row with a column per count."""
    return StoreStats(
        conversations=int(row["conversations"]),
        messages=int(row["messages"]),
        parts=int(row["parts"]),
        native_records=int(row["native_records"]),
        summaries=int(row["summaries"]),
        context_items=int(row["context_items"]),
        large_files=int(row["large_files"]),
        quarantined=int(row["quarantined"]),
        message_tokens=int(row["message_tokens"]),
        summary_tokens=int(row["summary_tokens"]),
        context_tokens=int(row["context_tokens"]),
        by_client=by_client,
    )


def map_job(row: Any, decode: Callable[[Any], Any]) -> MapJob:
    """A ``map_jobs`` row; ``decode`` turns the stored spec into JSON."""
    from lossless.store.map_jobs import MapJob

    return MapJob(
        id=row["id"],
        kind=row["kind"],
        status=row["status"],
        project=row["project"],
        spec=decode(row["spec"]),
        conversation_id=row["conversation_id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        loaded_items=int(row["loaded_items"]),
    )


def map_item(row: Any) -> MapItem:
    from lossless.store.map_jobs import MapItem

    return MapItem(
        job_id=row["job_id"],
        index=int(row["idx"]),
        line_no=int(row["line_no"]),
        input=row["input"],
        status=row["status"],
        attempts=int(row["attempts"]),
        result=row["result"],
        error=row["error"],
        calls=int(row["calls"]),
        input_tokens=int(row["input_tokens"]),
        output_tokens=int(row["output_tokens"]),
        message_id=row["message_id"],
        updated_at=row["updated_at"],
    )
