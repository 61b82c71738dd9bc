"""Regex grep over messages on SQLite: which rows to read, newest first, within the time budget.

Python's ``re`` decides every hit; the SQL only chooses the candidates, in
the order of the answer (time, then id, newest first), so every plan below
finds the same hits. With a literal of 3+ characters that every match must
contain (``required_literal``), the trigram index is asked first how many
messages hold it:

- few (an id, an error code): those rows are fetched by id and sorted;
- many (a common word): the newest rows are read first, the literal tested
  in SQL exactly as the index's candidates are tested (GLOB, or LIKE for a
  ``(?i)`` regex), the content read only where it holds, for about as many
  rows as should fill the page at the density the probe saw; if the page is
  still short, the index's candidates older than the last row read follow.
  Reading the index's candidates first would build the set of every row
  holding the literal before the first one is matched (hundreds of
  milliseconds at a million messages), where a dense literal fills the
  page from the newest thousand rows.

The time budget holds inside SQL too: a progress handler interrupts a
statement that runs past the deadline (given at least ``MIN_SQL_S``): the
probe of a literal whose trigrams are common but which few rows hold, the
candidate set of a literal spread thin over millions of rows, or a filter
(a project, a session) that few rows pass can read the whole table before
returning a row. The answer then says how far back it searched, as a scan
stopped between rows does; an interrupted probe leaves the newest rows to
be read with the literal tested in SQL.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from lossless.models import SearchHit
from lossless.store.regex import ScanBudget, UserRegex, snippet_around

# A literal found in at most this many messages fetches them by id. The
# probe asks for FIRST_PROBE_ROWS first: a literal that dense is read from
# the newest rows at once, without counting the rest.
RARE_LITERAL_ROWS = 2_000
FIRST_PROBE_ROWS = 200
DENSE = 0.01
# Newest rows read (the literal tested in SQL) before the index's candidates
# take over: the rows expected to hold a page's hits, times WINDOW_MARGIN,
# at least WINDOW_MIN_ROWS; at most what reading the index's candidates
# would cost (each candidate costs the index about WALK_RATIO rows read
# newest first: the trigram index checks every row it finds against the
# text). Without an estimate (the probe ran out of time), WINDOW_MAX_ROWS.
WINDOW_MARGIN = 4
WINDOW_MIN_ROWS = 1_000
WINDOW_MAX_ROWS = 50_000
WALK_RATIO = 4
# The share of what is left of the budget the index probe may take: an
# interrupted probe still leaves time for the newest rows.
PROBE_SHARE = 0.25
# SQLite virtual-machine steps between two looks at the clock.
PROGRESS_STEPS = 20_000
# A statement is never interrupted sooner than this after the scan starts,
# whatever the budget: a budget spent before the scan (or a tiny one) still
# finds the newest hits of an ordinary query, as a scan between rows does
# until its next look at the clock.
MIN_SQL_S = 0.5

_SELECT = (
    "SELECT m.id, m.conversation_id, m.seq, m.role, m.created_at, {content} AS content, "
    "c.session_id, c.project FROM messages m "
    "JOIN conversations c ON c.id = m.conversation_id WHERE 1=1"
)
_ORDER = " ORDER BY m.created_at DESC, m.id DESC"
# Rows the trigram index does not hold yet are candidates whatever they hold.
_UNINDEXED = "m.id > (SELECT indexed_upto FROM trigram_progress)"


class Deadline:
    """The budget's deadline as a progress handler: SQL past it is interrupted."""

    def __init__(self, at: float | None) -> None:
        self.at = at
        self.limit = at
        self.fired = False

    def check(self) -> int:
        if self.limit is not None and time.monotonic() > self.limit:
            self.fired = True
            return 1  # SQLite stops the statement: "interrupted"
        return 0

    @contextmanager
    def share(self, part: float) -> Iterator[None]:
        """A tighter deadline for the block: ``part`` of the time left."""
        if self.at is None:
            yield
            return
        now = time.monotonic()
        self.limit = min(self.at, now + part * max(0.0, self.at - now))
        try:
            yield
        finally:
            self.limit = self.at

    def disarm(self) -> None:
        self.limit = None


@contextmanager
def interruptible(db: sqlite3.Connection, budget: ScanBudget) -> Iterator[Deadline]:
    if budget.deadline is None:
        yield Deadline(None)
        return
    deadline = Deadline(max(budget.deadline, time.monotonic() + MIN_SQL_S))
    db.set_progress_handler(deadline.check, PROGRESS_STEPS)
    try:
        yield deadline
    finally:
        db.set_progress_handler(None, 0)


class Scan:
    """Rows in answer order matched by the regex until the page is full."""

    def __init__(self, regex: UserRegex, budget: ScanBudget, limit: int) -> None:
        self.regex = regex
        self.budget = budget
        self.limit = limit
        self.hits: list[SearchHit] = []
        self.last: Any = None

    def rows(self, rows: Iterable[Any]) -> bool:
        """Match ``rows`` (content None: cannot match); True once the page is full
        or the budget spent."""
        for r in rows:
            if self.budget.spent(r["created_at"]):
                return True
            self.last = r
            if r["content"] is None:
                continue
            found = self.budget.search(self.regex, r["content"], r["created_at"])
            if found is None:
                continue
            self.hits.append(
                SearchHit(
                    kind="message",
                    id=str(r["id"]),
                    conversation_id=r["conversation_id"],
                    role=r["role"],
                    created_at=r["created_at"],
                    snippet=snippet_around(r["content"], found.start(), found.end()),
                    seq=r["seq"],
                    session_id=r["session_id"],
                    project=r["project"],
                )
            )
            if len(self.hits) >= self.limit:
                return True
        return False


def regex_messages(
    db: sqlite3.Connection,
    scan: Scan,
    literal: tuple[str, str] | None,
    where: str,
    params: list[Any],
) -> None:
    """Fill ``scan`` from the messages passing ``where``; ``literal`` is (the
    GLOB or LIKE pattern holding the required literal, the operator)."""
    with interruptible(db, scan.budget) as deadline:
        try:
            _plan(db, scan, literal, where, params, deadline)
        except sqlite3.OperationalError:
            if not deadline.fired:
                raise
            deadline.disarm()
            # Past the deadline inside a statement: everything older than the
            # last row read went unsearched (all of it, if none was read).
            if scan.last is not None:
                scan.budget.stop(scan.last["created_at"])
            else:
                row = db.execute("SELECT max(created_at) FROM messages").fetchone()
                scan.budget.stop(row[0] if row else None)


def _plan(
    db: sqlite3.Connection,
    scan: Scan,
    literal: tuple[str, str] | None,
    where: str,
    params: list[Any],
    deadline: Deadline,
) -> None:
    if literal is None:
        scan.rows(db.execute(_SELECT.format(content="m.content") + where + _ORDER, params))
        return
    pattern, operator = literal
    rare, density = _probe(db, pattern, operator, deadline)
    if rare is not None:
        scan.rows(
            db.execute(
                _SELECT.format(content="m.content")
                + " AND m.id IN (SELECT value FROM json_each(?) UNION ALL "
                f"SELECT id FROM messages WHERE {_UNINDEXED.replace('m.id', 'id')})"
                + where
                + _ORDER,
                [json.dumps(rare), *params],
            )
        )
        return
    # The newest rows, the literal tested in SQL; then, if the page is still
    # short, more of them while the hits seen so far say the page fills
    # sooner than reading the index's candidates would cost; then those
    # candidates, older than the last row read.
    newest_id = db.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]
    walked, after = 0, None
    size = window_rows(scan.limit, density, int(newest_id))
    while size > 0:
        window = _Counted(
            db.execute(
                _SELECT.format(
                    content=f"CASE WHEN m.content {operator} ? OR {_UNINDEXED} THEN m.content END"
                )
                + where
                + ("" if after is None else " AND (m.created_at, m.id) < (?, ?)")
                + _ORDER
                + " LIMIT ?",
                [pattern, *params, *(after or ()), size],
            )
        )
        if scan.rows(window) or window.count < size or window.last is None:
            return
        walked += window.count
        after = (window.last["created_at"], window.last["id"])
        size = more_rows(
            scan.limit - len(scan.hits), len(scan.hits), walked, density, int(newest_id)
        )
    scan.rows(
        db.execute(
            _SELECT.format(content="m.content")
            + f" AND (m.id IN (SELECT rowid FROM messages_trigram WHERE content {operator} ?)"
            f" OR {_UNINDEXED})"
            " AND (m.created_at, m.id) < (?, ?)" + where + _ORDER,
            [pattern, *(after or ()), *params],
        )
    )


class _Counted:
    """Rows passed through, counted, the last one kept (read lazily: a page
    filled early leaves the rest of the window unread)."""

    def __init__(self, rows: Iterable[Any]) -> None:
        self._rows = rows
        self.count = 0
        self.last: Any = None

    def __iter__(self) -> Iterator[Any]:
        for r in self._rows:
            self.count += 1
            self.last = r
            yield r


def _probe(
    db: sqlite3.Connection, pattern: str, operator: str, deadline: Deadline
) -> tuple[list[int] | None, float | None]:
    """(the ids of the indexed rows holding the literal, when there are few;
    else the share of rows holding it, from the id span of those found, or
    None if the probe ran out of its time)."""
    ids: list[int] = []
    try:
        with deadline.share(PROBE_SHARE):
            for wanted in (FIRST_PROBE_ROWS + 1, RARE_LITERAL_ROWS - FIRST_PROBE_ROWS):
                found = [
                    int(r[0])
                    for r in db.execute(
                        f"SELECT rowid FROM messages_trigram WHERE content {operator} ? "
                        "AND rowid > ? LIMIT ?",
                        (pattern, ids[-1] if ids else 0, wanted),
                    )
                ]
                ids.extend(found)
                if len(found) < wanted:
                    return ids, None  # every indexed row holding it
                if _density(ids) >= DENSE:
                    break
    except sqlite3.OperationalError:
        if not deadline.fired:
            raise
        deadline.fired = False
        return None, None
    return None, _density(ids)


def _density(ids: list[int]) -> float:
    """The share of rows holding the literal, from the ids of the first ones found
    (the index yields them oldest first)."""
    return len(ids) / (ids[-1] - ids[0] + 1)


def more_rows(missing: int, hits: int, walked: int, density: float | None, rows: int) -> int:
    """How many more of the newest rows to read after ``walked`` rows gave ``hits``
    hits and the page still misses ``missing``: those the hit rate says will
    fill it (with the margin) while reading them all costs less than the
    index's candidates would; else 0 (the candidates come next)."""
    if density is None or hits == 0:
        return 0
    needed = int(WINDOW_MARGIN * missing * walked / hits)
    if walked + needed > WALK_RATIO * density * rows:
        return 0
    return needed


def window_rows(limit: int, density: float | None, rows: int) -> int:
    """How many of the newest of ``rows`` rows to read before the index's candidates."""
    if density is None or density <= 0:
        return WINDOW_MAX_ROWS
    wanted = max(WINDOW_MIN_ROWS, int(WINDOW_MARGIN * limit / density))
    return min(wanted, max(WINDOW_MIN_ROWS, int(WALK_RATIO * density * rows)))
