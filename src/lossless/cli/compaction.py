"""Commands over the active context: compact, context, dag."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import click

from lossless.cli.app import cli, emit_json, json_option, state_of
from lossless.cli.output import clipped, print_table, wrapped
from lossless.cli.shown import for_stream, show
from lossless.engine.compaction import CompactionPlan, CompactionResult, PassResult
from lossless.errors import InputError
from lossless.models import Conversation
from lossless.words import counted


def _selected(ctx: click.Context, conversation: str | None, all_: bool) -> list[Conversation]:
    engine = state_of(ctx).engine()
    if all_ and conversation:
        raise click.UsageError("give either CONV or --all, not both")
    if all_:
        return engine.store.conversations.list()
    if not conversation:
        raise click.UsageError("say which conversation (CONV: id or session id) or use --all")
    return [engine.resolve_conversation(conversation)]


def _plan_row(conv: Conversation, plan: CompactionPlan) -> tuple[Any, ...]:
    condensable = ", ".join(f"d{d}:{n}" for d, n in sorted(plan.condensable.items())) or "-"
    return (
        conv.id,
        conv.session_id,
        plan.context_tokens,
        plan.protected_tokens,
        plan.leaf_chunks,
        plan.leaf_source_tokens,
        plan.estimated_tokens_after_leaves,
        condensable,
    )


def _plan_json(conv: Conversation, plan: CompactionPlan) -> dict[str, Any]:
    return {
        "conversation_id": conv.id,
        "session_id": conv.session_id,
        "context_tokens": plan.context_tokens,
        "context_items": plan.context_items,
        "raw_messages": plan.raw_messages,
        "protected_messages": plan.protected_messages,
        "protected_tokens": plan.protected_tokens,
        "leaf_chunks": plan.leaf_chunks,
        "leaf_source_tokens": plan.leaf_source_tokens,
        "estimated_tokens_after_leaves": plan.estimated_tokens_after_leaves,
        "condensable": {str(d): n for d, n in plan.condensable.items()},
        "description": plan.describe(),
    }


def _result_json(conv: Conversation, result: CompactionResult) -> dict[str, Any]:
    return {
        "conversation_id": conv.id,
        "session_id": conv.session_id,
        "mode": result.mode,
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
        "saved": result.saved,
        "summaries_created": result.summaries_created,
        "target": result.target,
        "reached_target": result.reached_target,
        "noop": result.noop,
        "error": result.error,
        "description": result.describe(),
        "levels": result.levels,
        "reasons": result.reasons,
        "passes": [
            {
                "kind": p.kind,
                "summary_id": p.summary_id,
                "depth": p.depth,
                "level": p.level,
                "why": p.why,
                "model": p.model,
                "source_items": p.source_items,
                "source_tokens": p.source_tokens,
                "summary_tokens": p.summary_tokens,
                "tokens_before": p.tokens_before,
                "tokens_after": p.tokens_after,
            }
            for p in result.passes
            if p.acted
        ],
    }


@cli.command()
@click.argument("conversation", metavar="[CONV]", required=False)
@click.option("--all", "all_", is_flag=True, help="Compact every stored conversation.")
@click.option(
    "--dry-run", is_flag=True, help="Only show what would be compacted; summarize nothing."
)
@click.option(
    "--until",
    "until",
    type=click.IntRange(min=0),
    default=None,
    metavar="TOKENS",
    help="Compact until the context is at most TOKENS tokens (budget-targeted).",
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="Seconds to wait for another worker compacting the same conversation.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@json_option
@click.pass_context
def compact(
    ctx: click.Context,
    conversation: str | None,
    all_: bool,
    dry_run: bool,
    until: int | None,
    wait: float,
    quiet: bool,
    as_json: bool,
) -> None:
    """Compact conversations: summarize old messages into the summary DAG.

    CONV is a conversation id or session id (a unique prefix works too). Only
    the active context changes: messages are never altered or deleted, and
    every summary links back to what it covers (`lcm dag`, `lcm expand`).

    \b
    What a run does (a "sweep"):
      1. leaf passes: the oldest raw messages outside the protected tail
         (the last fresh_tail_count messages, widened only to keep tool
         exchanges whole) are summarized, leaf_chunk_tokens at a time;
      2. condensation: runs of same-depth summaries (leaf_min_fanout at
         depth 0, condensed_min_fanout above) merge into a deeper summary;
      3. it stops when nothing is eligible or a pass saves nothing.
    With --until TOKENS it stops as soon as the context fits, and may merge
    smaller runs of summaries to get there.

    \b
    Examples:
      lcm compact 3f2a91c0 --dry-run     # what would happen
      lcm compact 3f2a91c0               # full sweep of one session
      lcm compact --all --until 100000   # every conversation under 100k tokens
    """
    conversations = _selected(ctx, conversation, all_)
    engine = state_of(ctx).engine()
    if dry_run:
        compactor = engine.compactor()
        plans = [(c, compactor.plan(c.id)) for c in conversations]
        if as_json:
            emit_json({"dry_run": True, "conversations": [_plan_json(c, p) for c, p in plans]})
            return
        print_table(
            [
                "conv",
                "session",
                "context",
                "protected",
                "leaf chunks",
                "chunk tokens",
                "after leaves~",
                "condensable",
            ],
            [_plan_row(c, p) for c, p in plans],
            max_width=40,
        )
        todo = sum(1 for _, p in plans if p.leaf_chunks or p.condensable)
        click.echo(f"\n{todo} of {len(plans)} conversation(s) have something to compact.")
        return

    compactor = engine.compactor(wait_s=wait)
    # One conversation: the bar counts its planned leaf passes. Many: it
    # counts conversations (planning them all first would read history twice).
    single = len(conversations) == 1
    length = compactor.plan(conversations[0].id).leaf_chunks if single else len(conversations)
    results: list[tuple[Conversation, CompactionResult]] = []
    with click.progressbar(
        length=max(length, 1),
        label="Compacting",
        file=sys.stderr,
        show_pos=True,
        hidden=quiet or as_json or length == 0,
    ) as bar:

        def advance(outcome: PassResult) -> None:
            if single and outcome.kind == "leaf":
                bar.update(1)

        compactor.on_pass = advance
        for conv in conversations:
            if until is not None:
                result = compactor.compact_until_under(conv.id, until)
            else:
                result = compactor.sweep(conv.id)
            results.append((conv, result))
            if not single:
                bar.update(1)
    if as_json:
        emit_json({"conversations": [_result_json(c, r) for c, r in results]})
        _exit_if_busy(results, wait)
        return
    shown = [(c, r) for c, r in results if r.acted or r.error or len(results) <= 20]
    if shown:
        print_table(
            ["conv", "session", "before", "after", "saved", "leaf", "condensed", "result"],
            [
                (
                    c.id,
                    c.session_id,
                    r.tokens_before,
                    r.tokens_after,
                    r.saved,
                    sum(1 for p in r.passes if p.acted and p.kind == "leaf"),
                    sum(1 for p in r.passes if p.acted and p.kind == "condensed"),
                    r.error or (r.noop if not r.acted else "ok") or "ok",
                )
                for c, r in shown
            ],
            max_width=60,
        )
    created = sum(len(r.summaries_created) for _, r in results)
    saved = sum(r.saved for _, r in results)
    click.echo()
    wrapped(
        f"{counted(len(results), 'conversation')}: {counted(created, 'summary')} created, "
        f"{counted(saved, 'token')} saved."
    )
    _report_levels([r for _, r in results])
    if until is not None:
        missed = [c for c, r in results if r.reached_target is False]
        if missed:
            click.echo(
                f"{len(missed)} conversation(s) are still above {until:,} tokens: "
                "their protected tail alone is too large.",
                err=True,
            )
    _exit_if_busy(results, wait)


def _report_levels(results: list[CompactionResult]) -> None:
    """How many summaries came from each escalation level, and why any did not
    come from the model's first answer: a broken summarizer must be visible."""
    levels: dict[str, int] = {}
    for result in results:
        for level, n in result.levels.items():
            levels[level] = levels.get(level, 0) + n
    if not levels:
        return
    order = ("normal", "aggressive", "fallback")
    shown = ", ".join(f"{levels.get(level, 0):,} {level}" for level in order)
    degraded = levels.get("aggressive", 0) + levels.get("fallback", 0)
    wrapped(
        f"Summaries by escalation level: {shown}"
        + (" (fallback = truncation, not a summary)." if levels.get("fallback") else "."),
        indent=2,
        status="warn" if degraded else None,
    )
    # "retry after 59s" and "retry after 58s" are one cause.
    reasons = list(
        dict.fromkeys(re.sub(r"\b\d+s\b", "Ns", why) for r in results for why in r.reasons)
    )
    for why in reasons[:3]:
        wrapped(f"  why: {why}", indent=7, status="warn")
    if len(reasons) > 3:
        wrapped(f"  ... and {len(reasons) - 3} more causes (--json lists them)")
    from lossless.summarize.spend import OFFLINE_MODEL_PREFIX

    capped = [
        p.model
        for r in results
        for p in r.passes
        if p.acted and p.model and p.model.startswith(OFFLINE_MODEL_PREFIX)
    ]
    if capped:
        wrapped(
            f"  {counted(len(capped), 'summary')} written by the offline summarizer: the "
            f"spend cap was reached ({capped[-1].removeprefix(OFFLINE_MODEL_PREFIX).strip(' :()')}"
            "); see `lcm status`, raise summarizer.max_* to allow more.",
            indent=2,
            status="warn",
        )
    if levels.get("fallback"):
        wrapped(
            "  check the summarizer with `lcm doctor`; `lcm status` counts the levels of "
            "every stored summary.",
            indent=2,
        )


#: Exit status of `lcm compact` when asked work did not happen because another
#: process holds a conversation's compaction lease (1 is an error, 0 success).
EXIT_BUSY = 3


def _exit_if_busy(results: list[tuple[Conversation, CompactionResult]], wait: float) -> None:
    """Asked work that did not happen is not a success: say who holds it, exit 3."""
    busy = [(c, r) for c, r in results if not r.acted and (r.noop or "").startswith("busy")]
    if not busy:
        return
    holders = "".join(
        f"\n  conversation {c.id}: {(r.noop or '').removeprefix('busy: ')}" for c, r in busy[:10]
    ) + (f"\n  ... and {len(busy) - 10} more" if len(busy) > 10 else "")
    click.echo(
        f"lcm: {len(busy)} conversation(s) not compacted (waited {wait:g} s for their "
        f"compaction lease):{holders}\nRetry when that process is done, or with a longer "
        "--wait. A lease left by a process that died on this machine is taken over at once; "
        "one held from another machine lasts until its end time.",
        err=True,
    )
    raise SystemExit(EXIT_BUSY)


def _block_text(block: dict[str, Any], limit: int) -> str:
    kind = block.get("type")
    if kind == "text":
        text = str(block.get("text", ""))
    elif kind == "tool_use":
        args = json.dumps(block.get("input", {}), ensure_ascii=False)
        text = f"[tool_use {block.get('name')} {block.get('id')}] {args}"
    elif kind == "tool_result":
        content = block.get("content", "")
        body = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        text = f"[tool_result {block.get('tool_use_id')}] {body}"
    else:
        text = f"[{kind}]"
    return text if len(text) <= limit else text[: limit - 1] + f"… ({len(text):,} chars)"


def _print_messages(messages: list[dict[str, Any]], limit: int) -> None:
    for message in messages:
        role = message.get("role", "?")
        extra = f" {message['tool_call_id']}" if "tool_call_id" in message else ""
        click.echo(click.style(for_stream(f"── {role}{extra} ──", sys.stdout), bold=True))
        content = message.get("content")
        if isinstance(content, str):
            show(content if len(content) <= limit else content[: limit - 1] + "…")
        elif isinstance(content, list):
            for block in content:
                show(_block_text(block, limit))
        for call in message.get("tool_calls", []) or []:
            fn = call.get("function", {})
            show(f"[tool_call {fn.get('name')} {call.get('id')}] {fn.get('arguments')}")
        click.echo()


@cli.command()
@click.argument("conversation", metavar="CONV")
@click.option(
    "--budget",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Token budget (default: the context_budget_tokens setting).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["anthropic", "openai"]),
    default="anthropic",
    show_default=True,
    help="Shape the messages for this API.",
)
@click.option(
    "--system", default=None, help="A system prompt to include (it counts against the budget)."
)
@click.option(
    "--width",
    type=click.IntRange(min=40),
    default=600,
    show_default=True,
    help="Characters shown per block in the readable output (--json is never cut).",
)
@json_option
@click.pass_context
def context(
    ctx: click.Context,
    conversation: str,
    budget: int | None,
    fmt: str,
    system: str | None,
    width: int,
    as_json: bool,
) -> None:
    """Show the context the model would get now: messages and a token breakdown.

    The context is rebuilt from the conversation's context items: summaries as
    `<summary>` XML user messages, then raw messages. The protected tail (the
    last fresh_tail_count messages, widened only to whole tool exchanges) is
    always included, even above the budget. The newest user prompt is always
    visible: if it is older than the tail and not kept in place, it is
    repeated just ahead of the tail. Older items fill the rest of the budget
    newest first. The result stays within --budget unless the fresh tail
    alone exceeds it, and then a warning says so.

    \b
    Examples:
      lcm context 3f2a91c0 --budget 50000
      lcm context 3f2a91c0 --format openai --json > request.json
    """
    engine = state_of(ctx).engine()
    conv = engine.resolve_conversation(conversation)
    if fmt not in ("anthropic", "openai"):  # pragma: no cover - click.Choice guards it
        raise InputError(f"unknown format {fmt}")
    assembled = engine.assemble(
        conv, budget, format="openai" if fmt == "openai" else "anthropic", system=system
    )
    b = assembled.breakdown
    breakdown = b.as_dict()
    if as_json:
        emit_json(
            {
                "conversation_id": conv.id,
                "session_id": conv.session_id,
                "format": assembled.format,
                "request": assembled.request(),
                "breakdown": breakdown,
                "included": assembled.included,
            }
        )
        return
    if assembled.system:
        click.echo(click.style("── system ──", bold=True))
        show(assembled.system[:width])
        click.echo()
    _print_messages(assembled.messages, width)
    wrapped(
        f"{b.total:,} of {b.budget:,} tokens: {b.summaries:,} in {b.summary_count} summaries, "
        f"{b.messages:,} in {b.message_count} messages ({b.fresh_tail:,} in the protected "
        f"tail of {b.fresh_tail_messages}), {b.system:,} system; {b.dropped_items} older "
        f"item(s) left out ({b.dropped_tokens:,} tokens)."
    )
    if b.prompt_shown in ("repeated", "clipped"):
        wrapped(
            f"The newest user prompt (message {b.prompt_message_id}) is {b.prompt_shown} "
            f"ahead of the fresh tail ({b.prompt_tokens:,} tokens)."
        )
    elif b.prompt_shown == "omitted":
        click.echo(
            f"warning: no room left for the newest user prompt (message {b.prompt_message_id}).",
            err=True,
        )
    if b.tail_over_budget:
        wrapped(
            f"warning: the fresh tail alone ({b.fresh_tail:,} tokens in "
            f"{b.fresh_tail_messages} messages, plus {b.system:,} system) is over the "
            f"{b.budget:,}-token budget; lower fresh_tail_count or raise the budget.",
            err=True,
        )
    elif b.over_budget:  # pragma: no cover - assembly keeps within the budget otherwise
        click.echo(f"warning: {b.total:,} tokens is over the {b.budget:,} budget.", err=True)


@cli.command()
@click.argument("conversation", metavar="CONV")
@click.option("--no-preview", is_flag=True, help="Only ids, depths, times and sizes.")
@json_option
@click.pass_context
def dag(ctx: click.Context, conversation: str, no_preview: bool, as_json: bool) -> None:
    """Show a conversation's summary DAG as a tree.

    The top level is what is in the context now, oldest first; under each
    condensed summary are the summaries it was built from, down to leaves,
    which say how many messages they cover. Times are the span of the
    material covered; "from N" is how many message tokens lie beneath.
    Follow any id with `lcm describe ID` or `lcm expand ID`.

    \b
    Examples:
      lcm dag 3f2a91c0
      lcm dag 3f2a91c0 --json | jq '.roots[].id'
    """
    engine = state_of(ctx).engine()
    conv = engine.resolve_conversation(conversation)
    view = engine.dag(conv)
    if as_json:
        emit_json({"session_id": conv.session_id, **view.to_dict()})
        return
    header, *tree = view.render(previews=not no_preview).splitlines()
    wrapped(header, indent=2)
    for line in tree:  # a tree line wrapped would break the tree: cut it instead
        show(clipped(line))
