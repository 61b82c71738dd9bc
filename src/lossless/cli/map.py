"""``lcm map`` and ``lcm agentic-map``: process a data set item by item with a model."""

from __future__ import annotations

import json
import shlex
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lossless.cli.app import cli, emit_json, json_option, state_of
from lossless.cli.output import print_table
from lossless.errors import InputError

if TYPE_CHECKING:
    from lossless.engine.engine import Engine
    from lossless.engine.operators.jobs import JobReport
    from lossless.engine.operators.spec import MapSpec
    from lossless.store.map_jobs import MapCounts

# Exit code of a job that finished with some items failed (their reasons are
# in the results file and `lcm map --status JOB`).
EXIT_ITEMS_FAILED = 3

_F = TypeVar("_F", bound=Callable[..., Any])


def _common_options(kind: str) -> Callable[[_F], _F]:
    concurrency_default = 16 if kind == "llm_map" else 4

    def wrap(f: _F) -> _F:
        options = [
            click.option(
                "--input",
                "input_path",
                type=click.Path(path_type=Path),
                help="JSONL file, one item (any JSON value) per line.",
            ),
            click.option(
                "--output",
                "output_path",
                type=click.Path(path_type=Path),
                help="Results JSONL, written in input order when the job is done.",
            ),
            click.option("--prompt", help="The instruction applied to every item."),
            click.option(
                "--prompt-file",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                help="Read the instruction from a file.",
            ),
            click.option(
                "--schema",
                "schema_path",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                help="JSON Schema every answer must satisfy (checked before any call).",
            ),
            click.option(
                "--concurrency",
                type=click.IntRange(1, 256),
                default=concurrency_default,
                show_default=True,
                help="Items answered at once.",
            ),
            click.option(
                "--max-retries",
                type=click.IntRange(0, 20),
                default=3,
                show_default=True,
                help="Extra attempts per item (invalid answers, 429/5xx, timeouts).",
            ),
            click.option(
                "--provider",
                type=click.Choice(["anthropic", "openai", "command"]),
                help="Model provider (default: the configured summarizer's).",
            ),
            click.option("--model", help="Model name (default: the provider's default)."),
            click.option(
                "--base-url", help="Base URL of an OpenAI-compatible or Anthropic server."
            ),
            click.option(
                "--command",
                "command_line",
                help="For --provider command: the command line, prompt on stdin "
                "(e.g. 'claude -p').",
            ),
            click.option(
                "--timeout",
                "timeout_s",
                type=click.FloatRange(min=0.1),
                default=120.0,
                show_default=True,
                help="Seconds per model call (agentic: per item).",
            ),
            click.option(
                "--max-output-tokens",
                type=click.IntRange(1),
                default=2000,
                show_default=True,
                help="Cap on each answer's length.",
            ),
            click.option(
                "--lease-ttl",
                type=click.FloatRange(min=1),
                default=60.0,
                show_default=True,
                help="Seconds until a dead worker's items can be claimed by another.",
            ),
            click.option(
                "--price-input",
                type=click.FloatRange(min=0),
                help="USD per million input tokens, for the cost estimate.",
            ),
            click.option(
                "--price-output",
                type=click.FloatRange(min=0),
                help="USD per million output tokens, for the cost estimate.",
            ),
            click.option(
                "--project",
                help="Project the job's results are filed under "
                "(default: the current folder's name).",
            ),
            click.option(
                "--detach",
                is_flag=True,
                help="Start the job in the background and print its id at once.",
            ),
            click.option("--status", "status_job", metavar="JOB", help="Show a job's progress."),
            click.option(
                "--resume",
                "resume_job",
                metavar="JOB",
                help="Continue a job where it stopped (no finished item is redone).",
            ),
            click.option(
                "--retry-failed", is_flag=True, help="With --resume: try the failed items again."
            ),
            click.option("--cancel", "cancel_job", metavar="JOB", help="Stop a job."),
            click.option(
                "--worker",
                "worker_job",
                metavar="JOB",
                help="Join a running job as one more worker (PostgreSQL: from any machine).",
            ),
            click.option(
                "--results",
                "results_job",
                metavar="JOB",
                help="Print a job's results (JSONL, input order), or write --output.",
            ),
            click.option("--list", "list_jobs", is_flag=True, help="List recent jobs."),
            json_option,
        ]
        for option in reversed(options):
            f = option(f)
        return f

    return wrap


def _agentic_options(f: _F) -> _F:
    for option in reversed(
        [
            click.option(
                "--files",
                "file_root",
                type=click.Path(exists=True, file_okay=False, path_type=Path),
                help="Give the sub-agents a read-only file tool confined to this folder.",
            ),
            click.option(
                "--max-steps",
                type=click.IntRange(1, 100),
                default=12,
                show_default=True,
                help="Tool calls plus answer, per item.",
            ),
            click.option(
                "--item-tokens",
                type=click.IntRange(100),
                default=50_000,
                show_default=True,
                help="Token budget per item.",
            ),
            click.option(
                "--max-depth",
                type=click.IntRange(0, 5),
                default=2,
                show_default=True,
                help="How deep sub-agents may delegate (the scope guard).",
            ),
            click.option(
                "--read-only/--no-read-only",
                default=True,
                show_default=True,
                help="lcm's tools only read; a --provider command governs its own.",
            ),
        ]
    ):
        f = option(f)
    return f


@cli.command("map")
@_common_options("llm_map")
@click.pass_context
def map_command(ctx: click.Context, /, **options: Any) -> None:
    """Run one model call per item of a JSONL file (llm_map).

    Every answer is checked against --schema (a JSON Schema) and retried with
    the validation error fed back until it holds or --max-retries is spent.
    Results are written to --output in input order, one line per item with
    its status: "ok" and the result, or "failed" with the reason and attempts.

    Job state lives in the store: a run killed at any point continues with
    `lcm map --resume JOB`, and no item that succeeded is called again. Items
    that are not JSON are reported with their line number and the job goes on.
    Each result is stored as a message (searchable with `lcm grep`/`lcm
    search`); `lcm describe JOB` summarizes a job.

    \b
    Examples:
      lcm map --input items.jsonl --output out.jsonl --prompt "Classify the ticket" \\
              --schema ticket.schema.json --provider openai --model gpt-4o-mini
      lcm map --status job_3f2a...      lcm map --resume job_3f2a...
      lcm map --input big.jsonl --output out.jsonl --prompt-file p.txt --detach

    Exit code 3: the job finished, but some items failed.
    """
    _dispatch(ctx, "llm_map", options)


@cli.command("agentic-map")
@_common_options("agentic_map")
@_agentic_options
@click.pass_context
def agentic_map_command(ctx: click.Context, /, **options: Any) -> None:
    """Give every item of a JSONL file its own tool-using sub-agent (agentic_map).

    Each sub-agent may search lossless's history (grep, search, describe,
    expand), read files under --files if given, and delegate part of its item
    to a nested sub-agent -- only by stating what it hands over and what it
    keeps doing itself (the scope guard refuses the rest, and --max-depth
    bounds the nesting). Each item has a step limit, a token budget and a
    time budget. With --provider command (`claude -p`, `codex exec`) the
    command is the agent and uses its own tools.

    Same job control as `lcm map`: --status, --resume, --cancel, --results.
    """
    _dispatch(ctx, "agentic_map", options)


def _dispatch(ctx: click.Context, kind: str, options: dict[str, Any]) -> None:
    from lossless.engine.operators import jobs

    engine = state_of(ctx).engine()
    as_json = bool(options["as_json"])
    control = [
        name
        for name in ("status_job", "resume_job", "cancel_job", "worker_job", "results_job")
        if options[name]
    ]
    if options["list_jobs"]:
        control.append("list_jobs")
    if len(control) > 1:
        raise click.UsageError(
            "give only one of --status, --resume, --cancel, --worker, --results, --list"
        )
    if control:
        action = control[0]
        if action == "list_jobs":
            _list(engine, as_json)
        elif action == "status_job":
            _show(jobs.report(engine, options["status_job"]), as_json)
        elif action == "cancel_job":
            report = jobs.cancel(engine, options["cancel_job"])
            _show(report, as_json)
        elif action == "results_job":
            _results(engine, options["results_job"], options["output_path"])
        else:
            job_id = options[action]
            _run(ctx, engine, job_id, as_json, retry_failed=bool(options["retry_failed"]))
        return
    spec = _spec(kind, options)
    job = jobs.create_job(engine, spec, project=options["project"] or Path.cwd().name)
    if options["detach"]:
        pid = _detach(engine, job.id)
        if as_json:
            emit_json({"id": job.id, "status": "started", "pid": pid})
        else:
            click.echo(
                f"{job.id} started in the background (pid {pid}); "
                f"follow it with: lcm map --status {job.id}"
            )
        return
    if not as_json:
        click.echo(f"{job.id}: {kind} started (resume with: lcm map --resume {job.id})", err=True)
    _run(ctx, engine, job.id, as_json, retry_failed=False)


def _spec(kind: str, options: dict[str, Any]) -> MapSpec:
    from lossless.engine.operators.spec import MapSpec

    if options["prompt"] and options["prompt_file"]:
        raise click.UsageError("give --prompt or --prompt-file, not both")
    prompt = options["prompt"]
    if options["prompt_file"]:
        prompt = _read_text(options["prompt_file"], "prompt file")
    if not prompt:
        raise click.UsageError("a new job needs --prompt TEXT or --prompt-file FILE")
    if options["input_path"] is None:
        raise click.UsageError("a new job needs --input items.jsonl")
    schema = None
    if options["schema_path"] is not None:
        text = _read_text(options["schema_path"], "schema file")
        try:
            schema = json.loads(text)
        except ValueError as exc:
            raise InputError(f"schema file {options['schema_path']} is not JSON: {exc}") from None
    output = options["output_path"]
    if output is not None and not Path(output).resolve().parent.is_dir():
        raise InputError(f"cannot write {output}: its folder does not exist")
    command = shlex.split(options["command_line"]) if options["command_line"] else None
    if options["provider"] == "command" and command is None:
        raise click.UsageError("--provider command needs --command 'CLI ARGS'")
    extra: dict[str, Any] = {}
    if kind == "agentic_map":
        extra = {
            "file_root": str(options["file_root"].resolve()) if options["file_root"] else None,
            "max_steps": options["max_steps"],
            "item_token_budget": options["item_tokens"],
            "max_delegation_depth": options["max_depth"],
            "read_only": options["read_only"],
        }
    return MapSpec(
        kind="llm_map" if kind == "llm_map" else "agentic_map",
        prompt=prompt,
        schema=schema,
        provider=options["provider"],
        model=options["model"],
        base_url=options["base_url"],
        command=command,
        concurrency=options["concurrency"],
        max_retries=options["max_retries"],
        item_timeout_s=options["timeout_s"],
        max_output_tokens=options["max_output_tokens"],
        lease_ttl_s=options["lease_ttl"],
        input_path=str(Path(options["input_path"]).resolve()),
        output_path=str(Path(output).resolve()) if output is not None else None,
        price_input_per_mtok=options["price_input"],
        price_output_per_mtok=options["price_output"],
        **extra,
    )


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what} {path}: {exc}") from None


def _detach(engine: Engine, job_id: str) -> int:
    from lossless.process import start_map_worker

    return start_map_worker(engine.config, job_id)


class _Progress:
    """One status line on a terminal: done/total, ok/failed, rate and ETA."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.first: int | None = None
        self.width = 0

    def __call__(self, counts: MapCounts) -> None:
        if self.first is None:
            self.first = counts.finished
        elapsed = max(1e-6, time.monotonic() - self.started)
        rate = (counts.finished - self.first) / elapsed
        left = counts.pending + counts.running
        eta = f"ETA {_duration(left / rate)}" if rate > 0 and left else ""
        line = (
            f"  {counts.finished}/{counts.total} items  ok {counts.ok}  "
            f"failed {counts.failed}  {rate:.1f}/s  {eta}"
        ).rstrip()
        pad = max(0, self.width - len(line))
        self.width = len(line)
        click.echo("\r" + line + " " * pad, nl=False, err=True)

    def close(self) -> None:
        if self.width:
            click.echo("", err=True)


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def _run(
    ctx: click.Context, engine: Engine, job_id: str, as_json: bool, *, retry_failed: bool
) -> None:
    from lossless.engine.operators import jobs
    from lossless.engine.operators.llm_map import JobAborted

    progress = _Progress() if sys.stderr.isatty() and not as_json else None
    stop = threading.Event()
    try:
        report = jobs.run(engine, job_id, progress=progress, stop=stop, retry_failed=retry_failed)
    except KeyboardInterrupt:
        stop.set()
        if progress is not None:
            progress.close()
        click.echo(f"interrupted; continue with: lcm map --resume {job_id}", err=True)
        ctx.exit(130)
    except JobAborted as exc:
        if progress is not None:
            progress.close()
        raise InputError(
            f"{job_id} stopped: the model provider cannot work ({exc}); fix it and "
            f"continue with: lcm map --resume {job_id}"
        ) from None
    if progress is not None:
        progress.close()
    _show(report, as_json)
    if report.job.status == "done" and report.counts.failed:
        ctx.exit(EXIT_ITEMS_FAILED)


def _show(report: JobReport, as_json: bool) -> None:
    if as_json:
        emit_json(report.as_dict())
        return
    c = report.counts
    cost = f"${report.cost_usd:.4f}" if report.cost_usd is not None else "unknown"
    click.echo(f"{report.job.id}  {report.job.kind}  {report.job.status}")
    click.echo(
        f"  items   {c.total} total: {c.ok} ok, {c.failed} failed, "
        f"{c.pending} pending, {c.running} running"
    )
    click.echo(
        f"  usage   {c.calls} calls, {c.input_tokens} input + {c.output_tokens} "
        f"output tokens, cost {cost}" + (f" ({report.model})" if report.model else "")
    )
    if report.spec.output_path:
        written = " (written)" if report.job.status == "done" else " (when done)"
        click.echo(f"  output  {report.spec.output_path}{written}")
    if report.job.status not in ("done",):
        click.echo(f"  resume  lcm map --resume {report.job.id}")


def _list(engine: Engine, as_json: bool) -> None:
    from lossless.engine.operators import jobs

    reports = [jobs.report(engine, job.id) for job in engine.store.map_jobs.list(limit=50)]
    if as_json:
        emit_json([r.as_dict() for r in reports])
        return
    if not reports:
        click.echo("no map jobs yet")
        return
    print_table(
        ["job", "kind", "status", "items", "ok", "failed", "created", "prompt"],
        [
            [
                r.job.id,
                r.job.kind,
                r.job.status,
                r.counts.total,
                r.counts.ok,
                r.counts.failed,
                r.job.created_at[:19],
                r.spec.prompt,
            ]
            for r in reports
        ],
        max_width=40,
    )


def _results(engine: Engine, job_id: str, output: Path | None) -> None:
    from lossless.engine.operators import jobs

    if output is not None:
        lines = jobs.write_results(engine, job_id, output)
        click.echo(f"{lines} result line(s) written to {output}", err=True)
        return
    for record in jobs.iter_results(engine, job_id):
        click.echo(json.dumps(record, ensure_ascii=False))


def describe_job(engine: Engine, job_id: str, as_json: bool, *, sample: int = 5) -> None:
    """``lcm describe job_…``: the job's report and its first results."""
    from itertools import islice

    from lossless.engine.operators import jobs

    report = jobs.report(engine, job_id)
    first = list(islice(jobs.iter_results(engine, job_id), sample))
    if as_json:
        emit_json({**report.as_dict(), "first_results": first})
        return
    _show(report, False)
    click.echo(f"  prompt  {' '.join(report.spec.prompt.split())[:200]}")
    if report.spec.schema is not None:
        click.echo(f"  schema  {json.dumps(report.spec.schema, ensure_ascii=False)[:200]}")
    if first:
        click.echo(f"  first {len(first)} result(s):")
        for record in first:
            shown = record.get("result", record.get("error", ""))
            text = shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False)
            click.echo(f"    #{record['index']} {record['status']}: {' '.join(text.split())[:150]}")
