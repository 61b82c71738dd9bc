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


def test_the_matrix_refresh_reads_a_rowid_range_without_statistics(
    sqlite_store_path: Path,
) -> None:
    # A search brings the cached matrix up to date from the rows added since;
    # without sqlite_stat1 SQLite once chose the (model, ...) index for this and
    # sorted every row of the model on each search.
    import sqlite3

    from lossless.store.sqlite.vectors import MATRIX_ROWS_SQL

    SQLiteStore(sqlite_store_path).close()
    with sqlite3.connect(sqlite_store_path) as db:
        db.execute("DROP TABLE IF EXISTS sqlite_stat1")
        plan = " | ".join(
            str(r[3]) for r in db.execute(f"EXPLAIN QUERY PLAN {MATRIX_ROWS_SQL}", ("m", 0))
        )
    assert "SEARCH e USING INTEGER PRIMARY KEY (rowid>?)" in plan, plan
    assert "TEMP B-TREE" not in plan, plan
