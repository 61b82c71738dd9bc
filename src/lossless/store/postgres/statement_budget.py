"""A regex grep's time budget inside PostgreSQL statements.

The scan looks at the clock between rows, but one statement can run long
before its first row comes back: a ``LIMIT`` query for a literal few rows
hold, whose planner walks the time index backwards through the whole table
(see docs/benchmarks.md), or a cursor's ``FETCH`` over a filter few rows
pass. Each such statement runs under a ``statement_timeout`` of what is left
of the budget (at least ``MIN_SQL_S``, so that a spent or tiny budget still
finds the newest hits of an ordinary query; never above a timeout the store
was configured with), in a transaction or savepoint of its own: cancelled at
the deadline, it leaves the connection, and any transaction around it,
usable, and the scan reports how far back it got.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors

from lossless.store.regex import ScanBudget

MIN_SQL_S = 0.5


class DeadlineReached(Exception):
    """A statement was cancelled at the budget's deadline."""


@contextmanager
def bounded(conn: psycopg.Connection[Any], budget: ScanBudget) -> Iterator[None]:
    """Statements in the block stop at the deadline (``DeadlineReached``)."""
    if budget.deadline is None:
        with conn.transaction():
            yield
        return
    at = max(budget.deadline, time.monotonic() + MIN_SQL_S)
    left_ms = max(1, int((at - time.monotonic()) * 1000))
    try:
        with conn.transaction():
            conn.execute(
                "SELECT set_config('statement_timeout', CASE WHEN s.setting::bigint > 0 "
                "AND s.setting::bigint < %s THEN s.setting ELSE %s END, true) "
                "FROM pg_settings s WHERE s.name = 'statement_timeout'",
                [left_ms, str(left_ms)],
            )
            yield
    except errors.QueryCanceled:
        # The store's own statement_timeout, if it is shorter, stays an error.
        if time.monotonic() < at - 0.05:
            raise
        raise DeadlineReached from None
