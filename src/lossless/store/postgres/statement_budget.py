"""A regex grep's time budget inside PostgreSQL statements.

The scan looks at the clock between rows, but one statement can run long
before its first row comes back: a ``LIMIT`` query for a literal few rows
hold, whose planner walks the time index backwards through the whole table
(see docs/benchmarks.md), or a cursor's ``FETCH`` over a filter few rows
pass. Each statement of the scan runs under a ``statement_timeout`` of what
is left of the budget (at least ``MIN_SQL_S``, so that a spent or tiny
budget still finds the newest hits of an ordinary query; never above the
timeout the store was configured with), set by one ``SET`` before it and
reset once after the scan. Inside a caller's transaction the scan runs in a
savepoint: a statement cancelled at the deadline leaves the connection, and
the transaction around it, usable, and the scan reports how far back it got.
(A first version wrapped every statement in a transaction and read the
configured timeout from ``pg_settings``: that cost 8-25 ms a grep.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import psycopg
from psycopg import errors
from psycopg.pq import TransactionStatus

from lossless.store.regex import ScanBudget

MIN_SQL_S = 0.5


class DeadlineReached(Exception):
    """A statement was cancelled at the budget's deadline."""


@contextmanager
def statement_deadline(
    conn: psycopg.Connection[Any], budget: ScanBudget, configured_ms: int | None
) -> Iterator[Callable[[], None]]:
    """Yields ``arm()``, to call before each statement of the scan; a statement
    cancelled at the deadline ends the block with ``DeadlineReached``."""
    if budget.deadline is None:
        yield lambda: None
        return
    at = max(budget.deadline, time.monotonic() + MIN_SQL_S)
    in_transaction = conn.info.transaction_status != TransactionStatus.IDLE
    scope = "LOCAL " if in_transaction else ""
    armed = False

    def arm() -> None:
        nonlocal armed
        left_ms = max(1, int((at - time.monotonic()) * 1000))
        if configured_ms and configured_ms < left_ms:
            left_ms = configured_ms
        conn.execute(f"SET {scope}statement_timeout = {int(left_ms)}")
        armed = True

    try:
        with conn.transaction() if in_transaction else nullcontext():
            try:
                yield arm
            finally:
                # A pooled connection must not keep the scan's timeout. In a
                # transaction the savepoint's rollback undoes it on an error.
                if armed and not in_transaction and not conn.closed:
                    conn.execute("SET statement_timeout TO DEFAULT")
            if armed and in_transaction:
                conn.execute("SET LOCAL statement_timeout TO DEFAULT")
    except errors.QueryCanceled:
        # The store's own statement_timeout, if it is shorter, stays an error.
        if time.monotonic() < at - 0.05:
            raise
        raise DeadlineReached from None
