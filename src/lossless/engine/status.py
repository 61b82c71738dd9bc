"""What lossless holds and whether compaction keeps up: one report for every surface.

``lcm status`` and the MCP tool ``lcm_status`` both show ``Engine.status()``.
It costs a fixed number of queries whatever the store's size: the counts are
aggregates (``Store.stats``, scoped to a project when asked), and the one
conversation listing gives the pending requests, their errors and the
redaction totals.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lossless.engine.compaction_requests import LAST_ERROR, is_pending
from lossless.process import running_worker_pid

if TYPE_CHECKING:
    from lossless.engine.embedding import SemanticStatus
    from lossless.engine.engine import Engine
    from lossless.models import Conversation
    from lossless.store.contract import StoreStats


@dataclass(frozen=True, slots=True)
class Status:
    """The store (or one project of it) and its background work, as ``lcm status`` shows it."""

    home: str
    # None: the whole store.
    project: str | None
    backend: str
    # Backend facts (location, versions, migrations, pool): ``Store.info()``.
    store: dict[str, Any]
    stats: StoreStats
    # Secrets redacted so far, per category.
    redactions: dict[str, int]
    substring_index_backlog: int
    newest_session: str | None
    # Conversations with an unserved compaction request, and the last error per conversation.
    compaction_pending: list[int] = field(default_factory=list)
    compaction_errors: dict[int, str] = field(default_factory=dict)
    worker_pid: int | None = None
    summarizer: str = ""
    # What is wrong in the configuration (the valid settings are in use).
    config_problems: list[str] = field(default_factory=list)
    # Whether search is hybrid, and the embedding backlog (None: not asked).
    semantic: SemanticStatus | None = None


def engine_status(engine: Engine, *, project: str | None = None) -> Status:
    """See ``Engine.status``."""
    store = engine.store
    conversations = store.conversations.list(project=project)
    newest = max(conversations, key=lambda c: c.created_at, default=None)
    return Status(
        home=str(engine.config.home),
        project=project,
        backend=store.backend,
        store=store.info(),
        stats=store.stats(project=project),
        redactions=redaction_counts(conversations),
        substring_index_backlog=store.search.index_backlog(),
        newest_session=newest.session_id if newest else None,
        compaction_pending=[c.id for c in conversations if is_pending(c)],
        compaction_errors={
            c.id: str(c.metadata[LAST_ERROR]) for c in conversations if c.metadata.get(LAST_ERROR)
        },
        worker_pid=running_worker_pid(engine.config.home),
        summarizer=engine.config.summarizer_provider,
        config_problems=[p.describe() for p in engine.config.problems],
        semantic=engine.semantic_status(),
    )


def redaction_counts(conversations: Iterable[Conversation]) -> dict[str, int]:
    """Secrets redacted so far in ``conversations``, per category (from their
    metadata: no detector is loaded to count them)."""
    totals: dict[str, int] = {}
    for conversation in conversations:
        for category, n in (conversation.metadata.get("redactions") or {}).items():
            totals[category] = totals.get(category, 0) + int(n)
    return dict(sorted(totals.items()))
