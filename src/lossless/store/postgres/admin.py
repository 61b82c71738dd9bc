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
    VECTOR_MIGRATIONS,
    Conn,
    add_vector_tables,
    applied_migrations,
    available_migrations,
    migrate_schema,
    vector_support,
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
        # Unlike a store's open, which adds the vector tables only where the
        # catalogs say it can, this tries whenever they are missing: a server
        # may let a role create extensions through hooks of its own.
        # (Not again right after migration 0011 itself ran and skipped them.)
        vectors = vector_support(conn)
        ran = any(m.version in VECTOR_MIGRATIONS for m in report.applied)
        added = not vectors.present and not ran and add_vector_tables(conn)
        if not vectors.present and not added:
            vectors = vector_support(conn)
        off = vectors.reason
        if not vectors.present and not added and off is None:
            off = "creating pgvector or lossless's vector tables was refused for a privilege"
        return {
            "where": target.where,
            "server_version": conn.info.server_version,
            "applied": [f"{m.version:04d}_{m.name}" for m in report.applied],
            "version": report.version,
            "latest": available_migrations()[-1].version,
            "vector_tables": "added" if added else "present" if vectors.present else "absent",
            "vector_search_off": None if added else off,
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
        vectors = None if state != "current" else vector_support(conn)
        return {
            "where": target.where,
            "server_version": conn.info.server_version,
            "state": state,
            "problem": problem,
            "applied": [f"{m.version:04d}_{m.name}" for m in applied],
            "pending": pending,
            "latest": available[-1].version,
            "vector_tables": None
            if vectors is None
            else "present"
            if vectors.present
            else "absent",
            "vector_search_off": None if vectors is None else vectors.reason,
        }
