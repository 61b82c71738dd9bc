"""The vector conformance suite against real SQLite files."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.store.conformance import StoreFactory
from tests.store.vector_conformance import VectorConformance

from lossless.store.sqlite import SQLiteStore


class TestSQLiteVectors(VectorConformance):
    @pytest.fixture
    def store_factory(self, sqlite_store_path: Path) -> StoreFactory:
        return lambda: SQLiteStore(sqlite_store_path)
