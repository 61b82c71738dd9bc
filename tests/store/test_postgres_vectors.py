"""The vector conformance suite against a real PostgreSQL server with pgvector."""

from __future__ import annotations

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
