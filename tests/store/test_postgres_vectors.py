"""The vector conformance suite against a real PostgreSQL server with pgvector."""

from __future__ import annotations

import pytest
from tests.store.conformance import StoreFactory
from tests.store.vector_conformance import VectorConformance


class TestPostgresVectors(VectorConformance):
    @pytest.fixture
    def store_factory(self, pg_url: str) -> StoreFactory:
        from lossless.store.postgres import PostgresStore

        return lambda: PostgresStore(pg_url)
