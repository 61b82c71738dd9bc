"""Commands for durable memory, recall and handoff: remember, memories, forget,
revive, search, checkpoint, resume."""

from __future__ import annotations

import os
from pathlib import Path

import click

from lossless.cli.app import cli, emit_json, json_option, state_of
from lossless.cli.output import print_table
from lossless.cli.shown import show
from lossless.engine import handoff
from lossless.engine.memory import remember as remember_memory
from lossless.errors import InputError


def _project(project: str | None) -> str:
    # Imported sessions are filed under their working directory, so the
    # current directory names the same project by default.
    return project if project is not None else os.getcwd()


project_option = click.option(
    "--project",
    default=None,
    help="Project the memory belongs to (default: the current directory, as imports use).",
)


@cli.command("remember")
@click.argument("text")
@click.option("--tag", "-t", "tags", multiple=True, help="A label; repeat for several.")
@project_option
@json_option
@click.pass_context
def remember_cmd(
    ctx: click.Context, text: str, tags: tuple[str, ...], project: str | None, as_json: bool
) -> None:
    """Keep TEXT as a durable memory of the project (a decision, fix or convention).

    Memories come back in `lcm search` and, through the prompt hook, in later
    sessions when they are relevant. Saying the same thing again (ignoring case
    and punctuation) does not duplicate it: the existing memory is returned and
    gets the new tags.

    \b
    Examples:
      lcm remember "Use uv, not pip, for every install" --tag tooling
      lcm remember "Never run migrations on Friday" --project /srv/app
    """
    engine = state_of(ctx).engine()
    where = _project(project)
    write = remember_memory(
        engine.store, text, project=where, tags=tags, redactor=engine.redactors.for_project(where)
    )
    if as_json:
        emit_json({"created": write.created, "memory": write.memory})
        return
    m = write.memory
    if write.created:
        click.echo(f"Remembered {m.id}.")
    elif m.archived:
        click.echo(f"Already remembered as {m.id}, which is forgotten: `lcm revive {m.id}`.")
    else:
        click.echo(f"Already remembered as {m.id} (tags: {', '.join(m.tags) or 'none'}).")


@cli.command("memories")
@click.option("--all", "show_all", is_flag=True, help="Include forgotten (archived) memories.")
@click.option("--every-project", is_flag=True, help="List memories of all projects.")
@project_option
@json_option
@click.pass_context
def memories_cmd(
    ctx: click.Context, show_all: bool, every_project: bool, project: str | None, as_json: bool
) -> None:
    """List the memories of the project (oldest first).

    `used` counts how often an agent relied on a memory, `shown` how often it
    was surfaced; memories shown often and never used fade from recall.
    """
    engine = state_of(ctx).engine()
    found = engine.store.memory.list(
        project=None if every_project else _project(project), include_archived=show_all
    )
    if as_json:
        emit_json({"memories": found})
        return
    if not found:
        click.echo("No memories yet. Add one with `lcm remember TEXT`.")
        return
    print_table(
        ["id", "confidence", "used", "shown", "tags", "text"] + (["archived"] if show_all else []),
        [
            [m.id, f"{m.confidence:.2f}", m.used_count, m.surfaced_count, ",".join(m.tags), m.text]
            + (["yes" if m.archived else ""] if show_all else [])
            for m in found
        ],
        max_width=70,
    )


@cli.command("forget")
@click.argument("memory_id")
@json_option
@click.pass_context
def forget_cmd(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Archive a memory: it stops appearing in listings, search and recall.

    Nothing is deleted; `lcm revive MEMORY_ID` brings it back, and
    `lcm memories --all` shows archived ones.
    """
    memory = state_of(ctx).engine().store.memory.archive(memory_id)
    if as_json:
        emit_json({"memory": memory})
    else:
        click.echo(f"Forgot {memory.id} (undo with `lcm revive {memory.id}`).")


@cli.command("revive")
@click.argument("memory_id")
@json_option
@click.pass_context
def revive_cmd(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Bring back a memory archived with `lcm forget`.

    It appears again in `lcm memories`, `lcm search` and prompt recall, with
    its usage counts intact. `lcm memories --all` lists archived ids.
    """
    memory = state_of(ctx).engine().store.memory.revive(memory_id)
    if as_json:
        emit_json({"memory": memory})
    else:
        click.echo(f"Revived {memory.id}.")


@cli.command("search")
@click.argument("query")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=0))
@click.option("--project", default=None, help="Only this project (default: every project).")
@click.option("--conversation", "-c", default=None, help="Only this conversation (id or session).")
@click.option(
    "--all-projects",
    is_flag=True,
    help="Every project: the default, as for `lcm grep` (kept for scripts).",
)
@json_option
@click.pass_context
def search_cmd(
    ctx: click.Context,
    query: str,
    limit: int,
    project: str | None,
    conversation: str | None,
    all_projects: bool,
    as_json: bool,
) -> None:
    """Search memories and history (messages, summaries, large files) ranked together.

    Hybrid where the `semantic` extra is installed: full-text matches and
    the nearest meanings (vectors the background worker computes; `lcm
    embed` computes the rest now) fused into one score. Each hit says why it
    matched: lexical, semantic or both. Without the extra, full text only:
    any word of QUERY may match and hits holding more of its words rank
    higher. A memory outranks a message that matches as well. Follow a
    message or summary id with `lcm describe` / `lcm expand`.

    \b
    Examples:
      lcm search "flaky import test"
      lcm search "database migration" --project ~/src/app --json
      lcm search 飞书 -c 42
    """
    from lossless.search_scope import SearchScope

    if all_projects and project is not None:
        raise InputError("--all-projects and --project contradict each other: pass one")
    engine = state_of(ctx).engine()
    conversation_id = None if conversation is None else engine.resolve_conversation(conversation).id
    searched = SearchScope(project=project, conversation_id=conversation_id)
    hits = engine.search(query, project=project, conversation_id=conversation_id, limit=limit)
    if as_json:
        emit_json(
            {
                "query": query,
                "scope": searched.as_json(),
                "project": project,
                "hybrid": hits.hybrid,
                "semantic": hits.semantic,
                "hits": list(hits),
            }
        )
        return
    click.echo(f"searched {searched.describe()}", err=True)
    if not hits:
        click.echo(f"Nothing matches {query!r} in {searched.describe()}.")
        click.echo(f"({hits.semantic})", err=True)
        return
    print_table(
        ["kind", "id", "score", "matched", "when", "text"],
        [
            [h.kind, h.id, f"{h.score:.2f}", "+".join(h.matched), (h.created_at or "")[:16], h.text]
            for h in hits
        ],
        max_width=90,
    )
    click.echo(f"({hits.semantic})", err=True)


dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Workspace folder holding .lcm-checkpoint.md (default: the current directory).",
)


@cli.command("checkpoint")
@click.argument("conversation", required=False)
@dir_option
@json_option
@click.pass_context
def checkpoint_cmd(
    ctx: click.Context, conversation: str | None, directory: Path | None, as_json: bool
) -> None:
    """Write .lcm-checkpoint.md: goal, decisions, open threads, files, summaries to expand.

    CONVERSATION is an id or session id (default: the newest conversation of
    the project in the current directory). The file is plain markdown: edit
    it freely, then continue elsewhere with `lcm resume`.
    """
    engine = state_of(ctx).engine()
    folder = directory if directory is not None else Path.cwd()
    if conversation is not None:
        conversation_id = engine.resolve_conversation(conversation).id
    else:
        here = engine.store.conversations.list(project=str(Path.cwd()))
        if not here:
            raise InputError(
                f"no conversation for project {Path.cwd()}; pass one "
                "(`lcm conversations` lists them)"
            )
        conversation_id = here[-1].id
    path = handoff.write_checkpoint(engine.store, conversation_id, folder)
    if as_json:
        emit_json({"path": str(path), "checkpoint": handoff.read_checkpoint(folder)[1]})
    else:
        click.echo(f"Wrote {path} (conversation {conversation_id}).")


@cli.command("resume")
@dir_option
@click.option(
    "--prompt",
    "for_prompt",
    is_flag=True,
    help="Render it for a model's context: markup escaped, orders shown as recorded.",
)
@json_option
@click.pass_context
def resume_cmd(ctx: click.Context, directory: Path | None, for_prompt: bool, as_json: bool) -> None:
    """Rebuild working state from .lcm-checkpoint.md and the store, as markdown.

    Shows the goal, decisions, open threads, files touched, the summaries to
    expand (and which are missing on this machine), messages added since the
    checkpoint and the project's memories. Anything in them that reads as an
    instruction to an agent is withheld. Paste it into a new session (with
    --prompt when a program feeds it to a model: markup is then escaped).
    """
    engine = state_of(ctx).engine()
    state = handoff.resume(engine.store, directory if directory is not None else Path.cwd())
    if as_json:
        emit_json(state)
    else:
        show(handoff.render_resume(state, for_prompt=for_prompt))
