"""Client integration commands: install, uninstall, hook, worker, mcp, doctor."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from lossless.cli.app import cli, emit_json, json_option, state_of
from lossless.jsonable import to_jsonable

if TYPE_CHECKING:
    from lossless.integrations.files import Plan, Scope


@cli.command()
# A plain string, not a Choice: a misspelled event must not make click exit 2
# in front of the client; hooks.main logs it and exits 0.
@click.argument("event", metavar="EVENT")
@click.option(
    "--client",
    type=click.Choice(["claude-code", "codex"]),
    default=None,
    help="Transcript format (default: detected from the file).",
)
@click.option(
    "--inline-bytes",
    type=int,
    default=8 * 1024 * 1024,
    show_default=True,
    help="Largest unread backlog ingested inside the hook; a larger one (lossless "
    "installed mid-session, an old session resumed) is imported by a detached process "
    "so the hook stays fast.",
)
@click.option("--background", is_flag=True, hidden=True)
@click.option("--lock-fd", type=int, default=None, hidden=True)
@click.pass_context
def hook(
    ctx: click.Context,
    event: str,
    client: str | None,
    inline_bytes: int,
    background: bool,
    lock_fd: int | None,
) -> None:
    """Handle one Claude Code / Codex hook EVENT, reading its JSON from stdin.

    This is what `lcm install` registers; you do not run it by hand. It stores
    what the session transcript gained since the last hook (and the sub-agent
    transcripts beside it), asks the background worker to compact when enough
    has piled up, and after a client-side compaction or on resume
    (SessionStart) prints the session's summary DAG for the model.

    It never fails the session: errors go to $LCM_HOME/logs/hooks.log, the
    exit code is always 0 and nothing but the event's answer is printed.

    \b
    Events:
      UserPromptSubmit, PostToolUse, PostToolUseFailure, Stop, SubagentStop, PostCompact
                    ingest the transcript delta (the last message waits until complete)
      PreCompact    ingest everything before the client compacts
      SessionEnd    final ingest and a compaction request
      SessionStart  on source=compact|resume: print the DAG view as additionalContext
    """
    from lossless import hooks

    code = hooks.main(
        hooks.canonical_event(event),
        home=state_of(ctx).home,
        client=client,
        inline_bytes=inline_bytes,
        background=background,
        lock_fd=lock_fd,
    )
    ctx.exit(code)


@cli.command()
@click.option(
    "--once",
    is_flag=True,
    help="Serve what is pending now and exit (for cron), instead of waiting for more.",
)
@click.option(
    "--idle",
    "idle_s",
    type=float,
    default=None,
    help="Exit after this many seconds without work (default: worker.idle_s, 60); "
    "never while events captured offline wait and their delivery is failing.",
)
@click.option(
    "--poll",
    "poll_s",
    type=float,
    default=2.0,
    show_default=True,
    help="Seconds between scans for new requests.",
)
@click.option(
    "--lease-ttl",
    "lease_ttl_s",
    type=float,
    default=None,
    help="Seconds a conversation's compaction lease lasts unless renewed: how long a "
    "crashed worker can hold others off (default: from summarizer.timeout_s).",
)
@json_option
@click.pass_context
def worker(
    ctx: click.Context,
    once: bool,
    idle_s: float | None,
    poll_s: float,
    lease_ttl_s: float | None,
    as_json: bool,
) -> None:
    """Compact conversations in the background, as hooks request it.

    Hooks start this detached when a session has piled up enough raw messages
    (and at session end); you rarely run it yourself. It takes each pending
    conversation's compaction lease, runs compaction with the configured
    summarizer (`lcm config show`, summarizer.*); between requests it adds
    what a large `lcm import` left out of the substring index. On PostgreSQL
    it also delivers what hooks captured offline (the outbox), retrying a
    failing delivery with a back-off up to worker.outbox_retry_max_s. It
    exits once idle, but not while captured events wait on a failing
    delivery. Only one worker runs per data folder; a second one exits at once.
    `--once` serves what is pending (the whole index backlog, and up to 10
    seconds of embedding; `lcm embed` does all of it) and exits,
    for cron:

    \b
      */10 * * * *  lcm worker --once
    """
    from lossless.worker import Worker

    state = state_of(ctx)

    def say(line: str) -> None:
        if not as_json:
            click.echo(f"lcm worker: {line}", err=True)

    report = Worker(state.engine(), log=say, lease_ttl_s=lease_ttl_s).run(
        once=once,
        idle_s=state.config().worker_idle_s if idle_s is None else idle_s,
        poll_s=poll_s,
    )
    if as_json:
        emit_json(to_jsonable(report))
    elif report.already_running is not None:
        click.echo(
            f"lcm worker: another worker is running (pid {report.already_running})", err=True
        )
    elif not report.jobs:
        click.echo("lcm worker: nothing to compact", err=True)
    failed = [j for j in report.jobs if j.error]
    if failed:
        ctx.exit(1)


@cli.command()
@click.option(
    "--project",
    default=None,
    help="Project the tools see by default (default: the current directory, which is "
    "what the client starts the server in).",
)
@click.option("--all-projects", is_flag=True, help="Let the tools see every project by default.")
@click.pass_context
def mcp(ctx: click.Context, project: str | None, all_projects: bool) -> None:
    """Serve lossless to an agent over MCP (stdio): grep, search, describe, expand, store.

    `lcm install` registers this with Claude Code or Codex; you do not run it
    by hand. Tools: lcm_grep, lcm_search, lcm_describe, lcm_expand,
    lcm_expand_query and lcm_status read history; lcm_store keeps a durable
    memory for the project; lcm_llm_map and lcm_agentic_map start a job over
    many items and lcm_job follows it. They see the current project's sessions unless
    asked for all projects. initialize, the tool list and the read-only tools
    are answered without loading the MCP SDK, which loads only for a call that
    needs it (lcm_store, lcm_expand_query, the map tools); the server exits
    when its client closes stdin or goes away.
    Needs the MCP SDK:

    \b
      pip install 'lossless-context[mcp]'   (pipx: pipx inject lossless-context mcp; uv: uv tool install --force 'lossless-context[mcp]')
    """
    from lossless import mcp_stdio

    state = state_of(ctx)
    mcp_stdio.main(
        lambda: state.config(lenient=True),
        home=state.home,
        project=project,
        all_projects=all_projects,
    )


_CLIENTS = click.Choice(["claude-code", "codex"])
_scope_option = click.option(
    "--scope",
    type=click.Choice(["user", "project"]),
    default="user",
    show_default=True,
    help="user: every session of this user; project: sessions in --project-dir only.",
)
_project_option = click.option(
    "--project-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Project folder for --scope project (default: the current directory).",
)
_dry_run_option = click.option(
    "--dry-run", is_flag=True, help="Show the changes as diffs; write nothing."
)


def _plan(
    ctx: click.Context,
    action: str,
    client: str,
    scope: str,
    project_dir: Path | None,
    *,
    allow_tools: bool = True,
) -> Plan:
    from lossless.integrations import claude_code, codex

    config = state_of(ctx).config()
    where: Scope = "project" if scope == "project" else "user"
    if client == "claude-code":
        if action == "install":
            return claude_code.plan_install(
                config, where, project_dir, allow_read_only_tools=allow_tools
            )
        return claude_code.plan_uninstall(config, where, project_dir)
    if action == "install":
        return codex.plan_install(config, where, project_dir)
    return codex.plan_uninstall(config, where, project_dir)


def _confirm_codex_trust(ctx: click.Context, scope: str, project_dir: Path | None) -> str:
    """Check with the installed Codex that it trusts the hooks just written; when it
    computes other hashes than lossless did, record Codex's and check again."""
    from lossless.integrations import codex

    config = state_of(ctx).config()
    where: Scope = "project" if scope == "project" else "user"
    note, reported = codex.confirm_trust(config, where, project_dir)
    if reported:
        codex.plan_install(config, where, project_dir, trusted_hashes=reported).apply()
        note = f"{note}; {codex.confirm_trust(config, where, project_dir)[0]}"
    return f"trust: {note}"


def _report(plan: Plan, dry_run: bool, as_json: bool) -> None:
    if as_json:
        emit_json(
            {
                "action": plan.action,
                "client": plan.client,
                "scope": plan.scope,
                "dry_run": dry_run,
                "files": [
                    {
                        "path": str(c.path),
                        "changed": c.changed,
                        "deleted": c.changed and c.after is None,
                        "summary": c.summary,
                        **({"diff": c.diff()} if dry_run and c.changed else {}),
                    }
                    for c in plan.changes
                ],
                "notes": plan.notes,
            }
        )
        return
    verb = "would change" if dry_run else "changed"
    for change in plan.changes:
        if not change.changed:
            click.echo(f"unchanged  {change.path}")
            continue
        what = "; ".join(change.summary) or "updated"
        if change.after is None:
            what += " (file now empty: deleted)"
        click.echo(f"{verb:<10} {change.path}: {what}")
        if dry_run:
            click.echo(change.diff().rstrip("\n"))
    for note in plan.notes:
        click.echo(f"note: {note}", err=True)
    if not plan.changed:
        state = "already installed" if plan.action == "install" else "nothing to remove"
        click.echo(f"{plan.client}: {state}.")


@cli.command()
@click.argument("client", type=_CLIENTS)
@_scope_option
@_project_option
@_dry_run_option
@click.option(
    "--ask-for-tools",
    is_flag=True,
    help="Claude Code: do not pre-approve lossless's read-only tools in permissions.allow "
    "(then `claude -p` denies them unless --allowedTools names them).",
)
@json_option
@click.pass_context
def install(
    ctx: click.Context,
    client: str,
    scope: str,
    project_dir: Path | None,
    dry_run: bool,
    ask_for_tools: bool,
    as_json: bool,
) -> None:
    """Wire lossless into CLIENT: capture hooks and the `lcm` MCP server.

    After this, every session is stored as it happens (hooks run `lcm hook`),
    compacted in the background, and searchable by the agent through the MCP
    tools. Your other hooks and MCP servers are kept as they are; running it
    again changes nothing; `lcm uninstall CLIENT` removes exactly what it
    added. Commands are written with the absolute path of this `lcm`, so they
    work outside its virtualenv.

    \b
    claude-code  user:    ~/.claude/settings.json (hooks), ~/.claude.json (MCP)
                 project: .claude/settings.json (hooks), .mcp.json (MCP)
    codex        user:    ~/.codex/hooks.json, ~/.codex/config.toml [mcp_servers.lcm]
                 project: .codex/hooks.json, .codex/config.toml
                 (hook trust: always ~/.codex/config.toml)

    Claude Code: the read-only lcm tools (grep, search, describe, expand,
    expand_query, status) are pre-approved in permissions.allow unless
    --ask-for-tools; lcm_store still asks. Codex runs a hook only when the
    user's config.toml records it as trusted: install records trust for
    exactly the hooks it wrote and, when `codex` is on PATH, checks with
    Codex that it now trusts them. Needs the 'mcp' extra in this lcm's
    environment (install refuses without it and says how to add it).

    \b
    Examples:
      lcm install claude-code --dry-run     # see the diff first
      lcm install claude-code
      lcm install codex --scope project
    """
    from lossless.errors import ConfigError
    from lossless.integrations.environment import has_mcp_sdk, mcp_extra_instructions

    if not has_mcp_sdk():
        raise ConfigError(
            f"this lcm ({sys.executable}) has no MCP SDK, so the `lcm mcp` server "
            f"{client} would start cannot run; nothing was changed. To "
            f"{mcp_extra_instructions()}, then run `lcm install {client}` again"
        )
    plan = _plan(ctx, "install", client, scope, project_dir, allow_tools=not ask_for_tools)
    if not dry_run:
        plan.apply()
        if client == "codex":
            plan.notes.append(_confirm_codex_trust(ctx, scope, project_dir))
        from lossless import mcp_tool_list

        # Clients build their first request from the tool lists they have
        # by then: the server's must not wait for the SDK's import.
        prepared = mcp_tool_list.prepare_home(state_of(ctx).config(lenient=True).home)
        if prepared is not None:
            plan.notes.append(prepared)
    _report(plan, dry_run, as_json)
    if not dry_run and not as_json and plan.changed:
        click.echo("Restart the client to load the hooks; `lcm doctor` checks the setup.")


@cli.command()
@click.argument("client", type=_CLIENTS)
@_scope_option
@_project_option
@_dry_run_option
@json_option
@click.pass_context
def uninstall(
    ctx: click.Context,
    client: str,
    scope: str,
    project_dir: Path | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Remove what `lcm install CLIENT` added: lossless's hooks and MCP entry.

    Only entries that run `lcm hook` / `lcm mcp` (and, for Codex, the block
    between lossless's markers in config.toml) are removed; a file left empty
    that lossless created is deleted; the hook server stops. Stored history is
    not touched.
    """
    plan = _plan(ctx, "uninstall", client, scope, project_dir)
    if not dry_run:
        plan.apply()
    _report(plan, dry_run, as_json)
    if not dry_run:
        from lossless.hook_server.control import stop

        # Hooks still installed elsewhere start a new one at their next run.
        stopped = stop(state_of(ctx).config(lenient=True).home)
        if stopped is not None and not as_json:
            click.echo(f"stopped the hook server (pid {stopped})")


@cli.command()
@click.option(
    "--project-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Project whose project-scope install to check (default: the current directory).",
)
@click.option(
    "--no-probe",
    is_flag=True,
    help="Do not make the one tiny test call to the configured summarizer.",
)
@json_option
@click.pass_context
def doctor(ctx: click.Context, project_dir: Path | None, no_probe: bool, as_json: bool) -> None:
    """Check that lossless is installed, working and keeping up; say how to fix what is not.

    Looks at the Claude Code and Codex installs (hooks present and running a
    working lcm, MCP entries), the store (opens, migrations verified), the
    background worker (requests served, compaction errors), the summarizer
    (one tiny real call to the configured provider, at most 20 seconds; a
    few tokens on a paid API; --no-probe skips it), the outbox (PostgreSQL:
    what hooks captured offline, and why) and recent hook failures and
    store errors. Exits 1 when a problem is found, 0 otherwise (warnings included).
    """
    from lossless.doctor import run_checks

    checks = run_checks(
        state_of(ctx).config(lenient=True),
        project_dir=project_dir,
        probe_summarizer=not no_probe,
    )
    problems = [c for c in checks if c.status == "problem"]
    if as_json:
        emit_json({"ok": not problems, "checks": to_jsonable(checks)})
    else:
        from lossless.cli.output import print_checks

        marks = {"ok": "ok  ", "info": "info", "warn": "WARN", "problem": "FAIL"}
        lines: list[tuple[str, str, str]] = []
        for check in checks:
            lines.append(
                (
                    check.status,
                    f"[{marks[check.status]}]",
                    f"{check.area}: {check.name}: {check.detail}",
                )
            )
            if check.fix and check.status in ("warn", "problem"):
                lines.append((check.status, "", f"fix: {check.fix}"))
        print_checks(lines)
        click.echo(
            f"\n{len(problems)} problem(s), "
            f"{sum(1 for c in checks if c.status == 'warn')} warning(s)."
        )
    if problems:
        ctx.exit(1)
