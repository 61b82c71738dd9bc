"""What the code before a migration wrote: for upgrade tests that build an old
store with today's code (its migrations cut back, its newer writes undone).

An upgrade test takes ``openers(request, tmp_path, BEFORE)`` from a fixture
parametrised over ``BACKENDS``: one function opens the store as the code at
migration ``BEFORE`` did, one as today's code does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lossless.store.contract import Store

BACKENDS = ["sqlite", "postgresql"]

OpenOld = Callable[[pytest.MonkeyPatch], Store]
OpenNew = Callable[[], Store]


def openers(request: pytest.FixtureRequest, tmp_path: Path, before: int) -> tuple[OpenOld, OpenNew]:
    """(open as the code at migration ``before``, open as today's code) on
    ``request.param``'s backend: a SQLite file, or a real PostgreSQL (``pg_url``)."""
    if request.param == "sqlite":
        return _sqlite(tmp_path / "lcm.db", before)
    return _postgres(request.getfixturevalue("pg_url"), before)


def _sqlite(path: Path, before: int) -> tuple[OpenOld, OpenNew]:
    from lossless.store.sqlite import SQLiteStore
    from lossless.store.sqlite import store as sqlite_store

    kept = [m for m in sqlite_store.load_migrations("lossless.store.sqlite") if m.version <= before]

    def old(monkeypatch: pytest.MonkeyPatch) -> Store:
        monkeypatch.setattr(sqlite_store, "load_migrations", lambda _package: kept)
        undo_sqlite_writes_after(before, monkeypatch)
        return SQLiteStore(path)

    return old, lambda: SQLiteStore(path)


def _postgres(url: str, before: int) -> tuple[OpenOld, OpenNew]:
    from lossless.store.postgres import PostgresStore
    from lossless.store.postgres import migrate as runner

    kept = [m for m in runner.available_migrations() if m.version <= before]

    def old(monkeypatch: pytest.MonkeyPatch) -> Store:
        monkeypatch.setattr(runner, "available_migrations", lambda: kept)
        return PostgresStore(url)

    return old, lambda: PostgresStore(url)


def undo_sqlite_writes_after(version: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Today's SQLite writes that the code at migration ``version`` did not make."""
    from lossless.store.sqlite import history as sqlite_history

    if version < 14:  # no conversation totals kept by the appends
        monkeypatch.setattr(sqlite_history.Messages, "_count", lambda *_a, **_k: None)
    if version < 15:  # no trained dictionary for raw lines
        plain_raw_packing(monkeypatch)


def plain_raw_packing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Raw lines packed as before SQLite's 0015: zlib from ``PLAIN_MIN_CHARS``
    characters on, no trained dictionary."""
    from lossless.store.sqlite import history as sqlite_history

    monkeypatch.setattr(
        sqlite_history.Messages,
        "_packer",
        lambda self, _lines: lambda raw: self.s.raw_packing.pack(raw, None, None),
    )
