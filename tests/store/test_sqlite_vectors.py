"""The vector conformance suite against real SQLite files."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.store.conformance import StoreFactory
from tests.store.vector_conformance import M, VectorConformance, unit

from lossless.models import NewMessage
from lossless.store.contract import NewMemory, NewVector
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

    from lossless.store.sqlite.vectors import (
        MATRIX_FIRST_LOAD_SQL,
        MATRIX_ROWS_SQL,
        MESSAGE_PLACES_SQL,
    )

    SQLiteStore(sqlite_store_path).close()
    with sqlite3.connect(sqlite_store_path) as db:
        db.execute("DROP TABLE IF EXISTS sqlite_stat1")
        plan = " | ".join(
            str(r[3]) for r in db.execute(f"EXPLAIN QUERY PLAN {MATRIX_ROWS_SQL}", ("m", 0))
        )
    assert "SEARCH e USING INTEGER PRIMARY KEY (rowid>?)" in plan, plan
    assert "TEMP B-TREE" not in plan, plan
    with sqlite3.connect(sqlite_store_path) as db:
        first = " | ".join(
            str(r[3]) for r in db.execute(f"EXPLAIN QUERY PLAN {MATRIX_FIRST_LOAD_SQL}", ("m", 0))
        )
        places = " | ".join(
            str(r[3]) for r in db.execute(f"EXPLAIN QUERY PLAN {MESSAGE_PLACES_SQL}")
        )
    assert first == "SEARCH e USING INTEGER PRIMARY KEY (rowid>?)", first
    # The seqs of a first load come from the (conversation_id, seq) index, not the table.
    assert "COVERING INDEX" in places, places


def test_a_first_load_places_messages_as_the_refresh_join_does(sqlite_store_path: Path) -> None:
    # A first load reads the messages' seqs from their index apart; a refresh
    # joins them row by row. Both must give every row the same place.
    import numpy as np

    from lossless.store.vector_matrix import VectorMatrix

    store = SQLiteStore(sqlite_store_path)
    try:
        ids = []
        for session, count in (("a", 7), ("b", 5)):
            conv = store.conversations.get_or_create(project="p", session_id=session, client="t")
            appended = store.messages.append(
                conv.id, [NewMessage(role="user", content=f"{session}{n}") for n in range(count)]
            )
            ids += [(m.id, conv.id) for m in appended.inserted]
        memory = store.memory.create(NewMemory(project="p", text="a fact")).memory
        rows = [
            NewVector("message", str(i), 0, c, unit(float(n + 1), 1.0))
            for n, (i, c) in enumerate(ids)
            if n != 4
        ]
        rows.insert(3, NewVector("memory", memory.id, 0, None, unit(0, 1)))
        rows.insert(6, NewVector("message", str(ids[2][0]), 1, ids[2][1], unit(1, 0, 1)))
        rows.append(NewVector("message", "999999", 0, ids[0][1], unit(1, 1, 1)))  # no such message
        store.vectors.add(M, rows[:5])
        grown = store.vectors._matrix(M)  # first load of five rows, then a refresh
        store.vectors.add(M, rows[5:])
        grown = store.vectors._matrix(M)
        store.vector_matrices.clear()
        fresh = store.vectors._matrix(M)  # every row on a first load
        assert fresh is not grown and len(fresh) == len(grown) == len(rows)
        assert np.array_equal(fresh._seqs[: len(rows)], grown._seqs[: len(rows)])
        seqs = fresh._seqs[: len(rows)].tolist()
        assert seqs.count(-1) == 2  # the memory and the message that does not exist
        # a: seqs 0-6 without 4, and a second chunk of seq 2; b: seqs 0-4.
        assert sorted(s for s in seqs if s >= 0) == [0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 5, 6]
        assert isinstance(fresh, VectorMatrix)
    finally:
        store.close()
