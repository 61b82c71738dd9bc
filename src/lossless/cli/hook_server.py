"""``lcm hook-server``: the resident process that runs hooks (status, stop, run)."""

from __future__ import annotations

import time

import click

from lossless.cli.app import cli, emit_json, json_option, state_of


@cli.group("hook-server")
def hook_server() -> None:
    """Show, stop or run the resident hook server of this data folder.

    Each hook (`lcm hook EVENT`) hands its event to one long-lived process per
    data folder, which keeps lossless loaded and answers in a few
    milliseconds; with none running the hook runs in its own process, as
    before, and starts one for the next hook. It exits after
    `hooks.server_idle_s` seconds without a hook and whenever the installed
    lossless changes. `lcm config set hooks.server false` turns it off.
    """


@hook_server.command("status")
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Say whether the hook server runs: pid, hooks served, idle timeout, socket."""
    from lossless.hook_server.control import state

    config = state_of(ctx).config(lenient=True)
    found = state(config.home)
    if as_json:
        emit_json({"enabled": config.hooks_server, **_fields(found)})
        return
    click.echo(f"hook server: {found.describe()}")
    if found.running and found.started_at is not None:
        minutes = (time.time() - found.started_at) / 60
        click.echo(f"  up {minutes:.0f} min, socket {found.socket}")
    if not config.hooks_server:
        origin = config.origins.get("hooks.server", "default")
        click.echo(f"  hooks.server is off ({origin}): every hook runs in its own process")


def _fields(found: object) -> dict[str, object]:
    from dataclasses import asdict, is_dataclass

    assert is_dataclass(found) and not isinstance(found, type)
    return asdict(found)


@hook_server.command("stop")
@json_option
@click.pass_context
def stop(ctx: click.Context, as_json: bool) -> None:
    """Stop the hook server (after the hook it is serving). The next hook starts a new one."""
    from lossless.hook_server.control import stop as stop_server

    config = state_of(ctx).config(lenient=True)
    pid = stop_server(config.home)
    if as_json:
        emit_json({"stopped": pid})
    elif pid is None:
        click.echo("hook server: not running")
    else:
        click.echo(f"hook server: stopped (pid {pid})")


@hook_server.command("run")
@click.option(
    "--idle-s",
    type=float,
    default=None,
    help="Seconds without a hook before it exits (default: hooks.server_idle_s).",
)
@click.pass_context
def run(ctx: click.Context, idle_s: float | None) -> None:
    """Run the hook server in the foreground (hooks start it themselves; this is for
    watching it or running it under a supervisor). Its log goes to stderr."""
    from lossless.hook_server.server import HookServer

    config = state_of(ctx).config(lenient=True)
    config.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    code = HookServer(config.home, idle_s=idle_s).run()
    ctx.exit(code)
