"""The memory conformance suite against a real PostgreSQL server."""

from __future__ import annotations

import pytest
from tests.store.conformance import StoreFactory
from tests.store.memory_conformance import MemoryConformance


class TestPostgresMemory(MemoryConformance):
    @pytest.fixture
    def store_factory(self, pg_store_url: str) -> StoreFactory:
        from lossless.store.postgres import PostgresStore

        return lambda: PostgresStore(pg_store_url)
