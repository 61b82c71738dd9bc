"""Administration of a PostgreSQL database: apply migrations, report schema state.

Used by ``lcm postgres ...``; works on the database ``postgres.url`` names
whatever ``storage.backend`` says, so a team can prepare the shared database
before switching any machine to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import dict_row

from lossless.errors import MigrationError
from lossless.store.migrations import pending_migrations
from lossless.store.postgres.connection import (
    DEFAULT_CONNECT_TIMEOUT_S,
    Target,
    build_conninfo,
    describe_connect_error,
)
from lossless.store.postgres.migrate import (
    Conn,
    applied_migrations,
    available_migrations,
    migrate_schema,
)


@contextmanager
def _connect(
    url: str, ca_file: str | None, connect_timeout_s: float
) -> Iterator[tuple[Conn, Target]]:
    conninfo, target = build_conninfo(
        url,
        ca_file=ca_file,
        connect_timeout_s=connect_timeout_s,
        application_name="lossless-admin",
    )
    try:
        conn: Conn = psycopg.Connection.connect(conninfo, autocommit=True, row_factory=dict_row)
    except psycopg.Error as exc:
        raise describe_connect_error(exc, target) from None
    try:
        yield conn, target
    finally:
        conn.close()


def run_migrations(
    url: str,
    *,
    ca_file: str | None = None,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
) -> dict[str, Any]:
    """Bring the database's schema up to date; safe to run from many machines at once."""
    with _connect(url, ca_file, connect_timeout_s) as (conn, target):
        report = migrate_schema(conn, where=target.where)
        return {
            "where": target.where,
            "server_version": conn.info.server_version,
            "applied": [f"{m.version:04d}_{m.name}" for m in report.applied],
            "version": report.version,
            "latest": available_migrations()[-1].version,
        }


def schema_status(
    url: str,
    *,
    ca_file: str | None = None,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
) -> dict[str, Any]:
    """Where the database's schema stands against this lossless, without changing it."""
    with _connect(url, ca_file, connect_timeout_s) as (conn, target):
        available = available_migrations()
        applied = applied_migrations(conn)
        state = "current"
        problem = None
        pending: list[str] = []
        try:
            pending = [
                f"{m.version:04d}_{m.name}"
                for m in pending_migrations(available, applied, where=target.where)
            ]
        except MigrationError as exc:
            state, problem = "refused", str(exc)
        if pending:
            state = "behind"
        return {
            "where": target.where,
            "server_version": conn.info.server_version,
            "state": state,
            "problem": problem,
            "applied": [f"{m.version:04d}_{m.name}" for m in applied],
            "pending": pending,
            "latest": available[-1].version,
        }
