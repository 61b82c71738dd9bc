"""The input checks every backend makes, on the same fields, before any SQL is sent.

One function per kind of input the contract takes: a backend calls it first,
so text no backend can store faithfully (U+0000, a lone surrogate) is an
``InputError`` naming the field on SQLite and PostgreSQL alike, whether it is
written or only looked up.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from lossless.models import LargeFile, NewMessage, NewNativeRecord, SourceCursor, Summary
from lossless.store.contract import Memory, NewMemory, PartRewrite
from lossless.store.rows import check_text, dumps_json

if TYPE_CHECKING:
    from lossless.store.map_jobs import MapOutcome, NewMapItem, NewMapJob


def check_all(fields: Iterable[tuple[str | None, str]]) -> None:
    """``check_text`` each (value, what) pair."""
    for value, what in fields:
        check_text(value, what)


def conversation(
    *, project: str, session_id: str, client: str, title: str | None, created_at: str | None
) -> None:
    check_all(
        (
            (project, "project"),
            (session_id, "session id"),
            (client, "client"),
            (title, "title"),
            (created_at, "created_at"),
        )
    )


def _all_storable(texts: list[str | None]) -> bool:
    """True when no text holds what ``check_text`` refuses, found in one pass.

    A message has a dozen text fields, almost always storable: one scan of
    them joined replaces a dozen calls (~10% of an import's store time). A
    lone surrogate stays lone when joined (Python never pairs them up), so
    the joined text fails to encode exactly when one of the texts does.
    """
    joined = "".join([t for t in texts if t is not None])
    if "\x00" in joined:
        return False
    if joined.isascii():
        return True
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def new_messages(messages: Sequence[NewMessage]) -> None:
    """Every text field of the messages, their parts and native records; metadata is JSON."""
    for m in messages:
        texts = [m.content, m.ingest_key, m.created_at]
        for p in m.parts:
            texts += (p.kind, p.text, p.tool_name, p.tool_call_id)
        for r in m.native_records:
            texts += (r.raw, r.native_key, r.record_type, r.source_path)
        if _all_storable(texts):
            if m.metadata is not None:
                dumps_json(m.metadata)
            for p in m.parts:
                if p.metadata is not None:
                    dumps_json(p.metadata)
            continue
        # Something is refused: the checks one by one name the field.
        check_text(m.content, "message content")
        check_text(m.ingest_key, "ingest key")
        check_text(m.created_at, "created_at")
        dumps_json(m.metadata)
        for p in m.parts:
            check_text(p.kind, "message part kind")
            check_text(p.text, "message part text")
            check_text(p.tool_name, "tool name")
            check_text(p.tool_call_id, "tool call id")
            dumps_json(p.metadata)
        native_records(m.native_records)


def native_records(records: Sequence[NewNativeRecord]) -> None:
    for r in records:
        check_text(r.raw, "native record")
        check_text(r.native_key, "native key")
        check_text(r.record_type, "native record type")
        check_text(r.source_path, "source path")


def message_rewrite(content: str, parts: Sequence[PartRewrite]) -> None:
    check_text(content, "message content")
    for p in parts:
        check_text(p.text, "message part text")


def restored_summary(summary: Summary, source_summary_ids: Sequence[str]) -> None:
    check_all(
        (
            (summary.id, "summary id"),
            (summary.content, "summary content"),
            (summary.earliest_at, "earliest_at"),
            (summary.latest_at, "latest_at"),
            (summary.created_at, "created_at"),
        )
    )
    for source_id in [*summary.file_ids, *source_summary_ids]:
        check_text(source_id, "summary or file id")


def restored_file(f: LargeFile) -> None:
    check_all(
        (
            (f.id, "file id"),
            (f.path, "path"),
            (f.sha256, "sha256"),
            (f.media_type, "media type"),
            (f.exploration_summary, "exploration summary"),
            (f.original_name, "original name"),
            (f.created_at, "created_at"),
        )
    )


def file_rewrite(*, file_id: str, path: str, sha256: str, exploration_summary: str) -> None:
    check_all(
        (
            (file_id, "file id"),
            (path, "path"),
            (sha256, "sha256"),
            (exploration_summary, "exploration summary"),
        )
    )


def cursor(c: SourceCursor) -> None:
    check_all(
        (
            (c.source_path, "source path"),
            (c.anchor_key, "anchor key"),
            (c.anchor_sha256, "anchor sha256"),
            (c.updated_at, "updated_at"),
        )
    )


def new_memory(memory: NewMemory, text: str) -> None:
    check_text(text, "memory text")
    check_text(memory.project, "project")
    check_text(memory.source_summary_id, "source summary id")
    check_text(memory.created_at, "created_at")


def restored_memory(memory: Memory) -> None:
    check_all(
        (
            (memory.id, "memory id"),
            (memory.project, "project"),
            (memory.text, "memory text"),
            (memory.source_summary_id, "source summary id"),
            (memory.created_at, "created_at"),
            (memory.last_surfaced_at, "surfaced time"),
            (memory.last_used_at, "used time"),
        )
    )


def map_job(job: NewMapJob) -> None:
    check_all(((job.id, "job id"), (job.project, "project"), (job.created_at, "created_at")))
    check_text(dumps_json(job.spec), "job spec")


def map_items(items: Sequence[NewMapItem]) -> None:
    for item in items:
        check_text(item.input, "map item input")
        check_text(item.problem, "map item problem")


def map_outcome(outcome: MapOutcome) -> None:
    check_text(outcome.result, "map result")
    check_text(outcome.error, "map error")
