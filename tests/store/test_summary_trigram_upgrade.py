"""Migration 0016 on a store written before it: summaries and their search results stay.

SQLite's 0016 drops ``summaries_trigram`` (kept by triggers, read by no
query) and writes the summary triggers again without it; PostgreSQL's keeps
its ``summaries_content_trgm`` (its regex grep reads it) and only comments
it. A store at migration 0015 with summaries (words, CJK, identifiers, one
rewritten) opened by today's code must hold the same summaries, give the
same grep answers in both modes, pass the store's integrity check (what
`lcm verify` asks the store; its full-text indexes checked one by one), and index what is written
and rewritten after the upgrade. On both backends.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.store import old_code
from tests.store.conformance import msg
from tests.store.old_code import OpenNew, OpenOld

from lossless.models import NewSummary
from lossless.store.contract import GrepMode, GrepQuery, Store

BEFORE = 15

TEXTS = [
    "Leaf: the migration failed with error E1234 in worker.py",
    "Fixed the MIGRATION by adding an index on latest_at",
    "日本語の要約: 検索インデックス",
    "request_id=dead-beef timed out after 30 s",
    "Condensed: migrations, indexes, and the retry budget",
]
QUERIES: list[tuple[str, GrepMode]] = [
    ("migration", "full_text"),
    ("index", "full_text"),
    ("検索", "full_text"),
    ("secret", "full_text"),
    (r"E\d{4}", "regex"),
    ("(?i)migration", "regex"),
    ("request_id=dead", "regex"),
    ("インデックス", "regex"),
    ("secret", "regex"),
]

MODES: tuple[GrepMode, ...] = ("full_text", "regex")


@pytest.fixture(params=old_code.BACKENDS)
def openers(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[OpenOld, OpenNew]:
    """(open the store as the code before 0016 would, open it as today's code)."""
    return old_code.openers(request, tmp_path, BEFORE)


def _summary(cid: int, text: str, day: int) -> NewSummary:
    at = f"2026-01-{day:02d}T00:00:00.000Z"
    return NewSummary(cid, "leaf", 0, text, 7, at, at)


def _answers(store: Store) -> dict[tuple[str, str], list[tuple[str, str]]]:
    return {
        (pattern, mode): [
            (h.id, h.snippet)
            for h in store.search.grep(GrepQuery(pattern, mode=mode, scope="summaries"))
        ]
        for pattern, mode in QUERIES
    }


def test_summaries_and_their_search_results_survive_the_upgrade(
    openers: tuple[OpenOld, OpenNew], monkeypatch: pytest.MonkeyPatch
) -> None:
    open_old, open_new = openers
    old = open_old(monkeypatch)
    try:
        assert max(m.version for m in old.migrations()) == BEFORE
        cid = old.conversations.get_or_create(project="p", session_id="s", client="generic").id
        ms = old.messages.append(cid, [msg(f"message {i}", f"k{i}") for i in range(5)]).inserted
        ids = [
            old.summaries.create(_summary(cid, text, day), message_ids=[m.id]).id
            for day, (text, m) in enumerate(zip(TEXTS, ms, strict=True), start=1)
        ]
        # A rewrite before the upgrade (as `lcm sensitive purge` does): the
        # old words must stay unfindable afterwards.
        old.summaries.rewrite(ids[3], "request_id=dead-beef [redacted] secret gone")
        old.summaries.rewrite(ids[3], "request_id=dead-beef [redacted]")
        before = old.summaries.list(cid)
        answers = _answers(old)
    finally:
        old.close()
    monkeypatch.undo()
    # Every query but the absent word finds something: the comparison is not empty.
    assert all(found for (p, _), found in answers.items() if p != "secret")
    assert answers[("secret", "regex")] == answers[("secret", "full_text")] == []

    store = open_new()
    try:
        # 0016 ran (and whatever later migrations there are).
        assert BEFORE + 1 in {m.version for m in store.migrations()}
        assert store.summaries.list(cid) == before
        assert _answers(store) == answers
        assert store.integrity_check() == []
        # Written and rewritten after the upgrade: found, and found as rewritten.
        (late,) = store.messages.append(cid, [msg("late", "late")]).inserted
        new = store.summaries.create(
            _summary(cid, "after the upgrade: zebra42", 9), message_ids=[late.id]
        )
        for mode in MODES:
            hits = store.search.grep(GrepQuery("zebra42", mode=mode, scope="summaries"))
            assert [h.id for h in hits] == [new.id]
        store.summaries.rewrite(new.id, "after the upgrade: okapi7")
        for mode in MODES:
            assert not store.search.grep(GrepQuery("zebra42", mode=mode, scope="summaries"))
            hits = store.search.grep(GrepQuery("okapi7", mode=mode, scope="summaries"))
            assert [h.id for h in hits] == [new.id]
        assert store.integrity_check() == []
        store.scrub()
    finally:
        store.close()


def test_sqlite_drops_the_summary_trigram_index_and_its_triggers(tmp_path: Path) -> None:
    """A fresh store and an upgraded one hold the same schema, without summaries_trigram."""
    import sqlite3

    from lossless.store.sqlite import SQLiteStore
    from lossless.store.sqlite import store as sqlite_store

    def schema(path: Path) -> list[tuple[str, str, str]]:
        db = sqlite3.connect(path)
        try:
            return db.execute(
                "SELECT type, name, sql FROM sqlite_schema WHERE name != 'sqlite_sequence' "
                "ORDER BY type, name"
            ).fetchall()
        finally:
            db.close()

    SQLiteStore(tmp_path / "fresh.db").close()
    with pytest.MonkeyPatch.context() as patch:
        kept = [
            m for m in sqlite_store.load_migrations("lossless.store.sqlite") if m.version <= BEFORE
        ]
        patch.setattr(sqlite_store, "load_migrations", lambda _package: kept)
        SQLiteStore(tmp_path / "old.db").close()
    assert any(name == "summaries_trigram" for _, name, _ in schema(tmp_path / "old.db"))
    SQLiteStore(tmp_path / "old.db").close()

    fresh = schema(tmp_path / "fresh.db")
    assert schema(tmp_path / "old.db") == fresh
    assert not [name for _, name, sql in fresh if "summaries_trigram" in f"{name} {sql}"]
    assert {"summaries_ai", "summaries_au", "summaries_fts"} <= {name for _, name, _ in fresh}
