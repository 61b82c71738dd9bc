"""The substring index after an import: built inline when small, else by the worker.

Shared by ``lcm import`` of transcripts and of an ``lcm export`` stream.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from lossless.engine.engine import Engine


# An import that leaves at most this many messages for the trigram index
# indexes them before returning (seconds); more go to the background worker.
IMPORT_INDEX_INLINE_ROWS = 50_000


def index_imported(engine: Engine, *, quiet: bool) -> tuple[int, int | None]:
    """Build the substring index for what the import added, or hand it to the worker.

    Returns the backlog left and the pid of a worker started for it.
    """
    from lossless.worker import start_detached

    backlog = engine.store.search.index_backlog()
    if backlog == 0:
        return 0, None
    if backlog <= IMPORT_INDEX_INLINE_ROWS:
        with click.progressbar(
            length=backlog, label="Indexing for substring search", file=sys.stderr, hidden=quiet
        ) as bar:
            engine.build_search_index(progress=bar.update)
        return engine.store.search.index_backlog(), None
    return backlog, start_detached(engine.config)
