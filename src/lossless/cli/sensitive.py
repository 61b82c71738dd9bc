"""`lcm sensitive`: the secrets lossless redacts before anything is stored."""

from __future__ import annotations

import os
import sys

import click

from lossless.cli.app import cli, emit_json, json_option, state_of
from lossless.cli.output import print_table, wrapped
from lossless.redact import CATEGORIES, Redactor, UserPattern


@cli.group()
def sensitive() -> None:
    """Manage secret redaction: built-in detectors plus your own patterns.

    Every message is redacted before it is stored or sent to a summarizer: a
    secret becomes a typed placeholder such as [REDACTED:aws_access_key].
    Add your own patterns for what the built-in detectors cannot know
    (internal hostnames, customer ids ...); `lcm sensitive purge` then
    re-scans what is already stored.
    """


@sensitive.command("list")
@json_option
@click.pass_context
def list_patterns(ctx: click.Context, as_json: bool) -> None:
    """List the built-in detector categories and your patterns."""
    book = state_of(ctx).engine().redactors.book
    patterns = [
        {"name": p.name, "regex": p.regex, "scope": p.scope, "project": p.project}
        for p in book.patterns
    ]
    if as_json:
        emit_json({"builtin": list(CATEGORIES), "patterns": patterns, "file": str(book.path)})
        return
    wrapped("built-in: " + ", ".join(CATEGORIES), indent=4)
    if not patterns:
        click.echo(f"no user patterns ({book.path})")
        return
    print_table(
        ["name", "scope", "project", "regex"],
        [(p["name"], p["scope"], p["project"] or "", p["regex"]) for p in patterns],
    )


@sensitive.command("add")
@click.argument("name")
@click.argument("regex")
@click.option(
    "--project",
    default=None,
    help="Only for this project (a session's working directory); '.' means the current one.",
)
@click.pass_context
def add_pattern(ctx: click.Context, name: str, regex: str, project: str | None) -> None:
    """Add a pattern NAME whose REGEX matches are redacted as [REDACTED:user:NAME].

    If REGEX has a group named `secret`, only that group is hidden, so the
    context can be matched without being redacted:

    \b
      lcm sensitive add employee-id 'employee_id=(?P<secret>E\\d{6})'

    Patterns are refused when they are invalid, can match the empty string, or
    risk catastrophic backtracking. Run `lcm sensitive purge` afterwards to
    apply a new pattern to what is already stored.
    """
    book = state_of(ctx).engine().redactors.book
    if project == ".":
        project = os.getcwd()
    pattern = UserPattern(
        name=name, regex=regex, scope="project" if project else "global", project=project
    )
    book.add(pattern)
    book.save()
    where = f"project {project}" if project else "every project"
    click.echo(f"added {name} for {where}; run `lcm sensitive purge` to apply it to stored history")


@sensitive.command("remove")
@click.argument("name")
@click.option("--project", default=None, help="Remove the pattern of this project only.")
@click.pass_context
def remove_pattern(ctx: click.Context, name: str, project: str | None) -> None:
    """Remove the pattern NAME (already redacted text stays redacted)."""
    book = state_of(ctx).engine().redactors.book
    removed = book.remove(name, project)
    book.save()
    click.echo(f"removed {removed.name} ({removed.scope})")


@sensitive.command("test")
@click.argument("text", required=False)
@click.option("--project", default=None, help="Also apply this project's patterns.")
@json_option
@click.pass_context
def test_text(ctx: click.Context, text: str | None, project: str | None, as_json: bool) -> None:
    """Show what would be redacted in TEXT (or standard input), without storing anything."""
    if text is None:
        text = sys.stdin.read()
    engine = state_of(ctx).engine()
    redactor: Redactor = engine.redactors.for_project(project)
    result = redactor.redact_text(text)
    if as_json:
        emit_json({"text": result.text, "counts": result.counts})
        return
    click.echo(result.text)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items())) or "nothing found"
    click.echo(f"[{summary}]", err=True)


@sensitive.command("purge")
@click.option("--dry-run", is_flag=True, help="Only report what would be redacted.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@json_option
@click.pass_context
def purge_history(ctx: click.Context, dry_run: bool, quiet: bool, as_json: bool) -> None:
    """Apply today's patterns to everything already stored.

    Re-scans conversation titles and metadata, message content, metadata and
    parts, raw transcript records, summaries, large files (their content
    under LCM_HOME/files and their summary), durable memories (text and tags)
    and quarantined lines, and rewrites only the spans that match (a secret
    becomes its [REDACTED:...] placeholder; everything else stays byte for
    byte). A redacted large file is stored under its new content address and
    the old copy deleted. Then the database is compacted so the old text does
    not survive in free pages or index segments (SQLite: VACUUM; PostgreSQL:
    VACUUM FULL of the rewritten tables, which locks them while it runs).

    Safe to interrupt: work is committed in batches and a second run finishes
    the job (and finds nothing to do once it is done). Secrets found are added
    to each conversation's redaction tally (`lcm status`).

    \b
    Typical use:
      lcm sensitive add customer-id 'CUST-\\d{6}'
      lcm sensitive purge --dry-run     # what would change, per table
      lcm sensitive purge
    """
    from lossless.engine.purge import purge, purge_total

    engine = state_of(ctx).engine()
    total = purge_total(engine.store)
    with click.progressbar(
        length=max(total, 1),
        label="Scanning" if dry_run else "Purging",
        file=sys.stderr,
        hidden=quiet or as_json or total == 0,
    ) as bar:
        report = purge(
            engine.store,
            engine.redactors,
            engine.config,
            dry_run=dry_run,
            progress=bar.update,
            estimator=engine.estimate,
        )
    if not dry_run and report.rows_changed:
        engine.store.scrub()
    if as_json:
        emit_json(
            {
                "dry_run": report.dry_run,
                "rows_changed": report.rows_changed,
                "conversations_changed": report.conversations_changed,
                "redactions": report.redactions,
                "tables": report.tables,
                "files_removed": report.files_removed,
                "files_unreadable": report.files_unreadable,
            }
        )
        return
    print_table(
        ["table", "scanned", "changed", "redactions"],
        [
            (
                name,
                t.scanned,
                t.changed,
                ", ".join(f"{k} {v}" for k, v in sorted(t.redactions.items())),
            )
            for name, t in report.tables.items()
        ],
    )
    verb = "would change" if dry_run else "changed"
    click.echo(
        f"{verb} {report.rows_changed} rows in {report.conversations_changed} conversations"
        + (f"; {report.files_removed} old large files deleted" if report.files_removed else "")
        + ("" if dry_run or not report.rows_changed else "; database compacted")
    )
    if report.files_unreadable:
        click.echo(
            f"{len(report.files_unreadable)} large files could not be read here, only their "
            "summaries were scanned: " + ", ".join(report.files_unreadable),
            err=True,
        )
