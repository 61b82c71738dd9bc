"""``lcm ui``: the local web page."""

from __future__ import annotations

import click

from lossless.cli.app import cli, state_of
from lossless.errors import InputError


@cli.command("ui")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port to listen on (0: any free port).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; only loopback unless --allow-remote.",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a --host other than loopback (anyone reaching it with the URL reads the store).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the browser.")
@click.pass_context
def ui(ctx: click.Context, port: int, host: str, allow_remote: bool, open_browser: bool) -> None:
    """Serve a read-only web page over the store: what the agent sees, and where the rest went.

    Pages: projects and conversations; a conversation's context window (a bar
    of fresh tail, summaries by depth and free budget, with the context
    exactly as `lcm context` builds it); the summary DAG, down to the source
    messages; search (as `lcm search` / `lcm grep`); memories, large files,
    jobs and the store's health.

    The server listens on 127.0.0.1 only and prints its URL, which holds a
    random secret made for this launch: any request without it gets 403.
    Needs the `ui` extra: pip install 'lossless-context[ui]'.

    \b
    Examples:
      lcm ui --open
      lcm --home ~/team-lcm ui --port 8765
    """
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise InputError("lcm ui needs the ui extra: pip install 'lossless-context[ui]'") from None
    from lossless.ui.server import serve

    serve(
        state_of(ctx).config(),
        host=host,
        port=port,
        allow_remote=allow_remote,
        open_browser=open_browser,
        announce=click.echo,
    )
