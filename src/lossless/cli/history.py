"""Commands over stored history: import, status, conversations, messages, grep, describe, expand, config."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from lossless.cli.app import cli, emit_json, json_option, state_of
from lossless.cli.output import print_table, wrapped
from lossless.cli.shown import show
from lossless.errors import InputError
from lossless.jsonable import to_jsonable
from lossless.timeutil import parse_since

if TYPE_CHECKING:
    from lossless.engine.ingest import FileImportResult
    from lossless.models import Conversation
    from lossless.sources.base import SourceKind


@cli.command("import")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--kind",
    type=click.Choice(["claude-code", "codex", "generic"]),
    default=None,
    help="Parse every PATH as this format instead of detecting it.",
)
@click.option("--project", default=None, help="Store the imported sessions under this project.")
@click.option(
    "--complete",
    is_flag=True,
    help="Treat every transcript as finished. By default the last message of a "
    "transcript written to in the last two minutes is left for the next import, "
    "because a running session may still add to it.",
)
@click.option(
    "--from-export",
    "from_export",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Import a stream written by `lcm export` ('-' for standard input) instead of transcripts.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@json_option
@click.pass_context
def import_cmd(
    ctx: click.Context,
    paths: tuple[Path, ...],
    kind: SourceKind | None,
    project: str | None,
    complete: bool,
    from_export: Path | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Import transcripts; with no PATH, all Claude Code and Codex history on this machine.

    PATH may be a transcript file (Claude Code session JSONL, Codex rollout
    JSONL, or a JSON/JSONL list of OpenAI- or Anthropic-shaped messages) or a
    folder to search for them. Importing is idempotent: running it again adds
    only what is new. Lines that cannot be read are reported with file and line
    and kept in quarantine; the rest is imported. Exits non-zero only when
    nothing could be imported at all.

    \b
    Examples:
      lcm import                                  # ~/.claude and ~/.codex
      lcm import ~/.claude/projects/-home-me-app  # one project
      lcm import chat.jsonl --kind generic --project demo
      lcm import --from-export backup.jsonl       # from `lcm export`
    """
    if from_export is not None:
        from lossless.cli.portable import import_from_export

        if paths or kind or project or complete:
            raise InputError("--from-export takes no PATH, --kind, --project or --complete")
        import_from_export(state_of(ctx), from_export, quiet=quiet, as_json=as_json)
        return
    from lossless.engine.ingest import expand_paths
    from lossless.sources.discovery import discover_transcripts

    state = state_of(ctx)
    config = state.config()
    files: list[tuple[SourceKind | None, Path]]
    if paths:
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise InputError(f"no such file or folder: {', '.join(missing)}")
        files = [(kind, p) for p in expand_paths(paths)]
    else:
        files = list(discover_transcripts(config.claude_dir, config.codex_dir))
        if not files:
            click.echo(
                f"No Claude Code or Codex history found under {config.claude_dir} "
                f"or {config.codex_dir}.",
                err=True,
            )
    engine = state.engine()
    importer = engine.importer(project_override=project, defer_substring_index=True)
    total = sum(_size(p) for _, p in files)
    results = []
    show_bar = not quiet and not as_json and total > 0
    with click.progressbar(
        length=max(total, 1),
        label="Importing",
        file=sys.stderr,
        show_eta=True,
        hidden=not show_bar,
    ) as bar:
        for file_kind, path in files:
            before = 0

            def advance(step: int) -> None:
                nonlocal before
                before += step
                bar.update(step)

            result = importer.import_file(
                path, file_kind, final=True if complete else None, progress=advance
            )
            bar.update(max(0, _size(path) - result.resumed_from - before))
            results.append(result)

    from lossless.cli.search_index import index_imported

    left = index_imported(engine, quiet=not show_bar)
    backlog, worker_pid = left.substring_backlog, left.worker_pid
    added = sum(r.messages_added for r in results)
    skipped = sum(r.messages_skipped for r in results)
    failed = [r for r in results if r.error]
    problems = sum(len(r.problems) for r in results)
    live = [r for r in results if r.held_back_bytes]
    if as_json:
        emit_json(
            {
                "files": [to_jsonable(r) for r in results],
                "messages_added": added,
                "messages_skipped": skipped,
                "problems": problems,
                "failed_files": len(failed),
                "substring_index_backlog": backlog,
                "embedding_backlog": left.embedding_backlog,
                "worker_pid": worker_pid,
            }
        )
    else:
        rows = [
            (
                _short(r.path),
                r.kind or "?",
                r.session_id or "",
                r.messages_added,
                r.messages_skipped,
                len(r.problems) + (1 if r.error else 0),
            )
            for r in results
            if r.messages_added or r.problems or r.error or len(results) <= 20
        ]
        if rows:
            print_table(["file", "kind", "session", "added", "skipped", "problems"], rows)
        click.echo()
        wrapped(_import_summary(results, added, skipped, problems, len(failed)))
        for r in results:
            if r.error:
                click.echo(f"lcm: {r.path}: {r.error}", err=True)
            for problem in r.problems[:20]:
                click.echo(f"lcm: {problem}", err=True)
            if len(r.problems) > 20:
                click.echo(f"lcm: {r.path}: {len(r.problems) - 20} more problem(s)", err=True)
            for note in r.rewinds:
                click.echo(f"{r.path}: {note}")
        if live:
            click.echo(
                f"{len(live)} transcript(s) may still be growing: their last "
                f"{sum(r.held_back_bytes for r in live)} byte(s) will be read by the next "
                "import (or pass --complete).",
                err=True,
            )
        if backlog:
            who = f"the background worker (pid {worker_pid})" if worker_pid else "the worker"
            click.echo(
                f"Substring index: {backlog:,} message(s) still to add; {who} builds it. "
                "Regex grep finds them meanwhile, by scanning them.",
                err=True,
            )
        if left.embedding_backlog:
            who = f"the background worker (pid {worker_pid})" if worker_pid else "the worker"
            click.echo(
                f"Semantic search: {left.embedding_backlog:,} item(s) to embed; {who} "
                "computes the vectors (`lcm embed` does it now). Search uses what is "
                "embedded so far.",
                err=True,
            )
    stored_anything = added > 0 or skipped > 0 or any(r.records_added for r in results)
    if files and not stored_anything and (failed or problems):
        ctx.exit(1)


def _import_summary(
    results: list[FileImportResult], added: int, skipped: int, problems: int, failed: int
) -> str:
    """One sentence: what was added, what was known, what went wrong.

    A file read to its end before is not opened again, so its messages are
    neither added nor counted as stored: it is "unchanged", not "0 already
    stored"."""
    from lossless.words import counted

    unchanged = sum(
        1
        for r in results
        if not (r.messages_added or r.messages_skipped or r.problems or r.error)
        and r.resumed_from > 0
    )
    said = [f"{counted(added, 'message')} added"]
    if skipped:
        said.append(f"{skipped:,} already stored")
    if unchanged:
        said.append(f"{counted(unchanged, 'file')} unchanged since the last import")
    said.append(counted(problems, "problem line"))
    if failed:
        said.append(counted(failed, "unreadable file"))
    return f"{counted(len(results), 'file')}: {', '.join(said)}."


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _short(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home) :] if path.startswith(home + "/") else path


@cli.command()
@click.option(
    "--sizes",
    is_flag=True,
    help="Also show the bytes each table takes with its indexes (reads every page: "
    "seconds on a store of gigabytes).",
)
@json_option
@click.pass_context
def status(ctx: click.Context, sizes: bool, as_json: bool) -> None:
    """Show what is stored: conversations, messages, summaries, tokens, backend,
    and whether compaction keeps up (pending requests, errors, the worker).

    With --sizes, also where the bytes go, table by table (a full-text index
    with its shadow tables, a table with its indexes)."""
    from lossless.cli.lines import PrintedLines
    from lossless.cli.status_command import run_status, status_engine

    run_status(status_engine(state_of(ctx)), sizes=sizes, as_json=as_json, out=PrintedLines())


@cli.command()
@click.option(
    "--project",
    default=None,
    help="Only this project (its folder as recorded; ~ and . are expanded).",
)
@click.option(
    "--client",
    type=click.Choice(["claude-code", "codex", "generic", "api", "map"]),
    default=None,
    help="Only this client.",
)
@click.option("--since", default=None, help="Only active since this time: 2026-02-12, 12h, 7d ...")
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="Only the N most recently active."
)
@json_option
@click.pass_context
def conversations(
    ctx: click.Context,
    project: str | None,
    client: str | None,
    since: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """List conversations, most recently active first.

    Each row: the title (or the start of the first prompt), the last message's
    time, messages and their tokens, summaries and the tokens of the active
    context (what compaction has brought it down to), and the parent
    conversation of a sub-agent. Give the id (or session id) to `lcm messages`,
    `lcm dag` or `lcm compact`.

    \b
    Examples:
      lcm conversations --since 7d
      lcm conversations --project . --client claude-code --limit 10
    """
    try:
        since_ts = parse_since(since) if since else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None
    if project is not None and project.startswith(("~", ".")):
        project = str(Path(project).expanduser().resolve())
    engine = state_of(ctx).engine()
    found = engine.store.conversations.list(project=project, client=client)
    overview = engine.store.conversations.overview([c.id for c in found])

    def last_activity(c: Conversation) -> str:
        return overview[c.id].last_activity or c.created_at

    found = [c for c in found if since_ts is None or last_activity(c) >= since_ts]
    found.sort(key=lambda c: (last_activity(c), c.id), reverse=True)
    if limit is not None:
        found = found[:limit]
    if as_json:
        emit_json(
            [
                {
                    **to_jsonable(c),
                    **to_jsonable(overview[c.id]),
                    "last_activity": last_activity(c),
                }
                for c in found
            ]
        )
        return
    if not found:
        click.echo("no conversations" + (" match" if project or client or since else ""), err=True)
        return
    print_table(
        ["id", "client", "title", "last active", "msgs", "tokens", "context", "sums"],
        [
            (
                c.id,
                c.client,
                _title(c, overview[c.id].first_prompt),
                last_activity(c),
                overview[c.id].messages,
                overview[c.id].message_tokens,
                overview[c.id].context_tokens,
                overview[c.id].summaries,
            )
            for c in found
        ],
        max_width=60,
        one_line=["title"],
    )


def _title(conversation: Conversation, first_prompt: str | None) -> str:
    """The title, else the first prompt; a sub-agent's starts with ↳ and its parent's id."""
    title = conversation.title or first_prompt or conversation.session_id
    if conversation.parent_id is not None:
        return f"↳{conversation.parent_id} {title}"
    return title


@cli.command()
@click.argument("conversation")
@click.option("--after", "after_seq", type=int, default=None, help="Only messages after this seq.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many.")
@click.option("--full", is_flag=True, help="Print whole contents instead of one line each.")
@json_option
@click.pass_context
def messages(
    ctx: click.Context,
    conversation: str,
    after_seq: int | None,
    limit: int | None,
    full: bool,
    as_json: bool,
) -> None:
    """List the messages of CONVERSATION (id, session id or unique prefix), in order."""
    engine = state_of(ctx).engine()
    conv = engine.resolve_conversation(conversation)
    found = engine.store.messages.list(conv.id, after_seq=after_seq, limit=limit)
    if as_json:
        emit_json({"conversation": to_jsonable(conv), "messages": to_jsonable(found)})
        return
    if full:
        for m in found:
            click.echo(f"--- #{m.id} seq {m.seq} {m.role} {m.created_at} ({m.token_count} tokens)")
            show(m.content)
        return
    print_table(
        ["id", "seq", "role", "time", "tokens", "content"],
        [(m.id, m.seq, m.role, m.created_at, m.token_count, m.content) for m in found],
    )


@cli.command()
@click.argument("pattern")
@click.option(
    "--mode",
    type=click.Choice(["regex", "full_text"]),
    default="regex",
    show_default=True,
    help="regex: Python regular expression; full_text: ranked word search.",
)
@click.option(
    "--scope",
    type=click.Choice(["messages", "summaries", "both"]),
    default="both",
    show_default=True,
)
@click.option("--conversation", "-c", default=None, help="Only this conversation (id or session).")
@click.option("--session", default=None, help="Only this exact session id.")
@click.option("--project", default=None, help="Only this project.")
@click.option("--since", default=None, help="Only newer than this: 2026-02-12, 12h, 7d ...")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True)
@click.option(
    "--time-budget",
    type=click.FloatRange(min=0),
    default=None,
    help="Seconds a regex may scan before answering with what it found so far "
    "(default: the grep.time_budget_s setting; 0: search everything).",
)
@json_option
@click.pass_context
def grep(
    ctx: click.Context,
    pattern: str,
    mode: str,
    scope: str,
    conversation: str | None,
    session: str | None,
    project: str | None,
    since: str | None,
    limit: int,
    time_budget: float | None,
    as_json: bool,
) -> None:
    """Search every stored message and summary for PATTERN.

    Hits are newest first for regex, best first for full_text. Each hit names
    the message (or summary) id to pass to `lcm describe`, and the summary
    that covers it, if it has been compacted, to pass to `lcm expand`.

    \b
    A regex with a literal of 3+ characters is narrowed by the substring
    index; one without (say `\\d{4}ms`) reads every message, newest first, and
    on a large store stops after --time-budget seconds, saying how far back
    it got. The budget holds within one message too: a pattern that
    backtracks for ever on one (`(a|aa)+$` on a long run of a) is cut off at
    the deadline. Narrow it with --since or --conversation, or pass
    --time-budget 0 (no limit, at your own risk).

    \b
    Examples:
      lcm grep 'TypeError: .* is not a function'
      lcm grep "database migration" --mode full_text --since 7d
    """
    engine = state_of(ctx).engine()
    try:
        since_ts = parse_since(since) if since else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None
    from lossless.cli.grep_command import run_grep

    run_grep(
        engine,
        pattern,
        mode=mode,
        scope=scope,
        conversation=conversation,
        session=session,
        project=project,
        since=since_ts,
        limit=limit,
        time_budget=time_budget,
        as_json=as_json,
        say=lambda line: click.echo(line, err=True),
        emit=emit_json,
    )


@cli.command()
@click.argument("ref")
@click.option(
    "--offset",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Show the content from character N on (a grep hit inside a large file names its offset).",
)
@click.option(
    "--chars",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Show at most N characters of the content [default: all; 4000 with --offset].",
)
@json_option
@click.pass_context
def describe(
    ctx: click.Context, ref: str, offset: int | None, chars: int | None, as_json: bool
) -> None:
    """Show a message (123), summary (sum_...), large file (file_...) or map job (job_...).

    \b
    Examples:
      lcm describe 4821
      lcm describe file_0123abcd4567ef89 --offset 120400
    """
    engine = state_of(ctx).engine()
    if ref.strip().startswith("job_"):
        from lossless.cli.map import describe_job

        describe_job(engine, ref.strip(), as_json)
        return
    from lossless.cli.describe_command import run_describe
    from lossless.cli.lines import PrintedLines

    run_describe(engine, ref, offset=offset, chars=chars, as_json=as_json, out=PrintedLines())


def _depth(ctx: click.Context, param: click.Parameter, value: str) -> int | None:
    """``--depth``: a positive number of levels, or ``all``."""
    if value.strip().lower() == "all":
        return None
    try:
        levels = int(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a number of levels or 'all'") from None
    if levels < 1:
        raise click.BadParameter("depth must be 1 or more (or 'all')")
    return levels


@cli.command()
@click.argument("summary_id")
@click.option(
    "--depth",
    metavar="N|all",
    callback=_depth,
    default="1",
    show_default=True,
    help="Levels below the summary to show: 1 is what it was built from; 'all' goes "
    "down to every message.",
)
@click.option("--tokens", "token_cap", type=int, default=None, help="Token cap of one page.")
@click.option("--cursor", default=None, help="Continue from the cursor a previous page printed.")
@click.option(
    "--around",
    "around",
    default=None,
    metavar="MESSAGE_ID",
    help="Open the page at this covered message (a grep hit), all levels deep.",
)
@click.option("--no-messages", is_flag=True, help="Stop at summaries; omit source messages.")
@json_option
@click.pass_context
def expand(
    ctx: click.Context,
    summary_id: str,
    depth: int | None,
    token_cap: int | None,
    cursor: str | None,
    around: str | None,
    no_messages: bool,
    as_json: bool,
) -> None:
    """Expand SUMMARY_ID into the summaries and messages it was built from, a page at a time.

    The expansion reads the DAG below the summary in order, each summary
    followed by its sources, down to --depth levels. A page stops at --tokens
    (default max_expand_tokens) and prints a cursor: pass it back with
    --cursor to continue exactly where it stopped, until every node was shown.
    From a grep hit, expand its covering summary --around the hit's message
    id: the page opens with that message, and a before-cursor reads what led
    up to it.

    \b
    Examples:
      lcm expand sum_3f2a91c0d4e5b6a7                  # what it was built from
      lcm expand sum_3f2a91c0d4e5b6a7 --depth all      # down to the messages
      lcm expand sum_3f2a91c0d4e5b6a7 --cursor 'sum_3f2a91c0d4e5b6a7:all:m:12:0:'
      lcm expand sum_3f2a91c0d4e5b6a7 --around 1042    # a grep hit first
    """
    engine = state_of(ctx).engine()
    result = engine.expand(
        summary_id,
        depth=depth,
        token_cap=token_cap,
        include_messages=not no_messages,
        cursor=cursor,
        around=around,
    )
    if as_json:
        emit_json(result.as_dict())
        return
    root = result.root
    shown = "all" if result.depth is None else result.depth
    click.echo(
        f"{root.id} ({root.kind}, depth {root.depth}) {root.earliest_at} .. {root.latest_at}; "
        f"{result.levels} level(s) below, showing {shown}; nodes {result.position + 1}-"
        f"{result.position + len(result.nodes)} of {result.total_nodes}"
    )
    for node in result.nodes:
        indent = "  " * node.level
        label = (
            f"summary {node.id} d{node.depth}"
            if node.kind == "summary"
            else (f"message {node.id} {node.role}")
        )
        piece = f"  from character {node.offset:,}" if node.offset else ""
        click.echo(
            f"\n{indent}--- {label}  {node.created_at or ''}  {node.token_count} tokens{piece}"
        )
        show("\n".join(indent + line for line in node.content.splitlines()))
        if node.clipped:
            click.echo(f"{indent}[continues on the next page]")
    if result.before_cursor:
        click.echo(f"\nbefore: lcm expand {root.id} --cursor '{result.before_cursor}'", err=True)
    if result.cursor:
        click.echo(
            f"\n[page stopped at {result.token_count} tokens] next: lcm expand {root.id} "
            f"--cursor '{result.cursor}'",
            err=True,
        )


@cli.group()
def config() -> None:
    """Inspect and change configuration ($LCM_HOME/config.toml)."""


@config.command("show")
@json_option
@click.pass_context
def config_show(ctx: click.Context, as_json: bool) -> None:
    """Print every setting: value, where it came from, type, default, env var, meaning.

    Precedence: defaults < $LCM_HOME/config.toml < LCM_* environment < arguments.
    Runs even when config.toml has mistakes: each is listed with its line, and
    the valid settings are shown as they apply.
    """
    from lossless.config import SETTINGS

    cfg = state_of(ctx).config(lenient=True)
    rows = cfg.display()
    by_name = {s.name: s for s in SETTINGS}
    problems = [p.describe() for p in cfg.problems]
    if as_json:
        shown: dict[str, object] = {}
        for name, value, origin in rows:
            entry: dict[str, object] = {"value": value, "origin": origin}
            setting = by_name.get(name)
            if setting is not None:
                entry.update(
                    type=setting.type.__name__,
                    default=setting.default,
                    env=setting.env,
                    description=setting.help,
                    choices=list(setting.choices),
                )
            shown[name] = entry
        emit_json(shown)
        for problem in problems:
            click.echo(f"problem: {problem} (left out; the valid settings are in use)", err=True)
        return
    for name, value, origin in rows:
        setting = by_name.get(name)
        wrapped(f"{name} = {value}    ({origin})", indent=4)
        if setting is not None:
            allowed = f"; one of {', '.join(setting.choices)}" if setting.choices else ""
            wrapped(f"    {setting.help}", indent=4)
            wrapped(
                f"    {setting.type.__name__}, default {setting.default!r}{allowed}; "
                f"env {setting.env}",
                indent=4,
            )
    for problem in problems:
        click.echo(f"problem: {problem} (left out; the valid settings are in use)", err=True)


@config.command("set")
@click.argument("name")
@click.argument("value")
@click.pass_context
def config_set(ctx: click.Context, name: str, value: str) -> None:
    """Set NAME to VALUE in config.toml (checked first; comments and the rest kept).

    \b
    Examples:
      lcm config set summarizer.provider command
      lcm config set summarizer.command 'claude -p'
      lcm config set fresh_tail_count 48
    """
    from lossless.config import CONFIG_FILE, check_value
    from lossless.config_file import set_value, toml_value

    state = state_of(ctx)
    home = state.config(lenient=True).home
    coerced = check_value(name, value)
    path = home / CONFIG_FILE
    set_value(path, name, toml_value(coerced))
    click.echo(f"{name} = {toml_value(coerced)} in {path}")


@config.command("unset")
@click.argument("name")
@click.pass_context
def config_unset(ctx: click.Context, name: str) -> None:
    """Remove NAME from config.toml (it falls back to its default or LCM_* variable)."""
    from lossless.config import CONFIG_FILE
    from lossless.config_file import unset_value

    path = state_of(ctx).config(lenient=True).home / CONFIG_FILE
    if unset_value(path, name):
        click.echo(f"{name} removed from {path}")
    else:
        click.echo(f"{name} is not set in {path}", err=True)


@cli.command()
@click.argument("conversations", nargs=-1)
@json_option
@click.pass_context
def verify(ctx: click.Context, conversations: tuple[str, ...], as_json: bool) -> None:
    """Prove the stored history is whole, or say exactly what is wrong where.

    Checks that every message is reachable exactly once, in order, from the
    conversation's context through its summaries; that sequence numbers and
    part orders have no gaps; that the summary DAG links are sound; and runs
    the backend's own integrity check. Exits 1 when a problem is found.
    With CONVERSATIONS (ids or session ids), checks only those.
    """
    from lossless.engine.verify import verify as run_verify

    engine = state_of(ctx).engine()
    chosen = [engine.resolve_conversation(c) for c in conversations] if conversations else None
    total = len(chosen) if chosen is not None else len(engine.store.conversations.list())
    with click.progressbar(
        length=max(total, 1),
        label="Verifying",
        file=sys.stderr,
        hidden=as_json or total < 20,
    ) as bar:
        report = run_verify(engine.store, chosen, progress=lambda _c: bar.update(1))
    if as_json:
        emit_json(
            {
                "ok": report.ok,
                "conversations": report.conversations,
                "messages": report.messages,
                "summaries": report.summaries,
                "problems": [{"where": p.where, "what": p.what} for p in report.problems],
            }
        )
    else:
        click.echo(
            f"checked {report.conversations} conversation(s), {report.messages} message(s), "
            f"{report.summaries} summary(ies): "
            + ("all whole" if report.ok else f"{len(report.problems)} problem(s)")
        )
        for found in report.problems:
            click.echo(f"lcm: {found}", err=True)
    if not report.ok:
        ctx.exit(1)


@cli.command()
@click.option(
    "--raw-older-than",
    "raw_days",
    type=click.FloatRange(min=0),
    metavar="DAYS",
    help="Also drop the raw transcript lines (provenance) of messages older than DAYS; "
    "the messages and their parts stay byte-exact.",
)
@click.option("--dry-run", is_flag=True, help="Only say what would be dropped.")
@json_option
@click.pass_context
def gc(ctx: click.Context, raw_days: float | None, dry_run: bool, as_json: bool) -> None:
    """Give back space: store old rows' repeated text once, compact the file.

    Parts and raw lines written in full by an older lossless are re-stored as
    references to their message's text (on SQLite, raw lines are also packed
    with the store's trained dictionary); with --raw-older-than, the raw
    transcript lines of older messages are dropped too. Nothing a message is
    made of is dropped. Example: lcm gc --raw-older-than 90 --dry-run
    """
    from lossless.engine.gc import collect_garbage

    engine = state_of(ctx).engine()
    report = collect_garbage(engine.store, raw_older_than_days=raw_days, dry_run=dry_run)
    if as_json:
        emit_json(to_jsonable(report))
        return
    if report.raw_cutoff is not None:
        verb = "would drop" if dry_run else "dropped"
        click.echo(
            f"raw lines: {verb} {report.raw_lines_dropped} of messages before {report.raw_cutoff}"
        )
    if dry_run:
        click.echo(f"size:      {report.bytes_before / 1e6:.1f} MB (nothing changed)")
        return
    click.echo(f"stored once: {report.rows_stored_once} part(s) and raw line(s) re-stored")
    click.echo(
        f"size:      {report.bytes_before / 1e6:.1f} MB -> {report.bytes_after / 1e6:.1f} MB"
    )
