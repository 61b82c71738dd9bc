"""Full-text ranking of large match sets on SQLite (``store.sqlite.bounded_rank``).

Real stores only reach that path past 10,000 rows holding a word; here its
thresholds are lowered so that small stores take it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.store.conformance import StoreFactory, msg
from tests.store.lexical_conformance import LexicalConformance

from lossless.store import lexical
from lossless.store.contract import GrepQuery
from lossless.store.sqlite import SQLiteStore, bounded_rank


@pytest.fixture
def every_word_common(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded_rank, "COMMON_ROWS", 0)


class TestBoundedRankingKeepsTheSemantics(LexicalConformance):
    """Every full-text semantics test, with every query ranked by the bounded path."""

    @pytest.fixture
    def store_factory(self, tmp_path: Path, every_word_common: None) -> StoreFactory:
        return lambda: SQLiteStore(tmp_path / "lcm.db")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "lcm.db")
    yield s
    s.close()


def fill(store: SQLiteStore, texts: list[str]) -> list[int]:
    conv = store.conversations.get_or_create(project="p", session_id="s", client="generic")
    return [
        m.id
        for m in store.messages.append(
            conv.id,
            [
                msg(t, f"k{i}", at=f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z")
                for i, t in enumerate(texts)
            ],
        ).inserted
    ]


def ranks(store: SQLiteStore, pattern: str) -> dict[str, float]:
    hits = store.search.grep(GrepQuery(pattern, mode="full_text", scope="messages", limit=50))
    return {h.id: h.rank for h in hits}


TEXTS = [
    f"{subject} {verb} the {thing}{filler}"
    for subject in ("worker", "parser", "deploy", "cache")
    for verb in ("failed", "retried", "skipped")
    for thing, filler in (
        ("queue", ""),
        ("index", " again today"),
        ("token", " in the night shift"),
    )
]


def test_where_no_word_repeats_both_paths_give_fts5s_bm25(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every document frequency counted (a small store) and no word twice in
    a row, bm25 without term frequencies is bm25: the same ranks, to rounding."""
    fill(store, TEXTS)
    for pattern in ("worker failed", "queue", "cache token night", "retried index"):
        exact = ranks(store, pattern)
        monkeypatch.setattr(bounded_rank, "COMMON_ROWS", 0)
        bounded = ranks(store, pattern)
        monkeypatch.undo()
        assert exact and set(bounded) == set(exact), pattern
        for rowid, rank in exact.items():
            assert bounded[rowid] == pytest.approx(rank, rel=1e-6), (pattern, rowid)


def test_a_rare_word_outranks_a_common_one_in_the_any_word_pass(
    store: SQLiteStore, every_word_common: None
) -> None:
    texts = [f"routine status report number {i}" for i in range(60)]
    texts[10] = "the zeppelin status"
    texts[40] = "a zeppelin landed"
    ids = fill(store, texts)
    found = list(ranks(store, "zeppelin status routine"))
    # Nothing holds all three words: the any-word pass ranks; the rare word first.
    assert set(found[:2]) == {str(ids[10]), str(ids[40])}
    assert found[0] == str(ids[10])  # it holds the common word as well


def test_past_the_candidate_stretch_the_newest_matches_are_ranked(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, every_word_common: None
) -> None:
    monkeypatch.setattr(bounded_rank, "POSTINGS", 1)
    monkeypatch.setattr(bounded_rank, "CANDIDATES", 1)
    # 3,000 rows holding the word, the shortest ones oldest: bm25 over all of
    # them would put those first; the bounded ranking looks at a newest
    # stretch wide enough for the page, and says nothing older.
    texts = ["alpha"] * 200 + ["alpha beta gamma delta epsilon"] * 2_800
    ids = fill(store, texts)
    hits = store.search.grep(GrepQuery("alpha", mode="full_text", scope="messages", limit=20))
    assert len(hits) == 20
    assert min(int(h.id) for h in hits) > ids[200]
    # The narrowest stretch already held the page's worth of candidates.
    assert 20 * lexical.OVERFETCH < bounded_rank.MIN_SPAN
    assert all(int(h.id) > ids[-1] - bounded_rank.MIN_SPAN for h in hits)


def test_the_any_word_pass_ranks_the_or_querys_rows_by_the_words_each_holds(
    store: SQLiteStore, every_word_common: None
) -> None:
    """Its candidates are the union of each word's rows (prefixes included), read
    word by word: exactly the rows the OR query over the same stretch matches,
    each weighted by the idf of the words it holds."""
    texts = [
        f"{a} {b} note {i}"
        for i, (a, b) in enumerate(
            (a, b)
            for a in ("parsers", "parse", "parsing", "token", "queue")
            for b in ("failed", "token", "worker", "tokens")
        )
    ]
    fill(store, texts * 3)
    words = lexical.words("parse token zebra")
    match = lexical.fts5_match(words, every=False)
    db = store._db
    got = bounded_rank.rank_pass(db, words, match, every=False, need=10)
    assert not got.exact
    or_rows = {
        int(r[0])
        for r in db.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (match,))
    }
    assert {rowid for rowid, _ in got.rows} == or_rows
    # A row holding both words (idf summed) ranks above every row holding one.
    both = {
        int(r[0])
        for r in db.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", ('"parse"* AND "token"*',)
        )
    }
    assert both and both < or_rows
    order = [rowid for rowid, _ in got.rows]
    assert set(order[: len(both)]) == both


def test_the_any_word_pass_ranks_alike_inside_and_past_its_counted_newest_ids(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, every_word_common: None
) -> None:
    """The stretch's rows come from the document count's newest ids when it lies
    within them, and are read again when it reaches past: the same ranking."""
    texts = [f"{a} {b} line {i}" for i, (a, b) in enumerate([("parse", "token")] * 5)]
    texts += [f"the parsers {i} and more words" for i in range(40)]
    texts += [f"token {i} only" for i in range(40)]
    fill(store, texts)
    words = lexical.words("parse token")
    match = lexical.fts5_match(words, every=False)
    db = store._db
    inside = bounded_rank.rank_pass(db, words, match, every=False, need=60)
    monkeypatch.setattr(bounded_rank, "NEWEST_IDS", 1)
    past = bounded_rank.rank_pass(db, words, match, every=False, need=60)
    assert not inside.exact and len(inside.rows) == 85
    assert past == inside
