"""When the substring (trigram) index is built: inline for small writes, behind them for bulk.

The SQLite store adds messages to its trigram index after writing them
(``SearchRepository.catch_up``). A hook's few new messages are indexed at
once, which costs milliseconds; a bulk import leaves its backlog to the
background worker (or to the end of ``lcm import``), so it runs at the
speed of the word index. Grep answers are the same either way: rows not yet
indexed are scanned.
"""

from __future__ import annotations

from collections.abc import Callable

from lossless.store.contract import Repositories

# Indexed inline after a write when the whole backlog is at most this many
# messages: about a second of trigram indexing on a slow machine.
INLINE_ROWS = 5_000
# One background catch-up transaction: short enough that a hook waiting on
# the write lock is not held up long.
CHUNK_ROWS = 2_000


def keep_current(repos: Repositories, *, inline_rows: int = INLINE_ROWS) -> int:
    """Index a small backlog now; returns the backlog left (0 when current)."""
    backlog = repos.search.index_backlog()
    if 0 < backlog <= inline_rows:
        repos.search.catch_up(backlog)
        return 0
    return backlog


def catch_up_all(
    repos: Repositories,
    *,
    chunk_rows: int = CHUNK_ROWS,
    progress: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> int:
    """Index the whole backlog in chunks of ``chunk_rows``; how many messages were indexed.

    ``should_stop`` is asked between chunks (the worker stops for compaction
    work); each chunk is its own transaction, so stopping loses nothing.
    """
    done = 0
    while should_stop is None or not should_stop():
        added = repos.search.catch_up(chunk_rows)
        if added == 0:
            break
        done += added
        if progress is not None:
            progress(added)
    return done
