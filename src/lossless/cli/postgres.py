"""``lcm postgres ...``: prepare and inspect the shared PostgreSQL database."""

from __future__ import annotations

import click

from lossless.cli.app import cli, emit_json, json_option, state_of

url_option = click.option(
    "--url",
    default=None,
    help="PostgreSQL URL (default: postgres.url, i.e. $LCM_POSTGRES_URL).",
)


@cli.group()
def postgres() -> None:
    """The PostgreSQL backend: migrate and inspect the shared database."""


@postgres.command()
@url_option
@json_option
@click.pass_context
def migrate(ctx: click.Context, url: str | None, as_json: bool) -> None:
    """Apply pending schema migrations (one transaction; safe to run concurrently)."""
    from lossless.store.postgres import migrate_postgres

    result = migrate_postgres(state_of(ctx).config(), url)
    if as_json:
        emit_json(result)
        return
    if result["applied"]:
        click.echo(f"{result['where']}: applied {', '.join(result['applied'])}")
    else:
        click.echo(f"{result['where']}: already up to date")
    click.echo(f"schema version {result['version']:04d} (latest {result['latest']:04d})")
    _echo_vectors(result)


def _echo_vectors(result: dict[str, object]) -> None:
    """Whether semantic search has its tables here, and if not why (the fix included)."""
    if result["vector_tables"] == "added":
        click.echo("vector tables: added (semantic search is on)")
    elif result["vector_tables"] == "present":
        click.echo("vector tables: present")
    elif result["vector_search_off"]:
        click.echo(f"vector tables: absent: semantic search is off: {result['vector_search_off']}")


@postgres.command("status")
@url_option
@json_option
@click.pass_context
def status(ctx: click.Context, url: str | None, as_json: bool) -> None:
    """Show the server version and the database's migration state (changes nothing)."""
    from lossless.store.postgres import postgres_schema_status

    result = postgres_schema_status(state_of(ctx).config(), url)
    if as_json:
        emit_json(result)
    else:
        version = int(result["server_version"])
        click.echo(f"server:     {result['where']} (PostgreSQL {version // 10000}.{version % 100})")
        click.echo(f"schema:     {result['state']}")
        click.echo(f"applied:    {', '.join(result['applied']) or '(none)'}")
        if result["pending"]:
            click.echo(f"pending:    {', '.join(result['pending'])}: run `lcm postgres migrate`")
        if result["problem"]:
            click.echo(f"problem:    {result['problem']}")
        _echo_vectors(result)
    if result["state"] != "current":
        ctx.exit(1)
