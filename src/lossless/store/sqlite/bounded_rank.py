"""Full-text ranking of large match sets on SQLite: the newest candidates, scored cheaply.

FTS5's bm25 costs two things in every query: it scores every row that
matches (about 1.6 µs a row here), and it counts every row holding each
query word, its document frequency, by reading the word's whole posting
list (``error`` in 300,000 of 1,000,000 messages: 6.8 ms before one row is
ranked). At a million messages that was 24-30 ms a query for FTS5 alone.

So each pass first probes, with no rank asked (FTS5 then only walks its
posting lists, forward from a rowid): how many of the newest
``RECENT_IDS`` ids hold each word, scaled to the store (exact in a store
that small). When no word is in more than ``COMMON_ROWS`` rows and the pass
matches at most ``EXACT_MATCHES``, FTS5 ranks exactly as before: every
small store, and every query of rare words. Otherwise the candidates are
the matches in the newest stretch of ids that holds about ``POSTINGS``
posting entries of the query's words and about ``CANDIDATES`` matches
(widened until it holds the page's worth), scored by FTS5's own bm25
formula (k1 1.2, b 0.75, the same sign and scale, so both kinds of ranks
compare) from what is cheap to know: each row's length (FTS5's ``docsize``
table), the words it holds (the every-word pass: all; the any-word pass:
each word's rows in the stretch), and the document frequencies above.

What this gives up, said plainly: a word repeated in a row counts once
(FTS5's term frequencies are reachable only through its C API), and where
a query's words are common, only the newest matches are ranked: at that
scale recency decides which rows are looked at, bm25 the order among them.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from lossless.store import lexical

RECENT_IDS = 20_000
"""Document frequencies are counted among this many of the newest ids, then scaled."""
COMMON_ROWS = 10_000
"""A word in more rows than this would cost FTS5's document count ~0.25 ms or more."""
EXACT_MATCHES = 10_000
"""FTS5 ranks up to this many matches itself (about 16 ms at the most)."""
POSTINGS = 30_000
"""Posting-list entries (of all the query's words) the candidates' stretch of ids holds."""
CANDIDATES = 500
"""Matches expected in that stretch: each costs a ``docsize`` lookup and a score."""
MIN_SPAN = 1_000
"""The fewest ids a stretch covers."""
NEWEST_IDS = 4 * MIN_SPAN
"""The any-word pass keeps each word's rows among this many newest ids from
its document count: most stretches lie inside (``rank_pass``)."""
_K1 = 1.2
_B = 0.75


@dataclass(frozen=True, slots=True)
class Ranked:
    """One pass's candidates: FTS5 should rank (``exact``), or ``rows`` (rowid, rank), best first."""

    exact: bool
    rows: list[tuple[int, float]]


def _phrase(word: lexical.Word, *, every: bool) -> str:
    # As ``lexical.fts5_match`` writes each word of a pass.
    return f'"{lexical.index_text(word.typed)}"' + ("*" if word.prefix and not every else "")


def _count(db: sqlite3.Connection, match: str, above: int) -> int:
    """Rows matching ``match`` with a rowid above ``above``: no rank computed."""
    row = db.execute(
        "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ? AND rowid > ?",
        (match, above),
    ).fetchone()
    return int(row[0])


def _count_and_newest(
    db: sqlite3.Connection, phrase: str, above: int, newest_from: int
) -> tuple[int, list[int]]:
    """``_count`` of ``phrase`` above ``above``, and its rowids above ``newest_from``."""
    row = db.execute(
        "SELECT count(*), json_group_array(rowid) FILTER (WHERE rowid > ?) "
        "FROM messages_fts WHERE messages_fts MATCH ? AND rowid > ?",
        (newest_from, phrase, above),
    ).fetchone()
    return int(row[0]), [int(r) for r in json.loads(row[1])]


def _rows_of(db: sqlite3.Connection, phrase: str, above: int) -> list[int]:
    """The rowids above ``above`` holding ``phrase``, ascending."""
    return [
        int(r[0])
        for r in db.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid > ?",
            (phrase, above),
        )
    ]


def _sizes(db: sqlite3.Connection, rowids: list[int]) -> list[tuple[int, bytes | None]]:
    """(rowid, FTS5 ``docsize`` record) of each of ``rowids`` that has one, in their order."""
    if not rowids:
        return []
    return [
        (int(r[0]), r[1])
        for r in db.execute(
            "SELECT j.value, d.sz FROM json_each(?) j "
            "CROSS JOIN messages_fts_docsize d ON d.id = j.value",
            (json.dumps(rowids),),
        )
    ]


def rank_pass(
    db: sqlite3.Connection,
    words: Sequence[lexical.Word],
    match: str,
    *,
    every: bool,
    need: int,
) -> Ranked:
    """Decide how one pass is ranked and, when not by FTS5, rank its candidates.

    ``match`` is the pass's FTS5 expression over ``words`` (every word, or
    any); ``need`` how many candidates the caller's page wants at least.
    Every probe walks posting lists forward from a rowid (FTS5 reads a
    posting list backwards at several times the cost: measured 9.3 against
    2.8 ms for the newest 2,000 of 7,809 rows at a million messages).
    """
    # Message ids are the index's rowids; max() of the table is one lookup.
    top = int(db.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0])
    recent = min(top, RECENT_IDS)
    # Each word's rows among the newest ids, scaled to the store: its
    # document frequency, exact in a store of up to RECENT_IDS messages.
    # The any-word pass reads each word's rows twice (counted here, then the
    # stretch's); the count keeps the newest NEWEST_IDS ids' rows as well,
    # which most stretches lie within: a prefix word's posting lists are
    # merged once instead of twice (~1-2 ms a prefix word at 100,000).
    by_word = not every and len(words) > 1
    newest_from = max(top - recent, top - NEWEST_IDS)
    newest: list[list[int]] = []
    if by_word:
        counted = [
            _count_and_newest(db, _phrase(w, every=False), top - recent, newest_from) for w in words
        ]
        counts = [n for n, _ in counted]
        newest = [rows for _, rows in counted]
    else:
        counts = [_count(db, _phrase(w, every=every), top - recent) for w in words]
    frequencies = [n * top / max(1, recent) for n in counts]
    # No common word: FTS5's document counts are cheap, and every word's rows
    # bound the every-word pass.
    if all(n <= COMMON_ROWS for n in frequencies) and (
        every or _count(db, match, 0) <= EXACT_MATCHES
    ):
        return Ranked(exact=True, rows=[])
    total, average = _averages(db)
    idf = [_idf(total, n) for n in frequencies]
    # The newest stretch of ids whose posting lists hold about POSTINGS
    # entries of the query's words, widened until it holds ``need`` matches.
    # The stretch is also kept to about CANDIDATES matches (the words' rows
    # bound the pass's: the rarest for every word, their sum for any).
    density = sum(frequencies) / max(1, top)
    matching = (min(frequencies) if every else sum(frequencies)) / max(1, top)
    span = max(MIN_SPAN, int(min(POSTINGS / max(density, 1e-9), CANDIDATES / max(matching, 1e-9))))
    # The any-word pass's candidates are the union of its words' rows, each
    # word's read once: the OR query over the stretch merged every word's
    # posting lists again (for a prefix word, every stem it begins: ~2 ms a
    # prefix at 100,000 messages), and its words' rows were then read anyway.
    holders: list[list[int]] = []
    while True:
        lowest = max(0, top - span)
        if by_word and lowest >= newest_from:
            holders = [[rowid for rowid in rows if rowid > lowest] for rows in newest]
            found = _sizes(db, sorted(set().union(*holders)))
        elif by_word:
            holders = [_rows_of(db, _phrase(w, every=False), lowest) for w in words]
            found = _sizes(db, sorted(set().union(*holders)))
        else:
            found = db.execute(
                "SELECT f.rowid, d.sz FROM messages_fts f "
                "CROSS JOIN messages_fts_docsize d ON d.id = f.rowid "
                "WHERE messages_fts MATCH ? AND f.rowid > ?",
                (match, lowest),
            ).fetchall()
        if len(found) >= need or lowest == 0:
            break
        # Too few: widen by what the density seen says is needed, at least 2x.
        span = max(2 * span, int(1.5 * span * need / max(1, len(found))))
    if not found:
        return Ranked(exact=False, rows=[])
    lengths = {rowid: _length(size, average) for rowid, size in found}
    if not by_word:
        weight = dict.fromkeys(lengths, sum(idf))
    else:
        weight = dict.fromkeys(lengths, 0.0)
        for holder, word_idf in zip(holders, idf, strict=True):
            for rowid in holder:
                if rowid in weight:
                    weight[rowid] += word_idf
    scored = [
        (-s * (_K1 + 1) / (1 + _K1 * (1 - _B + _B * lengths[rowid] / average)), -rowid)
        for rowid, s in weight.items()
    ]
    # Best (lowest) rank first; ties to the newest row.
    best = sorted(scored)
    return Ranked(exact=False, rows=[(-negated, rank) for rank, negated in best])


def _length(size: bytes | None, average: float) -> float:
    """Tokens in a row, from FTS5's ``docsize`` (one varint per column; one column here)."""
    if not size:
        return average
    first = size[0]
    return float(first if first < 0x80 else _varint(bytes(size), 0)[0])


def _idf(total: int, frequency: float) -> float:
    # FTS5's bm25: ln((N - n + 0.5) / (n + 0.5)), and never below 1e-6.
    value = math.log((total - frequency + 0.5) / (frequency + 0.5))
    return value if value > 0 else 1e-6


def _averages(db: sqlite3.Connection) -> tuple[int, float]:
    """(rows, mean tokens per row) from FTS5's averages record (data row 1)."""
    row = db.execute("SELECT block FROM messages_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 1, 1.0
    blob = bytes(row[0])
    rows, at = _varint(blob, 0)
    tokens, _ = _varint(blob, at)
    return max(1, rows), max(1.0, tokens / max(1, rows))


def _varint(blob: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint at ``at``: 7 bits a byte, high bit set to go on; 8 in the ninth."""
    value = 0
    for i in range(8):
        byte = blob[at + i]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + i + 1
    return (value << 8) | blob[at + 8], at + 9
