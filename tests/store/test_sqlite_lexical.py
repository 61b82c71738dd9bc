"""The full-text semantics suite against real SQLite files."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.store.conformance import StoreFactory
from tests.store.lexical_conformance import LexicalConformance

from lossless.store.sqlite import SQLiteStore


class TestSQLiteLexical(LexicalConformance):
    @pytest.fixture
    def store_factory(self, sqlite_store_path: Path) -> StoreFactory:
        return lambda: SQLiteStore(sqlite_store_path)


def test_a_store_made_before_stemming_is_reindexed_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0009 rebuilds the word indexes from the rows: nothing lost, all searchable."""
    from lossless.models import NewMessage, NewSummary
    from lossless.store import migrations
    from lossless.store.contract import GrepQuery, NewMemory
    from lossless.store.sqlite import history
    from lossless.store.sqlite import store as sqlite_store

    every = migrations.load_migrations("lossless.store.sqlite")
    stemming = next(m.version for m in every if m.name == "stemmed_cjk_words")
    before = [m for m in every if m.version < stemming]
    # The schema and the append of a lossless from before migration 0009.
    monkeypatch.setattr(sqlite_store, "load_migrations", lambda package: before)
    # Nor did it keep conversation totals (0014).
    monkeypatch.setattr(history.Messages, "_count", lambda *_a, **_k: None)
    monkeypatch.setattr(
        history.Messages,
        "_index",
        lambda self, first, last: self.db.execute(
            "INSERT INTO messages_fts(rowid, content) "
            "SELECT id, content FROM messages WHERE id BETWEEN ? AND ?",
            (first, last),
        ),
    )
    texts = ["we need better parsers", "请在飞书群里通知大家", "ran the migrations", "x" * 10]
    old = SQLiteStore(tmp_path / "lcm.db")
    conv = old.conversations.get_or_create(project="p", session_id="s", client="generic")
    ids = [
        m.id
        for m in old.messages.append(
            conv.id, [NewMessage("user", t, ingest_key=str(i)) for i, t in enumerate(texts)]
        ).inserted
    ]
    old.summaries.create(
        NewSummary(conv.id, "leaf", 0, "静默模式的讨论", 5, None, None), message_ids=ids[:1]
    )
    old.memory.create(NewMemory(project="p", text="parsers live in src/parse"))
    assert old.search.grep(GrepQuery("飞书", mode="full_text")) == []
    old.close()

    monkeypatch.undo()
    store = SQLiteStore(tmp_path / "lcm.db")
    try:
        assert [m.version for m in store.migrations()][-1] == every[-1].version
        assert [m.content for m in store.messages.get_many(ids)] == texts
        assert store.integrity_check() == []

        def found(pattern: str, scope: str = "messages") -> list[str]:
            hits = store.search.grep(GrepQuery(pattern, mode="full_text", scope=scope))  # type: ignore[arg-type]
            return [h.id for h in hits]

        assert found("parse") == [str(ids[0])]
        assert found("飞书") == [str(ids[1])]
        assert found("migration") == [str(ids[2])]
        assert len(found("静默", "summaries")) == 1
        assert len(store.memory.search("parser", project="p")) == 1
        # New rows after the upgrade are indexed the same way.
        store.messages.append(conv.id, [NewMessage("user", "飞书 parsing", ingest_key="new")])
        assert len(found("飞书")) == 2
        assert store.integrity_check() == []
    finally:
        store.close()
