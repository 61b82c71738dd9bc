"""``Engine.grep``: search stored messages and summaries (and large files' bodies).

In a module of its own so that ``lcm grep`` imports only this, not the rest
of ``engine/retrieval.py`` (describe, expand and their records), which
re-exports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lossless.errors import InputError
from lossless.store.contract import GrepHits, GrepMode, GrepQuery, GrepScope, Repositories

if TYPE_CHECKING:
    from pathlib import Path


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
    files_home: Path | None = None,
) -> GrepHits:
    """Search messages and/or summaries. Each hit carries ids to describe/expand next.

    A regex scan stops after ``time_budget_s`` seconds (None: no limit); the
    result then says how far back it got (``GrepHits.scanned_until``). With
    ``files_home`` (the home the large files are stored under), the bodies of
    externalized large files are searched too (``engine.file_search``).
    """
    if limit < 0:
        raise InputError("limit must be 0 or more")
    if time_budget_s is not None and time_budget_s < 0:
        raise InputError("time budget must be 0 or more seconds")
    query = GrepQuery(
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
    if files_home is None:
        return repos.search.grep(query)
    from lossless.engine.file_search import grep_with_files

    return grep_with_files(repos, files_home, query)
