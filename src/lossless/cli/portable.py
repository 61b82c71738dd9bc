"""`lcm export`: everything in the store as one portable JSONL stream.

The matching import is `lcm import --from-export FILE` (in ``cli/history.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from lossless.cli.app import CliState, cli, emit_json, state_of
from lossless.cli.output import print_table
from lossless.errors import InputError
from lossless.words import counted


@cli.command("export")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to this file instead of standard output.",
)
@click.option("--project", default=None, help="Only this project's conversations and memories.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.pass_context
def export_cmd(ctx: click.Context, output: Path | None, project: str | None, quiet: bool) -> None:
    """Write every conversation, message, summary, large file and memory as JSONL.

    The stream is versioned (first line `{"format": "lossless-export",
    "version": 1}`) and refers to records by stable keys, not database ids,
    so it moves history between machines and between backends (SQLite and
    PostgreSQL) without loss: ids of summaries, files and memories and every
    timestamp are kept. Large files travel inline. Import cursors are local
    and are not exported. Secrets were redacted before they were stored, so
    the export holds none that the store did not.

    \b
    Examples:
      lcm export -o backup.jsonl
      lcm export --project ~/src/app | gzip > app.jsonl.gz
      lcm --home /new/home import --from-export backup.jsonl
    """
    from lossless.engine.portable import export_store

    state = state_of(ctx)
    if output is not None:
        _check_writable(output)
    engine = state.engine()
    store = engine.store
    total = sum(store.messages.count(c.id) for c in store.conversations.list(project=project))
    try:
        target = output.open("w", encoding="utf-8", newline="\n") if output else sys.stdout
    except OSError as exc:
        raise InputError(f"cannot write {output}: {exc.strerror or exc}") from None
    try:
        with click.progressbar(
            length=max(total, 1),
            label="Exporting",
            file=sys.stderr,
            hidden=quiet or total == 0 or not sys.stderr.isatty(),
        ) as bar:
            report = export_store(
                store, state.config(), target, project=project, progress=bar.update
            )
    finally:
        if output:
            target.close()
    summary = ", ".join(
        counted(n, kind.replace("_", " ")) for kind, n in sorted(report.counts.items())
    )
    click.echo(f"exported {summary or 'nothing'}", err=True)
    if report.missing_files:
        click.echo(
            f"warning: content of {len(report.missing_files)} large files was missing on disk "
            f"(exported without content): {', '.join(report.missing_files[:5])}",
            err=True,
        )


def _check_writable(output: Path) -> None:
    """Refuse an output path that cannot be written, before reading anything."""
    folder = output.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise InputError(f"cannot write {output}: the folder {folder} {what}")
    if output.is_dir():
        raise InputError(f"cannot write {output}: it is a folder")


def import_from_export(state: CliState, path: Path, *, quiet: bool, as_json: bool) -> None:
    """`lcm import --from-export FILE`: store what an `lcm export` stream holds."""
    from lossless.engine.portable import import_export

    engine = state.engine()
    if str(path) == "-":
        source, stream, total = "<stdin>", sys.stdin, 0
    else:
        if not path.is_file():
            raise InputError(f"no such export file: {path}")
        with path.open("rb") as fh:
            total = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
        source, stream = str(path), path.open("r", encoding="utf-8", newline="\n")
    try:
        with click.progressbar(
            length=max(total, 1),
            label="Importing",
            file=sys.stderr,
            hidden=quiet or as_json or total == 0,
        ) as bar:
            report = import_export(
                engine.store, state.config(), stream, source=source, progress=bar.update
            )
    finally:
        if stream is not sys.stdin:
            stream.close()
    from lossless.cli.search_index import index_imported

    left = index_imported(engine, quiet=quiet or as_json)
    if as_json:
        emit_json(
            {
                "added": report.added,
                "skipped": report.skipped,
                "substring_index_backlog": left.substring_backlog,
                "embedding_backlog": left.embedding_backlog,
                "worker_pid": left.worker_pid,
            }
        )
        return
    kinds = sorted(set(report.added) | set(report.skipped))
    if kinds:
        print_table(
            ["record", "added", "already stored"],
            [(k, report.added.get(k, 0), report.skipped.get(k, 0)) for k in kinds],
        )
    else:
        click.echo("the export holds nothing")
