"""The PostgreSQL migration runner: one transaction, one advisory lock, a checksum ledger.

All pending migrations and their ledger rows commit together or not at all.
``pg_advisory_xact_lock`` serialises concurrent runners (several machines
starting at once): the first applies, the others wait, re-read the ledger
under the lock, find nothing left to do and converge on the same history. The
ledger is checked with the shared ``pending_migrations`` rules: a changed,
missing, unknown or out-of-order migration is refused, never repaired.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import psycopg

from lossless.errors import MigrationError
from lossless.store.migrations import (
    AppliedMigration,
    Migration,
    load_migrations,
    pending_migrations,
)

PACKAGE = "lossless.store.postgres"
SCHEMA = "lcm"
MIN_SERVER_VERSION = 160000
# A fixed 64-bit key derived from a name, so no other application's advisory
# locks collide with it by accident. Advisory locks are per database.
LOCK_KEY = int.from_bytes(
    hashlib.sha256(b"lossless-context/postgres/migrations").digest()[:8], "big", signed=True
)

Conn = psycopg.Connection[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class MigrationReport:
    applied: list[Migration]
    history: list[AppliedMigration]

    @property
    def version(self) -> int:
        return len(self.history)


def available_migrations() -> list[Migration]:
    return load_migrations(PACKAGE)


def applied_migrations(conn: Conn) -> list[AppliedMigration]:
    """The ledger, or [] for a database lossless never touched."""
    row = conn.execute(
        "SELECT to_regclass('lcm.schema_migrations') IS NOT NULL AS present"
    ).fetchone()
    if row is None or not row["present"]:
        return []
    return [
        AppliedMigration(int(r["version"]), str(r["name"]), str(r["checksum"]))
        for r in conn.execute(
            "SELECT version, name, checksum FROM lcm.schema_migrations ORDER BY version"
        )
    ]


def check_server(conn: Conn, *, where: str) -> None:
    version = conn.info.server_version
    if version < MIN_SERVER_VERSION:
        raise MigrationError(
            f"{where}: PostgreSQL {version // 10000} is too old; lossless needs 16 or newer"
        )


def check_current(conn: Conn, *, where: str) -> list[AppliedMigration]:
    """Refuse a database that is behind (or ahead of, or different from) this lossless."""
    available = available_migrations()
    applied = applied_migrations(conn)
    pending = pending_migrations(available, applied, where=where)
    if pending:
        raise MigrationError(
            f"{where}: the database schema is at migration {len(applied):04d} but this "
            f"lossless needs {available[-1].version:04d}_{available[-1].name}: "
            "run `lcm postgres migrate`"
        )
    return applied


def migrate_schema(conn: Conn, *, where: str) -> MigrationReport:
    """Apply every pending migration in one transaction; a no-op when up to date.

    ``conn`` must be in autocommit mode with no transaction open.
    """
    check_server(conn, where=where)
    available = available_migrations()
    # Up to date is the common case: decide it without DDL or locks, so a
    # role without CREATE rights can still open an up-to-date database.
    applied = applied_migrations(conn)
    if not pending_migrations(available, applied, where=where):
        return MigrationReport(applied=[], history=applied)
    with conn.transaction():
        conn.execute("SET LOCAL search_path = lcm, public")
        conn.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS lcm.schema_migrations ("
            "version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT clock_timestamp())"
        )
        # Re-read under the lock: a runner that waited here sees what the
        # first one committed and has nothing left to do.
        applied = applied_migrations(conn)
        pending = pending_migrations(available, applied, where=where)
        for migration in pending:
            try:
                conn.execute(migration.sql)
            except psycopg.Error as exc:
                raise MigrationError(
                    f"{where}: migration {migration.version:04d}_{migration.name} failed "
                    f"and nothing was applied: {str(exc).strip().splitlines()[0]}"
                ) from exc
            conn.execute(
                "INSERT INTO lcm.schema_migrations(version, name, checksum) VALUES (%s, %s, %s)",
                [migration.version, migration.name, migration.checksum],
            )
    history = applied + [AppliedMigration(m.version, m.name, m.checksum) for m in pending]
    return MigrationReport(applied=pending, history=history)


# The migrations that create what needs the pgvector extension, each a no-op
# where the server lacks it (0011_embeddings). A later migration that changes
# those tables must be guarded the same way and listed here.
VECTOR_MIGRATIONS = frozenset({11})


@dataclass(frozen=True, slots=True)
class VectorSupport:
    """Whether lossless's vector tables exist, and if not, whether this role could add them."""

    present: bool
    pending: bool
    """Absent, and the privileges say this role could add them now (``add_vector_tables``)."""
    reason: str | None
    """Why semantic search is off here and what would turn it on (None when present)."""


# What decides whether the vector tables can be added, read from the catalogs
# without taking a lock (well under a millisecond of the server's time;
# pg_available_extensions reads the control files). Whether pgvector is
# marked trusted is not asked: pg_available_extension_versions reads every
# extension's script folder, ~20 ms of a new session's time, more than the
# attempt it would spare; pgvector is not a trusted extension as shipped.
_VECTOR_PROBE = """SELECT
    EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS offered,
    EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') AS installed,
    -- 0011 names the type unqualified: it must be in a schema lossless's
    -- sessions search (search_path = lcm, public).
    (SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector')
        AS installed_in,
    coalesce((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), false) AS superuser,
    -- 0011 creates tables in lcm, a foreign key to conversations and triggers
    -- on four tables: each needs its own privilege.
    has_schema_privilege('lcm', 'CREATE')
        AND has_table_privilege('lcm.conversations', 'REFERENCES')
        AND has_table_privilege('lcm.messages', 'TRIGGER')
        AND has_table_privilege('lcm.summaries', 'TRIGGER')
        AND has_table_privilege('lcm.memories', 'TRIGGER')
        AND has_table_privilege('lcm.large_files', 'TRIGGER') AS create_tables,
    quote_ident(current_database()) AS database,
    quote_ident(current_user) AS role,
    (SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'lcm') AS schema_owner
"""


def vector_support(conn: Conn) -> VectorSupport:
    """Whether semantic search can be on here, decided without DDL or locks.

    One statement when the tables exist (the common case), two otherwise.
    Migration 0011 skips its tables where pgvector is missing or this role
    may not create it; ``pending`` says whether adding them now can succeed:
    the tables need CREATE on schema ``lcm`` (and their foreign key and
    triggers privileges on the tables they refer to); the extension, unless
    an administrator installed it already, needs a superuser (pgvector is not
    a trusted extension as shipped). A role that may not is told why
    (``reason``, with the SQL an administrator runs) instead of trying again
    under the migration lock at every open. A server that lets other roles
    create pgvector all the same (its control file marked trusted, an
    extension allow-list, a managed service's administrator role) is judged
    unable here after the first migration; ``lcm postgres migrate`` always
    tries.
    """
    if _vector_tables_present(conn):
        return VectorSupport(present=True, pending=False, reason=None)
    row = conn.execute(_VECTOR_PROBE).fetchone()
    assert row is not None
    database, role, owner = row["database"], row["role"], row["schema_owner"]
    # What adds the tables once the extension is there.
    tables_by = (
        "lossless adds its tables at the next open"
        if row["create_tables"]
        else f"open the store once as {owner}, the owner of schema lcm (`lcm postgres "
        "migrate` with its URL does)"
    )
    if row["installed"] and row["installed_in"] not in ("lcm", "public"):
        return VectorSupport(
            present=False,
            pending=False,
            reason=f"pgvector is installed in schema {row['installed_in']} of database "
            f"{database}, which lossless's sessions do not search (search_path lcm, public): "
            f"as a superuser in database {database} run ALTER EXTENSION vector SET SCHEMA "
            f"public; then {tables_by}",
        )
    if row["installed"] or row["superuser"]:
        if row["create_tables"]:
            return VectorSupport(present=False, pending=True, reason=None)
        return VectorSupport(
            present=False,
            pending=False,
            reason=f"pgvector is installed in database {database} but role {role} may not "
            f"create lossless's vector tables in schema lcm: {tables_by}",
        )
    if not row["offered"]:
        return VectorSupport(
            present=False,
            pending=False,
            reason="this PostgreSQL server does not offer the pgvector extension: install "
            f"pgvector on the server, then as a superuser in database {database} run "
            f"CREATE EXTENSION vector; then {tables_by}",
        )
    return VectorSupport(
        present=False,
        pending=False,
        reason=f"role {role} may not create the pgvector extension (only a superuser may: "
        f"it is not a trusted extension): as a superuser in database {database} run "
        f"CREATE EXTENSION vector; then {tables_by}",
    )


def add_vector_tables(conn: Conn) -> bool:
    """Create the vector tables a migration skipped because pgvector was missing then.

    Migration 0011 is recorded as applied on a server without pgvector (or
    where this role could not create it), so installing the extension later
    would leave semantic search off for good. The migrations in
    ``VECTOR_MIGRATIONS`` run again, in order, under the migration lock (each
    is written to be a no-op while the extension is missing, so running it
    again is its first real run). Their ledger rows stay as they are. Returns
    whether the tables exist afterwards; a privilege this role lacks after all
    is a False, never a failed open (the tables are optional). The store's
    open calls this only where ``vector_support`` says it can succeed.

    ``conn`` must be in autocommit mode with no transaction open.
    """
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS offered"
    ).fetchone()
    if row is None or not row["offered"]:
        return False
    try:
        with conn.transaction():
            conn.execute("SET LOCAL search_path = lcm, public")
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
            # Another opener may have done it while this one waited for the lock.
            if _vector_tables_present(conn):
                return True
            for migration in available_migrations():
                if migration.version in VECTOR_MIGRATIONS:
                    conn.execute(migration.sql)
    except psycopg.errors.InsufficientPrivilege:
        return False
    return _vector_tables_present(conn)


def _vector_tables_present(conn: Conn) -> bool:
    row = conn.execute("SELECT to_regclass('lcm.embeddings') IS NOT NULL AS ok").fetchone()
    return row is not None and bool(row["ok"])
