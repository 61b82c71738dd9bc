"""``lcm embed``: compute the vectors of semantic search now, with progress."""

from __future__ import annotations

import sys

import click

from lossless.cli.app import cli, emit_json, json_option, state_of


@cli.command("embed")
@json_option
@click.pass_context
def embed_cmd(ctx: click.Context, as_json: bool) -> None:
    """Compute embedding vectors for everything stored without one, now.

    The background worker does this on its own when it has nothing to
    compact, a few seconds at a time; `lcm search` uses what is embedded so
    far. Run this after a large `lcm import` to make search fully hybrid at
    once. Safe to interrupt: each batch is saved as it is done. Needs the
    `semantic` extra: pip install 'lossless-context[semantic]'.

    \b
    Examples:
      lcm embed
      lcm status        # the embedding backlog
    """
    engine = state_of(ctx).engine()
    before = engine.semantic_status()
    if before.reason is not None:
        raise click.ClickException(before.reason)
    assert before.progress is not None
    waiting = before.progress.total_pending
    with click.progressbar(
        length=waiting,
        label=f"Embedding with {before.model}",
        file=sys.stderr,
        hidden=as_json or waiting == 0,
    ) as bar:
        run = engine.embed(progress=bar.update)
    after = engine.semantic_status()
    left = after.progress.total_pending if after.progress is not None else 0
    if as_json:
        emit_json(
            {
                "model": before.model,
                "items": run.items,
                "chunks": run.chunks,
                "seconds": round(run.seconds, 3),
                "cpu_seconds": round(run.cpu_seconds, 3),
                "left": left,
            }
        )
        return
    if run.items == 0:
        click.echo(f"Nothing to embed: {after.describe()}.")
        return
    rate = run.items / run.cpu_seconds if run.cpu_seconds > 0 else float("inf")
    click.echo(
        f"Embedded {run.items:,} item(s) as {run.chunks:,} chunk(s) in {run.seconds:.1f} s "
        f"({rate:.0f} items per CPU second); {left:,} left."
    )
