"""After an import: the substring index built inline when small, else by the worker;
the embedding backlog handed to the worker.

Shared by ``lcm import`` of transcripts and of an ``lcm export`` stream.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from lossless.engine.engine import Engine


# An import that leaves at most this many messages for the trigram index
# indexes them before returning (seconds); more go to the background worker.
IMPORT_INDEX_INLINE_ROWS = 50_000


@dataclass(frozen=True, slots=True)
class LeftForTheWorker:
    """What an import left to do in the background, and the worker started for it."""

    substring_backlog: int
    embedding_backlog: int
    """Items without vectors (0 where semantic search is off or not installed)."""
    worker_pid: int | None


def index_imported(engine: Engine, *, quiet: bool) -> LeftForTheWorker:
    """Build the substring index for what the import added, or hand it to the worker.

    Vectors are never computed on the import path (a model run per message
    would make an import of a long history take hours): where semantic
    search is on, the worker is started for them, as it is by hooks.
    """
    from lossless.engine.embedding import semantic_status
    from lossless.worker import start_detached

    backlog = engine.store.search.index_backlog()
    if 0 < backlog <= IMPORT_INDEX_INLINE_ROWS:
        with click.progressbar(
            length=backlog, label="Indexing for substring search", file=sys.stderr, hidden=quiet
        ) as bar:
            engine.build_search_index(progress=bar.update)
        backlog = engine.store.search.index_backlog()
    status = semantic_status(engine.store, engine.config)
    embedding = status.progress.total_pending if status.progress is not None else 0
    pid = start_detached(engine.config) if backlog or embedding else None
    return LeftForTheWorker(backlog, embedding, pid)
