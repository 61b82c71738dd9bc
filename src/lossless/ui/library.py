"""The store's other contents: memories, large files, jobs, and its health.

Each list is paged on the server; nothing here reads message contents.
"""

from __future__ import annotations

import time
from typing import Any

from lossless.engine.compaction_requests import LAST_ERROR, REQUESTED_AT, is_pending
from lossless.engine.engine import Engine
from lossless.engine.retrieval import FileDescription
from lossless.engine.sensitive import redaction_totals
from lossless.errors import InputError
from lossless.models import LargeFile
from lossless.process import running_worker_pid

MAX_PAGE = 200
# How much of a large file's content the page shows (the rest: `lcm describe`).
FILE_PREVIEW_CHARS = 200_000


def _page_bounds(offset: int, limit: int) -> None:
    if offset < 0 or not 1 <= limit <= MAX_PAGE:
        raise InputError(f"offset must be 0 or more and limit 1..{MAX_PAGE}")


def memories(
    engine: Engine,
    *,
    project: str | None,
    archived: bool,
    query: str,
    offset: int,
    limit: int,
) -> dict[str, Any]:
    _page_bounds(offset, limit)
    found = engine.store.memory.list(project=project or None, include_archived=archived)
    if query:
        needle = query.casefold()
        found = [m for m in found if needle in m.text.casefold() or needle in " ".join(m.tags)]
    found.sort(key=lambda m: (m.created_at, m.id), reverse=True)
    page = found[offset : offset + limit]
    return {
        "total": len(found),
        "offset": offset,
        "items": [
            {
                "id": m.id,
                "project": m.project,
                "text": m.text,
                "tags": list(m.tags),
                "confidence": m.confidence,
                "source_summary_id": m.source_summary_id,
                "source_conversation_id": m.source_conversation_id,
                "created_at": m.created_at,
                "surfaced_count": m.surfaced_count,
                "used_count": m.used_count,
                "last_used_at": m.last_used_at,
                "archived": m.archived,
            }
            for m in page
        ],
    }


# Conversations whose files one query reads while walking the list.
FILE_WALK_BATCH = 500


def _file_order(f: LargeFile) -> tuple[str, str]:
    return (f.created_at, f.id)


def large_files(engine: Engine, *, cursor: int, limit: int) -> dict[str, Any]:
    """Stored files, newest conversation first. ``cursor`` is how many
    conversations earlier pages walked (the store lists files per conversation)."""
    _page_bounds(cursor, limit)
    conversations = engine.store.conversations.list()
    conversations.reverse()
    items: list[dict[str, Any]] = []
    position = cursor
    while position < len(conversations) and len(items) < limit:
        # The files of the next conversations in one query, not one per conversation
        # (most have none; a store of many sessions would walk thousands).
        batch = conversations[position : position + FILE_WALK_BATCH]
        by_conversation: dict[int, list[LargeFile]] = {}
        for f in engine.store.files.list_all([c.id for c in batch]):
            by_conversation.setdefault(f.conversation_id, []).append(f)
        for conversation in batch:
            if len(items) >= limit:
                break
            position += 1
            for f in sorted(by_conversation.get(conversation.id, []), key=_file_order):
                items.append(
                    {
                        "id": f.id,
                        "conversation_id": f.conversation_id,
                        "session_id": conversation.session_id,
                        "message_id": f.message_id,
                        "name": f.original_name,
                        "media_type": f.media_type,
                        "byte_size": f.byte_size,
                        "token_count": f.token_count,
                        "exploration_summary": f.exploration_summary,
                        "created_at": f.created_at,
                    }
                )
    return {
        "items": items,
        "next_cursor": position if position < len(conversations) else None,
        "conversations_walked": position,
        "conversations": len(conversations),
    }


def file_detail(engine: Engine, file_id: str) -> dict[str, Any]:
    found = engine.describe(file_id)
    if not isinstance(found, FileDescription):
        raise InputError(f"{file_id!r} is not a file id (file_...)")
    content = found.content or ""
    return {
        "id": found.file.id,
        "conversation_id": found.file.conversation_id,
        "message_id": found.file.message_id,
        "name": found.file.original_name,
        "media_type": found.file.media_type,
        "byte_size": found.file.byte_size,
        "token_count": found.file.token_count,
        "exploration_summary": found.file.exploration_summary,
        "content": content[:FILE_PREVIEW_CHARS],
        "clipped": len(content) > FILE_PREVIEW_CHARS,
        "error": found.error,
    }


def _compaction_queue(engine: Engine) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    pending = []
    failed = []
    now = time.time()
    for c in engine.store.conversations.list():
        meta = c.metadata or {}
        if is_pending(c):
            requested = float(meta.get(REQUESTED_AT) or now)
            pending.append(
                {"id": c.id, "session_id": c.session_id, "waiting_s": round(now - requested)}
            )
        if meta.get(LAST_ERROR):
            failed.append({"id": c.id, "session_id": c.session_id, "error": meta[LAST_ERROR]})
    return pending, failed


def jobs(engine: Engine) -> dict[str, Any]:
    """The ``lcm map`` jobs (newest first, with counts, usage and cost) and the compaction queue."""
    from lossless.engine.operators import jobs as map_jobs

    pending, failed = _compaction_queue(engine)
    reports = [map_jobs.report(engine, job.id) for job in engine.store.map_jobs.list(limit=50)]
    return {
        "map": {"available": True, "reason": "", "jobs": [r.as_dict() for r in reports]},
        "compaction": {
            "pending": pending,
            "failed": failed,
            "worker_pid": running_worker_pid(engine.config.home),
        },
    }


def store_label(engine: Engine) -> dict[str, Any]:
    """Which store this server shows (every page says it)."""
    info = engine.store.info()
    where = info.get("path") or info.get("dsn") or info.get("database") or ""
    return {
        "backend": engine.store.backend,
        "where": str(where),
        "home": str(engine.config.home),
    }


def store_figures(engine: Engine) -> dict[str, Any]:
    """The store's counts and token totals (``lcm status``'s figures).

    Asked for on their own: the message token total sums every message row,
    seconds on a store of a million messages, and the rest of the health page
    does not wait for it (nor, on another reader, does any other page).
    """
    from lossless.jsonable import to_jsonable

    result: dict[str, Any] = to_jsonable(engine.store.stats())
    return result


def health(engine: Engine, *, with_doctor: bool) -> dict[str, Any]:
    """Backlogs, the compaction queue, the worker and (asked for) the doctor's checks."""
    from lossless.jsonable import to_jsonable

    store = engine.store
    pending, failed = _compaction_queue(engine)
    data: dict[str, Any] = {
        "store": to_jsonable(store.info()),
        "substring_index_backlog": store.search.index_backlog(),
        "compaction_pending": len(pending),
        "compaction_failed": len(failed),
        "worker_pid": running_worker_pid(engine.config.home),
        "redactions": redaction_totals(store),
        "capabilities": to_jsonable(store.capabilities),
        "doctor": None,
    }
    if with_doctor:
        from lossless.doctor import check_hook_log, check_store_and_worker, check_summarizer

        checks = [
            *check_store_and_worker(engine.config),
            *check_summarizer(engine.config),
            *check_hook_log(engine.config),
        ]
        data["doctor"] = [
            {"area": c.area, "name": c.name, "status": c.status, "detail": c.detail, "fix": c.fix}
            for c in checks
        ]
    return data
