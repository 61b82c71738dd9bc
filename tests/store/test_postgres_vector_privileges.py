"""Semantic search's tables on PostgreSQL where the role may not create pgvector.

The embedded server offers pgvector, which is not a trusted extension: only a
superuser may create it. Two real roles use one store: ``owner`` owns the
database and schema ``lcm`` (it migrated it, as docs/postgres.md sets things
up), ``app`` has read/write rights only. Neither is a superuser, so migration
0011 left the vector tables out. Their opens must then take no migration lock
(another session holds it throughout: an open that tried to take it would
fail on ``lock_timeout``, an open that does not never waits, so nothing here
depends on timing), and say why semantic search is off with the SQL an
administrator runs; once the administrator runs it, an open that may create
the tables creates them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from tests.store.postgres_server import EmbeddedPostgres

import lossless.cli.postgres  # noqa: F401  (registers the ``postgres`` group)
from lossless.cli.app import cli

psycopg = pytest.importorskip("psycopg")

PASSWORD = "role-secret"


@dataclass(frozen=True)
class Roles:
    admin: str
    owner: str
    app: str
    owner_name: str
    app_name: str
    database: str


def _as(url: str, role: str) -> str:
    # A held lock fails an open that waits for it after 200 ms instead of hanging.
    options = quote("-c lock_timeout=200", safe="")
    return re.sub(r"//[^@]+@", f"//{role}:{PASSWORD}@", url) + f"?options={options}"


@pytest.fixture
def roles(pg_server: EmbeddedPostgres) -> Iterator[Roles]:
    """A store migrated by its owning role (no superuser), and a read/write role."""
    tag = f"{os.getpid()}_{id(pg_server) % 10_000}_{os.urandom(3).hex()}"
    owner, app, database = f"vowner_{tag}", f"vapp_{tag}", f"lcm_vectors_{tag}"
    pg_server.admin_execute(f"CREATE ROLE {owner} LOGIN PASSWORD '{PASSWORD}'")
    pg_server.admin_execute(f"CREATE ROLE {app} LOGIN PASSWORD '{PASSWORD}'")
    pg_server.admin_execute(f"CREATE DATABASE {database} OWNER {owner}")
    admin = pg_server.url(database)
    try:
        from lossless.store.postgres import PostgresStore

        with PostgresStore(_as(admin, owner)) as store:
            assert store.capabilities.vector_search is None
        with psycopg.connect(_as(admin, owner), autocommit=True) as conn:
            conn.execute(f"GRANT USAGE ON SCHEMA lcm TO {app}")
            conn.execute(
                f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA lcm TO {app}"
            )
            conn.execute(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA lcm TO {app}")
        yield Roles(admin, _as(admin, owner), _as(admin, app), owner, app, database)
    finally:
        pg_server.admin_execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        pg_server.admin_execute(f"DROP ROLE IF EXISTS {app}")
        pg_server.admin_execute(f"DROP ROLE IF EXISTS {owner}")


@pytest.fixture
def lock_held(roles: Roles) -> Iterator[None]:
    """Another session holds the migration lock for the whole test."""
    from lossless.store.postgres.migrate import LOCK_KEY

    with psycopg.connect(roles.admin, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        yield


def _open(url: str) -> tuple[str | None, str | None]:
    from lossless.store.postgres import PostgresStore

    with PostgresStore(url) as store:
        return store.capabilities.vector_search, store.capabilities.vector_search_off


def test_a_role_that_may_not_create_pgvector_opens_without_the_lock_and_says_why(
    roles: Roles, lock_held: None
) -> None:
    search, off = _open(roles.owner)
    assert search is None
    assert off == (
        f"role {roles.owner_name} may not create the pgvector extension (only a superuser may: "
        f"it is not a trusted extension): as a superuser in database {roles.database} run "
        "CREATE EXTENSION vector; then lossless adds its tables at the next open"
    )
    search, off = _open(roles.app)
    assert search is None
    assert off == (
        f"role {roles.app_name} may not create the pgvector extension (only a superuser may: "
        f"it is not a trusted extension): as a superuser in database {roles.database} run "
        f"CREATE EXTENSION vector; then open the store once as {roles.owner_name}, the owner "
        "of schema lcm (`lcm postgres migrate` with its URL does)"
    )


def test_the_extension_created_by_an_administrator_gets_its_tables_at_the_next_open(
    roles: Roles, lock_held: None
) -> None:
    with psycopg.connect(roles.admin, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    # The app role may not create the tables: it opens, lock-free, and says who can.
    search, off = _open(roles.app)
    assert search is None and off is not None
    assert off.startswith(
        f"pgvector is installed in database {roles.database} but role {roles.app_name} may "
        f"not create lossless's vector tables in schema lcm: open the store once as "
        f"{roles.owner_name}"
    )


def test_the_owner_adds_the_tables_once_the_extension_exists(roles: Roles) -> None:
    with psycopg.connect(roles.admin, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    assert _open(roles.owner) == ("hnsw", None)
    assert _open(roles.app) == ("hnsw", None)


def test_a_role_made_superuser_adds_extension_and_tables_at_its_next_open(
    roles: Roles, pg_server: EmbeddedPostgres
) -> None:
    pg_server.admin_execute(f"ALTER ROLE {roles.owner_name} SUPERUSER")
    try:
        assert _open(roles.owner) == ("hnsw", None)
    finally:
        pg_server.admin_execute(f"ALTER ROLE {roles.owner_name} NOSUPERUSER")


def test_status_doctor_and_postgres_migrate_say_why_semantic_search_is_off(
    roles: Roles, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lossless.config import load_config
    from lossless.doctor import check_store_and_worker

    monkeypatch.setenv("LCM_STORAGE_BACKEND", "postgresql")
    monkeypatch.setenv("LCM_POSTGRES_URL", roles.app)
    monkeypatch.setenv("LCM_SEMANTIC_ENABLED", "true")
    fix = f"as a superuser in database {roles.database} run CREATE EXTENSION vector;"
    result = CliRunner().invoke(cli, ["status"])
    assert result.exit_code == 0, result.output
    [line] = [x for x in result.output.splitlines() if x.startswith("search:")]
    assert f"semantic search is off: role {roles.app_name} may not create the pgvector" in line
    assert fix in line
    [check] = [c for c in check_store_and_worker(load_config()) if c.name == "semantic search"]
    assert check.status == "warn" and fix in check.detail
    assert roles.app_name in check.detail
    # `lcm postgres migrate` always tries (a server may allow more than its
    # catalogs say), and reports the refusal the same way.
    result = CliRunner().invoke(cli, ["postgres", "migrate", "--url", roles.owner])
    assert result.exit_code == 0, result.output
    assert "vector tables: absent: semantic search is off: role " in result.output
    assert fix in result.output
    with psycopg.connect(roles.admin, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    result = CliRunner().invoke(cli, ["postgres", "migrate", "--url", roles.owner])
    assert result.exit_code == 0, result.output
    assert "vector tables: added (semantic search is on)" in result.output
    result = CliRunner().invoke(cli, ["postgres", "status", "--url", roles.app])
    assert result.exit_code == 0, result.output
    assert "vector tables: present" in result.output


def test_adding_the_tables_without_the_privileges_is_a_false_not_a_failed_open(
    roles: Roles,
) -> None:
    from psycopg.rows import dict_row

    from lossless.store.postgres.migrate import add_vector_tables, vector_support

    with psycopg.connect(roles.admin, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    with psycopg.connect(roles.app, autocommit=True, row_factory=dict_row) as conn:
        assert not vector_support(conn).pending
        # Called all the same (as `lcm postgres migrate` does): CREATE TABLE is refused.
        assert add_vector_tables(conn) is False


def test_pgvector_installed_outside_the_search_path_is_a_reason_not_a_failed_open(
    roles: Roles,
) -> None:
    from lossless.store.postgres.migrate import LOCK_KEY

    with psycopg.connect(roles.admin, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA extensions")
        conn.execute("CREATE EXTENSION vector SCHEMA extensions")
    with psycopg.connect(roles.admin, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        search, off = _open(roles.owner)
    assert search is None
    assert off == (
        f"pgvector is installed in schema extensions of database {roles.database}, which "
        "lossless's sessions do not search (search_path lcm, public): as a superuser in "
        f"database {roles.database} run ALTER EXTENSION vector SET SCHEMA public; then "
        "lossless adds its tables at the next open"
    )
    with psycopg.connect(roles.admin, autocommit=True) as conn:
        conn.execute("ALTER EXTENSION vector SET SCHEMA public")
    assert _open(roles.owner) == ("hnsw", None)
