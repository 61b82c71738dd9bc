"""What a trigram index over summaries buys: regex grep over many summaries, writes, size.

SQLite kept ``summaries_trigram`` (an FTS5 trigram table with its own copy of
the text) up to migration 0015 and dropped it in 0016, since no query read
it; PostgreSQL keeps ``summaries_content_trgm``, which its regex grep's LIKE
pre-filter can use. For each backend, two stores of ``--summaries`` generated
summaries (one message each): one with the index, one without (SQLite: the
migrations cut at 0015, then today's; PostgreSQL: today's, then the index
dropped). Per store:

- writing the summaries through ``store.summaries.create`` (CPU of this
  process: SQLite's triggers run in it; PostgreSQL's index work is the
  server's, so there wall time is the figure);
- the bytes the summaries' text and indexes take;
- a regex grep over summaries (``scope="summaries"``), median of ``--runs``:
  a literal held by one summary (the oldest: the newest-first scan reads
  every row before it), one held by 1% of them, one held by every summary,
  and a pattern without a literal.

SQLite also times what its index would have given had a query read it: the
rows holding the rare literal, fetched through ``summaries_trigram``.

Usage::

    .venv/bin/python benchmarks/bench_summary_trigram.py --summaries 20000
    .venv/bin/python benchmarks/bench_summary_trigram.py --backend sqlite
    # the texts of real summaries (a store bench_compaction.py --keep left):
    .venv/bin/python benchmarks/bench_summary_trigram.py --texts-from /tmp/c/extractive
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import common

from lossless.models import NewMessage, NewSummary
from lossless.store.contract import GrepQuery, Store

WORDS = (
    "migration",
    "index",
    "summary",
    "context",
    "budget",
    "token",
    "worker",
    "store",
    "search",
    "regex",
    "compaction",
    "message",
    "session",
    "project",
    "conversation",
    "database",
    "error",
    "retry",
    "timeout",
    "commit",
    "branch",
    "deploy",
    "config",
    "schema",
    "query",
    "cache",
    "latency",
    "request",
)
RARE = "needle-0x7f3a9c"
SOME = "marker-17"
EVERY = "summary"
PATTERNS = (
    ("rare literal (1 summary, the oldest)", RARE),
    ("literal in 1% of summaries", SOME),
    ("literal in every summary", EVERY),
    ("no literal (w\\d+x\\d{5})", r"w\d+x\d{5}"),
)
BATCH = 500


class Texts:
    """The summaries' text: generated words (``chars`` long), or the texts of a
    real store's summaries in turn; the literals planted either way."""

    def __init__(self, chars: int, real: Sequence[str] = ()) -> None:
        self.chars = chars
        self.real = list(real)

    def text(self, rng: random.Random, i: int) -> str:
        if self.real:
            words = self.real[i % len(self.real)].split(" ")
        else:
            words = []
            size = 0
            while size < self.chars:
                word = rng.choice(WORDS) if rng.random() < 0.8 else f"w{rng.randrange(999)}x{i}"
                words.append(word)
                size += len(word) + 1
        words.insert(min(3, len(words)), EVERY)
        if i == 0:
            words.insert(len(words) // 2, RARE)
        if i % 100 == 7:
            words.insert(len(words) // 3, SOME)
        return " ".join(words)

    @staticmethod
    def of_store(home: Path) -> list[str]:
        """Every summary's text in ``home``'s SQLite store (read only)."""
        db = sqlite3.connect(f"file:{home / 'lcm.db'}?mode=ro", uri=True)
        try:
            return [r[0] for r in db.execute("SELECT content FROM summaries ORDER BY rowid")]
        finally:
            db.close()


def fill(store: Store, count: int, texts: Texts) -> tuple[float, float]:
    """Write ``count`` summaries, one message each; (cpu s, wall s) of the summaries."""
    rng = random.Random(1)
    cid = store.conversations.get_or_create(project="p", session_id="s", client="api").id
    cpu = wall = 0.0
    for start in range(0, count, BATCH):
        ids = range(start, min(count, start + BATCH))
        at = [f"2026-01-01T00:00:{i // 1000:02d}.{i % 1000:03d}Z" for i in ids]
        inserted = store.messages.append(
            cid,
            [
                NewMessage("user", f"message {i}", created_at=a)
                for i, a in zip(ids, at, strict=True)
            ],
        ).inserted
        written = [texts.text(rng, i) for i in ids]
        c0, w0 = common.cpu_seconds(), time.perf_counter()
        with store.transaction():
            for m, text, a in zip(inserted, written, at, strict=True):
                store.summaries.create(
                    NewSummary(cid, "leaf", 0, text, len(text) // 4, a, a), message_ids=[m.id]
                )
        cpu += common.cpu_seconds() - c0
        wall += time.perf_counter() - w0
    return cpu, wall


def grep_times(store: Store, pattern: str, runs: int) -> tuple[float, float, int]:
    """(median wall ms, median cpu ms, hits) of a regex grep over summaries."""
    walls, cpus, hits = [], [], 0
    for _ in range(runs):
        c0, w0 = common.cpu_seconds(), time.perf_counter()
        found = store.search.grep(GrepQuery(pattern, mode="regex", scope="summaries", limit=20))
        walls.append((time.perf_counter() - w0) * 1000)
        cpus.append((common.cpu_seconds() - c0) * 1000)
        hits = len(found)
    return common.median(walls), common.median(cpus), hits


@contextmanager
def sqlite_at(version: int | None) -> Iterator[None]:
    """Open SQLite stores with the migrations up to ``version`` (None: all)."""
    from lossless.store.sqlite import store as sqlite_store

    real = sqlite_store.load_migrations
    if version is not None:
        kept = [m for m in real("lossless.store.sqlite") if m.version <= version]
        sqlite_store.load_migrations = lambda _package: kept  # type: ignore[assignment]
    try:
        yield
    finally:
        sqlite_store.load_migrations = real  # type: ignore[assignment]


def sqlite_rows(scratch: Path, count: int, texts: Texts, runs: int) -> list[list[object]]:
    from lossless.store.sqlite import SQLiteStore

    rows: list[list[object]] = []
    for label, version in (
        ("with summaries_trigram (0015)", 15),
        ("today (0016 drops it; 0017 indexes latest_at)", None),
    ):
        path = scratch / f"sqlite-{version}.db"
        with sqlite_at(version):
            store = SQLiteStore(path)
        try:
            cpu, wall = fill(store, count, texts)
            store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            sizes = store.size_by_table()
            index = sum(v for k, v in sizes.items() if k == "summaries_trigram")
            rows.append([label, "write", f"{cpu:.2f}", f"{wall:.2f}", ""])
            rows.append(
                [label, "bytes", f"summaries {sizes['summaries']:,}", f"trigram {index:,}", ""]
            )
            for name, pattern in PATTERNS:
                w, c, hits = grep_times(store, pattern, runs)
                rows.append([label, f"grep: {name}", f"{c:.1f}", f"{w:.1f}", hits])
            if version is not None:
                rows.append([label, *sqlite_index_probe(store, runs)])
        finally:
            store.close()
    return rows


def sqlite_index_probe(store: Any, runs: int) -> list[object]:
    """The rare literal's summaries read through summaries_trigram, as no query did."""
    sql = (
        "SELECT s.id, s.content FROM summaries_trigram t "
        "JOIN summary_rowids r ON r.rowid = t.rowid JOIN summaries s ON s.id = r.summary_id "
        "WHERE t.content GLOB ? ORDER BY s.latest_at DESC, s.id DESC LIMIT 20"
    )
    walls, cpus, hits = [], [], 0
    for _ in range(runs):
        c0, w0 = common.cpu_seconds(), time.perf_counter()
        hits = len(store._db.execute(sql, (f"*{RARE}*",)).fetchall())
        walls.append((time.perf_counter() - w0) * 1000)
        cpus.append((common.cpu_seconds() - c0) * 1000)
    return [
        "rare literal through summaries_trigram (no query does this)",
        f"{common.median(cpus):.1f}",
        f"{common.median(walls):.1f}",
        hits,
    ]


def postgres_rows(count: int, texts: Texts, runs: int) -> list[list[object]]:
    import psycopg

    from lossless.store.postgres import PostgresStore

    server = common.start_embedded_postgres()
    rows: list[list[object]] = []
    try:
        for label, drop in (("with summaries_content_trgm", False), ("without (dropped)", True)):
            url = server.create_database()
            store = PostgresStore(url)
            try:
                with psycopg.connect(url, autocommit=True) as conn:
                    if drop:
                        conn.execute("DROP INDEX lcm.summaries_content_trgm")
                    cpu, wall = fill(store, count, texts)
                    conn.execute("VACUUM ANALYZE lcm.summaries")
                    table = conn.execute(
                        "SELECT pg_table_size('lcm.summaries'), coalesce(("
                        "SELECT pg_relation_size(c.oid) FROM pg_class c "
                        "JOIN pg_namespace n ON n.oid = c.relnamespace "
                        "WHERE n.nspname = 'lcm' AND c.relname = 'summaries_content_trgm'), 0)"
                    ).fetchone()
                assert table is not None
                rows.append(
                    [label, "write (server's CPU not counted)", f"{cpu:.2f}", f"{wall:.2f}", ""]
                )
                rows.append(
                    [label, "bytes", f"summaries {table[0]:,}", f"trigram {table[1]:,}", ""]
                )
                for name, pattern in PATTERNS:
                    w, c, hits = grep_times(store, pattern, runs)
                    rows.append([label, f"grep: {name}", f"{c:.1f}", f"{w:.1f}", hits])
            finally:
                store.close()
    finally:
        server.destroy()
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--summaries", type=int, default=20_000)
    parser.add_argument("--chars", type=int, default=1_500)
    parser.add_argument(
        "--texts-from",
        type=Path,
        help="an LCM_HOME (SQLite): its summaries' texts in turn instead of generated ones",
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args(argv)
    common.print_machine()
    texts = Texts(args.chars, Texts.of_store(args.texts_from) if args.texts_from else ())
    if texts.real:
        chars = sum(map(len, texts.real)) / len(texts.real)
        print(
            f"{len(texts.real)} summary texts from {args.texts_from}, {chars:,.0f} characters each"
        )
    headers = ["store", "measure", "cpu (s or ms)", "wall (s or ms)", "hits"]
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory(prefix="lcm-bench-sumtri-") as scratch:
            rows = sqlite_rows(Path(scratch), args.summaries, texts, args.runs)
        common.print_table(headers, rows, title="SQLite")
    if args.backend in ("postgresql", "both"):
        rows = postgres_rows(args.summaries, texts, args.runs)
        common.print_table(headers, rows, title="PostgreSQL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
