"""Map jobs end to end: create, load the input, run, resume, cancel, report, write results.

The input is streamed into the store in batches, so a 100,000-item file is
never held whole, and a run killed while loading picks up at the first item
not yet stored. The results file is written from the store in input order
(to a temporary file, then renamed), so it is never half-written and never
holds an item twice, however often the job was interrupted.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lossless import owners
from lossless.engine.operators.answers import SchemaCheck, loads_bounded
from lossless.engine.operators.llm_map import ItemAnswer, answer_item
from lossless.engine.operators.pricing import estimate_cost
from lossless.engine.operators.runner import JobRunner
from lossless.engine.operators.spec import MapSpec
from lossless.errors import InputError, NotFoundError
from lossless.store.map_jobs import MapClaim, MapCounts, MapItem, MapJob, NewMapItem, NewMapJob
from lossless.summarize.completion import LanguageModel
from lossless.timeutil import utc_now_iso

if TYPE_CHECKING:
    from lossless.engine.engine import Engine

_LOAD_BATCH = 1_000
_RESULTS_PAGE = 500
# One input line longer than this is a problem line, not an item.
MAX_ITEM_CHARS = 1_000_000


@dataclass(frozen=True, slots=True)
class JobReport:
    """Where a job stands: counts, usage, cost, and where its results go."""

    job: MapJob
    counts: MapCounts
    spec: MapSpec
    model: str | None
    cost_usd: float | None

    @property
    def done(self) -> bool:
        return self.job.status in ("done", "cancelled")

    def as_dict(self) -> dict[str, Any]:
        c = self.counts
        return {
            "id": self.job.id,
            "kind": self.job.kind,
            "status": self.job.status,
            "project": self.job.project,
            "created_at": self.job.created_at,
            "updated_at": self.job.updated_at,
            "items": {
                "total": c.total,
                "pending": c.pending,
                "running": c.running,
                "ok": c.ok,
                "failed": c.failed,
            },
            "usage": {
                "calls": c.calls,
                "input_tokens": c.input_tokens,
                "output_tokens": c.output_tokens,
                "model": self.model,
                "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
            },
            "prompt": self.spec.prompt,
            "input": self.spec.input_path,
            "output": self.spec.output_path,
            "conversation_id": self.job.conversation_id,
        }


def new_job_id() -> str:
    return f"job_{uuid.uuid4().hex[:16]}"


def create_job(engine: Engine, spec: MapSpec, *, project: str) -> MapJob:
    """Store a new job (nothing is called yet). The schema is checked here, first."""
    SchemaCheck.compile(spec.schema)
    if spec.input_path is not None:
        _check_input_file(Path(spec.input_path))
    job_id = new_job_id()
    conversation = engine.store.conversations.get_or_create(
        project=project,
        session_id=job_id,
        client="map",
        title=f"{spec.kind}: {spec.prompt.strip().splitlines()[0][:80]}",
        metadata={"map_job": job_id},
    )
    return engine.store.map_jobs.create(
        NewMapJob(
            id=job_id,
            kind=spec.kind,
            project=project,
            spec=spec.to_json(),
            created_at=utc_now_iso(),
            conversation_id=conversation.id,
        )
    )


def _check_input_file(path: Path) -> None:
    if not path.exists():
        raise InputError(f"input file {path} does not exist")
    if not path.is_file():
        raise InputError(f"input {path} is not a regular file")
    if not os.access(path, os.R_OK):
        raise InputError(f"input file {path} is not readable")


def _item_from_line(index: int, line_no: int, raw: bytes) -> NewMapItem:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return NewMapItem(index, line_no, raw.decode("utf-8", "replace"), f"not UTF-8: {exc}")
    text = text.removeprefix("\ufeff") if index == 0 else text
    if len(text) > MAX_ITEM_CHARS:
        return NewMapItem(index, line_no, text[:1000], f"longer than {MAX_ITEM_CHARS} characters")
    if "\x00" in text:
        return NewMapItem(index, line_no, text.replace("\x00", "\\u0000"), "contains NUL bytes")
    try:
        loads_bounded(text)
    except ValueError as exc:
        return NewMapItem(index, line_no, text, f"line {line_no} is not JSON: {exc}")
    return NewMapItem(index, line_no, text)


def _redacted(engine: Engine, project: str, item: NewMapItem) -> NewMapItem:
    redactor = engine.redactors.for_project(project)
    text = redactor.redact_json(item.input).text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return NewMapItem(item.index, item.line_no, text, item.problem)


def iter_input_file(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of every non-blank line, streamed."""
    with path.open("rb") as f:
        for line_no, raw in enumerate(f, start=1):
            line = raw.rstrip(b"\r\n")
            if line.strip():
                yield line_no, line


def load_items(
    engine: Engine,
    job: MapJob,
    lines: Iterable[tuple[int, bytes]],
    *,
    on_batch: Callable[[int], None] | None = None,
) -> int:
    """Store the job's items from ``lines``, skipping those stored before; returns the total."""
    batch: list[NewMapItem] = []
    index = 0
    skip = job.loaded_items
    for line_no, raw in lines:
        if index >= skip:
            batch.append(_redacted(engine, job.project, _item_from_line(index, line_no, raw)))
            if len(batch) >= _LOAD_BATCH:
                engine.store.map_jobs.add_items(job.id, batch)
                batch = []
                if on_batch is not None:
                    on_batch(index + 1)
        index += 1
    if batch:
        engine.store.map_jobs.add_items(job.id, batch)
    if on_batch is not None:
        on_batch(index)
    engine.store.map_jobs.set_status(job.id, "running")
    return index


def inline_lines(items: Iterable[Any]) -> Iterator[tuple[int, bytes]]:
    """An inline list of items (MCP, library) as input lines."""
    for n, item in enumerate(items, start=1):
        yield n, json.dumps(item, ensure_ascii=False).encode("utf-8")


def get_job(engine: Engine, job_id: str) -> MapJob:
    job = engine.store.map_jobs.get(job_id)
    if job is None:
        raise NotFoundError(f"no map job {job_id} (`lcm map --list` shows the jobs)")
    return job


def spec_of(job: MapJob) -> MapSpec:
    return MapSpec.from_json(job.spec)


def report(engine: Engine, job_id: str, *, model: str | None = None) -> JobReport:
    job = get_job(engine, job_id)
    spec = spec_of(job)
    counts = engine.store.map_jobs.counts(job_id)
    model = model or spec.model
    return JobReport(
        job,
        counts,
        spec,
        model,
        estimate_cost(spec, model, counts.input_tokens, counts.output_tokens),
    )


def cancel(engine: Engine, job_id: str) -> JobReport:
    """Stop a job: running workers stop at their next check; finished items stay."""
    job = get_job(engine, job_id)
    if job.status != "done":
        engine.store.map_jobs.set_status(job_id, "cancelled")
    return report(engine, job_id)


def free_dead_claims(engine: Engine, job_id: str) -> int:
    """Give back the claims of workers on this machine that died: they hold nothing now."""
    freed = 0
    for holder in engine.store.map_jobs.holders(job_id):
        if owners.is_dead_here(holder):
            freed += engine.store.map_jobs.release_holder(job_id, holder)
    return freed


def model_for(engine: Engine, spec: MapSpec) -> LanguageModel:
    """The language model the job names, built by the one provider layer."""
    import shlex

    from lossless.summarize.configured import language_model_of
    from lossless.summarize.factory import build_summarizer

    configured = engine.config.summarizer
    provider = spec.provider or configured.provider
    if provider == "extractive":
        raise InputError(
            "map jobs need a model: give --provider anthropic|openai|command (and --model), "
            "or configure [summarizer] provider in config.toml"
        )
    same = provider == configured.provider
    command = spec.command
    if command is None and same and configured.command:
        command = shlex.split(configured.command)
    summarizer = build_summarizer(
        provider,
        model=spec.model or (configured.model or None if same else None),
        api_key=(configured.api_key or None) if same else None,
        base_url=spec.base_url or ((configured.base_url or None) if same else None),
        command=command,
        timeout_s=spec.item_timeout_s,
        # Items retry on their own attempt budget (honouring Retry-After); the
        # breaker still stops a dead endpoint from being hammered.
        retries=0,
        breaker_threshold=max(3, spec.concurrency),
        breaker_cooldown_s=10.0,
    )
    model = language_model_of(summarizer)
    if model is None:
        raise InputError(f"provider {provider!r} cannot answer prompts")
    return model


def run(
    engine: Engine,
    job_id: str,
    *,
    model: LanguageModel | None = None,
    progress: Callable[[MapCounts], None] | None = None,
    stop: threading.Event | None = None,
    retry_failed: bool = False,
    concurrency: int | None = None,
) -> JobReport:
    """Work on a job until nothing is left, then write its results file (if it has one).

    Safe to call again after any interruption, and from several workers at
    once (on PostgreSQL, from several machines): each item is answered and
    recorded once.
    """
    job = get_job(engine, job_id)
    spec = spec_of(job)
    if job.status == "cancelled":
        engine.store.map_jobs.set_status(job_id, "running" if job.loaded_items else "loading")
        job = get_job(engine, job_id)
    if retry_failed:
        engine.store.map_jobs.requeue_failed(job_id)
        if job.status == "done":
            engine.store.map_jobs.set_status(job_id, "running")
    free_dead_claims(engine, job_id)
    check = SchemaCheck.compile(spec.schema)
    model = model or model_for(engine, spec)
    conversation = (
        engine.store.conversations.get(job.conversation_id)
        if job.conversation_id is not None
        else None
    )
    answer = _answerer(engine, spec, check, model)
    stop = stop or threading.Event()
    loaded = threading.Event()
    if job.status != "loading":
        loaded.set()
    loader_error: list[BaseException] = []

    def load() -> None:
        try:
            if spec.input_path is None:
                raise InputError(f"job {job_id} has no input file to load from")
            path = Path(spec.input_path)
            _check_input_file(path)
            load_items(engine, job, iter_input_file(path))
        except BaseException as exc:
            loader_error.append(exc)
            stop.set()
        finally:
            loaded.set()

    loader = None
    if not loaded.is_set():
        # Items are answered while the rest of the file is still being read.
        loader = threading.Thread(target=load, name=f"lcm-load-{job_id}", daemon=True)
        loader.start()
    runner = JobRunner(
        engine.store,
        job,
        conversation,
        answer,
        owner=owners.this_owner(),
        concurrency=concurrency or spec.concurrency,
        redactor=engine.redactors.for_project(job.project),
        lease_ttl_s=spec.lease_ttl_s,
        progress=progress,
        stop=stop,
        loading=lambda: not loaded.is_set(),
    )
    try:
        stats = runner.run()
    finally:
        stop.set()
        if loader is not None:
            loader.join()
    if loader_error:
        raise loader_error[0]
    counts = engine.store.map_jobs.counts(job_id)
    current = get_job(engine, job_id)
    if current.status == "running" and counts.pending == 0 and counts.running == 0:
        engine.store.map_jobs.set_status(job_id, "done")
    final = report(engine, job_id, model=stats.model)
    if final.job.status == "done" and spec.output_path is not None:
        write_results(engine, job_id, Path(spec.output_path))
    return final


def start(
    engine: Engine,
    spec: MapSpec,
    *,
    project: str,
    items: Iterable[Any] | None = None,
) -> MapJob:
    """Create a job and store its items: from ``items`` (inline) or ``spec.input_path``.

    Nothing is called yet; ``run`` (here, detached, or on other machines)
    does the work.
    """
    if items is None and spec.input_path is None:
        raise InputError("a map job needs items: an inline list or an input file")
    job = create_job(engine, spec, project=project)
    if items is not None:
        load_items(engine, job, inline_lines(items))
    return get_job(engine, job.id)


def _answerer(
    engine: Engine, spec: MapSpec, check: SchemaCheck, model: LanguageModel
) -> Callable[[MapClaim, threading.Event], ItemAnswer]:
    if spec.kind == "agentic_map":
        from lossless.engine.operators.agentic import AgenticAnswerer

        return AgenticAnswerer(engine, spec, check, model)

    def answer(claim: MapClaim, stop: threading.Event) -> ItemAnswer:
        return answer_item(model, spec, check, claim.input, stop=stop)

    return answer


def result_record(item: MapItem) -> dict[str, Any]:
    """One line of the results file."""
    record: dict[str, Any] = {"index": item.index, "line": item.line_no, "status": item.status}
    if item.status == "ok" and item.result is not None:
        record["result"] = json.loads(item.result)
    if item.error is not None:
        record["error"] = item.error
    record["attempts"] = item.attempts
    if item.message_id is not None:
        record["message_id"] = item.message_id
    return record


def iter_results(engine: Engine, job_id: str) -> Iterator[dict[str, Any]]:
    """Every item's record, in input order, read a page at a time."""
    after = -1
    while True:
        page = engine.store.map_jobs.items(job_id, after=after, limit=_RESULTS_PAGE)
        if not page:
            return
        for item in page:
            yield result_record(item)
        after = page[-1].index


def write_results(engine: Engine, job_id: str, path: Path) -> int:
    """Write the results file atomically (temporary file, then rename); returns the lines."""
    get_job(engine, job_id)
    if not path.parent.is_dir():
        raise InputError(f"cannot write {path}: the folder {path.parent} does not exist")
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    lines = 0
    try:
        with temporary.open("w", encoding="utf-8") as out:
            for record in iter_results(engine, job_id):
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                lines += 1
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return lines
