"""The map operators as MCP tools: ``lcm_llm_map``, ``lcm_agentic_map`` and ``lcm_job``.

Starting a job returns its id at once: the items are stored, and a detached
``lcm map --resume JOB`` process does the work, so the job outlives the
client session and the agent polls it with ``lcm_job`` (progress, then the
results a page at a time). Imported only by the SDK path of the server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired

from pydantic import Field
from typing_extensions import TypedDict

from lossless.delegation import delegation_depth, inside_subagent
from lossless.engine.operators.scope_guard import Delegation, check_delegation
from lossless.errors import LosslessError

if TYPE_CHECKING:
    from lossless.engine.engine import Engine

MAX_INLINE_ITEMS = 10_000

DelegatedScope = Annotated[
    str | None,
    Field(description="Sub-agents only: the slice of work you hand over."),
]
KeptWork = Annotated[
    str | None,
    Field(description="Sub-agents only: the work you still do yourself (required to delegate)."),
]

Prompt = Annotated[str, Field(min_length=1, description="The instruction for every item.")]
Items = Annotated[
    list[Any] | None, Field(description="The items, inline (up to 10,000); or input_path.")
]
InputPath = Annotated[str | None, Field(description="A JSONL file, one item per line.")]
OutputPath = Annotated[
    str | None, Field(description="Write the results here (JSONL, input order) when done.")
]
Schema = Annotated[
    dict[str, Any] | None, Field(description="JSON Schema every answer must satisfy.")
]
Provider = Annotated[
    Literal["anthropic", "openai", "command"] | None,
    Field(description="Model provider (default: the configured summarizer's)."),
]
Model = Annotated[str | None, Field(description="Model name (default: the provider's).")]
Retries = Annotated[int, Field(ge=0, le=20, description="Extra attempts per item.")]


class MapToolFailure(Exception):
    """A tool call that cannot go on; the message is for the model."""


class JobCounts(TypedDict):
    total: int
    pending: int
    running: int
    ok: int
    failed: int


class JobUsage(TypedDict):
    calls: int
    input_tokens: int
    output_tokens: int
    model: str | None
    cost_usd: float | None


class JobStarted(TypedDict):
    job: str
    kind: Literal["llm_map", "agentic_map"]
    status: str
    items: int
    worker_pid: int | None
    hint: str


class JobItem(TypedDict):
    index: int
    line: int
    status: str
    attempts: int
    result: NotRequired[Any]
    error: NotRequired[str]
    message_id: NotRequired[int]


class JobPage(TypedDict):
    job: str
    kind: str
    status: str
    items: JobCounts
    usage: JobUsage
    results: list[JobItem]
    next_after: int | None
    hint: str


def caller_depth() -> int:
    """How deep the calling agent sits: a server started under a sub-agent is at least 1."""
    return max(delegation_depth(), 1 if inside_subagent() else 0)


def guard(tool: str, delegated_scope: str | None, kept_work: str | None) -> None:
    """The scope guard for a tool that hands work to sub-agents.

    The main agent (depth 0) may delegate freely; a sub-agent must say what it
    hands over and what it keeps, and no deeper than the bound.
    """
    depth = caller_depth()
    if depth == 0:
        return
    verdict = check_delegation(Delegation(delegated_scope or "", kept_work or ""), depth=depth)
    if not verdict.allowed:
        raise MapToolFailure(
            f"{tool}: you are a sub-agent (delegation depth {depth}); {verdict.reason}"
        )


def start(
    engine: Engine,
    *,
    kind: Literal["llm_map", "agentic_map"],
    prompt: str,
    items: list[Any] | None,
    input_path: str | None,
    output_path: str | None,
    schema: dict[str, Any] | None,
    provider: str | None,
    model: str | None,
    concurrency: int | None,
    max_retries: int,
    project: str,
    file_root: str | None = None,
    max_steps: int = 12,
) -> JobStarted:
    from lossless.engine.operators import jobs
    from lossless.engine.operators.spec import DEFAULT_CONCURRENCY, MapSpec
    from lossless.process import start_map_worker

    if (items is None) == (input_path is None):
        raise MapToolFailure("give exactly one of items (an inline list) or input_path")
    if items is not None and len(items) > MAX_INLINE_ITEMS:
        raise MapToolFailure(
            f"{len(items)} inline items is more than {MAX_INLINE_ITEMS}; write them to a JSONL "
            "file and pass input_path"
        )
    try:
        spec = MapSpec(
            kind=kind,
            prompt=prompt,
            schema=schema,
            provider=provider,
            model=model,
            concurrency=concurrency or DEFAULT_CONCURRENCY[kind],
            max_retries=max_retries,
            input_path=input_path,
            output_path=output_path,
            file_root=file_root,
            max_steps=max_steps,
        )
        jobs.model_for(engine, spec)  # a job no provider can run is refused now
        job = jobs.start(engine, spec, project=project, items=items)
        pid = start_map_worker(engine.config, job.id)
    except LosslessError as exc:
        raise MapToolFailure(str(exc)) from None
    return JobStarted(
        job=job.id,
        kind=kind,
        status=job.status,
        items=job.loaded_items,
        worker_pid=pid,
        hint=f"poll with lcm_job(job='{job.id}'); results come in input order",
    )


def page(engine: Engine, job_id: str, *, after: int, limit: int) -> JobPage:
    from lossless.engine.operators import jobs

    try:
        report = jobs.report(engine, job_id)
        records = []
        for item in engine.store.map_jobs.items(job_id, after=after, limit=limit):
            records.append(JobItem(**jobs.result_record(item)))  # type: ignore[typeddict-item]
    except LosslessError as exc:
        raise MapToolFailure(str(exc)) from None
    c = report.counts
    more = len(records) == limit
    return JobPage(
        job=job_id,
        kind=report.job.kind,
        status=report.job.status,
        items=JobCounts(
            total=c.total, pending=c.pending, running=c.running, ok=c.ok, failed=c.failed
        ),
        usage=JobUsage(
            calls=c.calls,
            input_tokens=c.input_tokens,
            output_tokens=c.output_tokens,
            model=report.model,
            cost_usd=None if report.cost_usd is None else round(report.cost_usd, 6),
        ),
        results=records,
        next_after=records[-1]["index"] if more and records else None,
        hint=(
            "page on with after=next_after"
            if more
            else ("all results shown" if report.done else "still running: poll again later")
        ),
    )


def add_map_tools(server: Any, tools: Any, tool_error: type[Exception]) -> None:
    """Register the three map tools on the SDK ``server`` (``tools``: the server's LcmTools)."""
    from lossless.mcp_identity import ToolHints, tool_annotations

    engine: Engine = tools.engine
    project = tools.project or "mcp"

    def failing(fn: Any) -> Any:
        try:
            return fn()
        except MapToolFailure as exc:
            raise tool_error(str(exc)) from None

    def lcm_llm_map(
        prompt: Prompt,
        items: Items = None,
        input_path: InputPath = None,
        output_path: OutputPath = None,
        schema: Schema = None,
        provider: Provider = None,
        model: Model = None,
        concurrency: Annotated[int, Field(ge=1, le=256, description="Calls at once.")] = 16,
        max_retries: Retries = 3,
        delegated_scope: DelegatedScope = None,
        kept_work: KeptWork = None,
    ) -> JobStarted:
        """Process a data set with one stateless model call per item, in the background.

        Use it instead of reading many items yourself. Every answer is checked
        against the schema and retried with the error fed back. Returns the job
        id at once; poll lcm_job for progress and the results (input order).
        """

        def run() -> JobStarted:
            guard("lcm_llm_map", delegated_scope, kept_work)
            return start(
                engine, kind="llm_map", prompt=prompt, items=items, input_path=input_path,
                output_path=output_path, schema=schema, provider=provider, model=model,
                concurrency=concurrency, max_retries=max_retries, project=project,
            )  # fmt: skip

        return failing(run)  # type: ignore[no-any-return]

    def lcm_agentic_map(
        prompt: Prompt,
        items: Items = None,
        input_path: InputPath = None,
        output_path: OutputPath = None,
        schema: Schema = None,
        provider: Provider = None,
        model: Model = None,
        file_root: Annotated[
            str | None, Field(description="Let sub-agents read files under this folder.")
        ] = None,
        max_steps: Annotated[int, Field(ge=1, le=100, description="Steps per item.")] = 12,
        concurrency: Annotated[int, Field(ge=1, le=64, description="Sub-agents at once.")] = 4,
        max_retries: Retries = 3,
        delegated_scope: DelegatedScope = None,
        kept_work: KeptWork = None,
    ) -> JobStarted:
        """Give every item its own tool-using sub-agent (history search, optional files).

        For items that need several steps of looking things up. Returns the job
        id at once; poll lcm_job. As a sub-agent yourself, state delegated_scope
        and kept_work: a delegation that keeps no work is refused.
        """

        def run() -> JobStarted:
            guard("lcm_agentic_map", delegated_scope, kept_work)
            return start(
                engine, kind="agentic_map", prompt=prompt, items=items, input_path=input_path,
                output_path=output_path, schema=schema, provider=provider, model=model,
                concurrency=concurrency, max_retries=max_retries, project=project,
                file_root=file_root, max_steps=max_steps,
            )  # fmt: skip

        return failing(run)  # type: ignore[no-any-return]

    def lcm_job(
        job: Annotated[str, Field(min_length=1, description="The job id (job_...).")],
        after: Annotated[int, Field(ge=-1, description="Results after this index.")] = -1,
        limit: Annotated[int, Field(ge=1, le=500, description="Results per page.")] = 50,
    ) -> JobPage:
        """A map job's progress, usage and cost, and its results a page at a time."""
        return failing(lambda: page(engine, job, after=after, limit=limit))  # type: ignore[no-any-return]

    starts_job = ToolHints(read_only=False, destructive=False, idempotent=False, open_world=True)
    reads = ToolHints(read_only=True, destructive=False, idempotent=True, open_world=False)
    for fn, title, hints in (
        (lcm_llm_map, "Map a model over a data set", starts_job),
        (lcm_agentic_map, "Map a sub-agent over a data set", starts_job),
        (lcm_job, "Map job progress and results", reads),
    ):
        server.add_tool(fn, title=title, annotations=tool_annotations(hints))
