"""The background compaction worker, and the small protocol hooks use to wake it.

Hooks must return in milliseconds, so they never compact: they mark a
conversation as due (two keys in its metadata) and start this worker
detached when it is not already running. The worker then, until it has been
idle for a while:

1. lists conversations whose latest request is newer than the last one served
   (``lcm_compaction_requested_at`` > ``lcm_compaction_done_at``);
2. compacts each with the configured summarizer through ``Compactor``, which
   holds the conversation's fenced lease for every pass, so two workers (or a
   worker and ``lcm compact``) never compact one conversation at once;
3. records the request it served. A request made while the run was going on
   has a later timestamp and stays due;
4. when no request waits, adds messages a bulk import left out of the
   substring (trigram) index to it, a few seconds at a time
   (``engine.indexing``);
5. then computes the embedding vectors semantic search needs, again a few
   seconds at a time (``engine.embedding``; only where the ``semantic``
   extra is installed), and only then counts as idle.

Before all that, at each poll, it delivers what hooks captured into the
outbox while the server (PostgreSQL) could not be used. Attempts that keep
failing back off (``lossless.delivery_retry``), and the worker does not exit
for being idle while such events wait; its own work on a store that fails
under it (the server stopped) backs off too, instead of ending the worker.

A killed worker loses nothing: its lease expires, the request is still newer
than the last one served, and the next worker (started by the next hook, or
``lcm worker --once`` from cron) does it again. Only one worker runs per
``LCM_HOME``: it holds an exclusive lock on ``worker.lock`` for its lifetime
(the OS drops the lock when the process dies, so there is no stale pid to
clean up).

Where the work comes from depends on the store (``WorkSource``): on SQLite
the worker scans conversation metadata as above; on PostgreSQL, where workers
on many machines share one database, each request is also a job in the
shared queue (``store.coordination.jobs``) and workers claim jobs with ``FOR UPDATE SKIP
LOCKED``, so N workers take N different conversations without scanning or
waiting on each other. The metadata stays the record of what was asked
(mode, timestamps) on both, so a claimed job whose request was already
served is completed without compacting again.

This module is imported by every hook, so its top level is stdlib only (and
``lossless.process``, which is too).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from lossless.engine.compaction_requests import (
    DONE_AT,
    JOB_KIND,
    LAST_ERROR,
    REQUEST_MODE,
    REQUESTED_AT,
    CompactionMode,
    is_pending,
    pending_conversations,
    request_compaction,
    request_time,
    schedule_compaction,
)
from lossless.process import WORKER_LOCK, running_worker_pid, spawn_detached, worker_lock

# Also the names surfaces read the request protocol and the worker's lock by.
__all__ = [
    "DONE_AT",
    "JOB_KIND",
    "LAST_ERROR",
    "REQUESTED_AT",
    "WORKER_LOCK",
    "JobOutcome",
    "Worker",
    "WorkerReport",
    "is_pending",
    "request_compaction",
    "running_worker_pid",
    "schedule_compaction",
    "start_detached",
    "worker_command",
    "worker_lock",
]

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.engine.compaction import CompactionResult, Compactor
    from lossless.engine.engine import Engine
    from lossless.models import Conversation
    from lossless.store.contract import Coordination, Job, Store
    from lossless.summarize.protocol import Summarizer


# A conversation whose lease someone else holds (``lcm compact`` by hand, a
# worker elsewhere) is offered to the queue again after this long.
BUSY_RETRY_S = 5.0
DEFAULT_IDLE_S = 60.0
# How long a one-shot run (``lcm worker --once``) embeds before it exits.
ONCE_EMBED_SECONDS = 10.0
DEFAULT_POLL_S = 2.0
# An after-turn run does one leaf pass; a session that grew by a lot between
# two runs needs several. Bounded so one busy conversation cannot starve others.
MAX_INCREMENTAL_ROUNDS = 50


# --------------------------------------------------------------------------- the worker's lock and start


def worker_command(config: Config) -> list[str]:
    """The argv that starts a worker on this home with this interpreter.

    ``python -m lossless`` rather than the ``lcm`` script: the interpreter
    running now is certainly the one lossless is installed in.
    """
    return [sys.executable, "-m", "lossless", "--home", str(config.home), "worker"]


def start_detached(config: Config) -> int | None:
    """Start a worker in its own session unless one runs; return its pid (None if running).

    The child has no stdin/stdout and its own process group, so the client's
    hook runner neither waits for it nor kills it when the hook returns; its
    stderr goes to ``logs/worker.log``.
    """
    if running_worker_pid(config.home) is not None:
        return None
    # Two hooks may both get here; the second worker finds the lock taken and
    # exits at once, so the race costs one short-lived process.
    return spawn_detached(config, worker_command(config))


# --------------------------------------------------------------------------- work sources


class Claim(Protocol):
    """One conversation to compact, held for this worker until ``finish``."""

    @property
    def conversation(self) -> Conversation: ...

    def finish(self, outcome: JobOutcome) -> None: ...


class WorkSource(Protocol):
    def claims(self) -> Iterator[Claim]:
        """The conversations to compact now, one at a time; each is finished
        before the next is asked for."""
        ...


def work_source(
    engine: Engine, *, lease_ttl_s: float | None, log: Callable[[str], None]
) -> WorkSource:
    """The shared queue where the store has one (PostgreSQL), else the metadata scan."""
    coordination = engine.store.coordination
    if coordination is not None:
        return JobQueue(engine, coordination, lease_ttl_s=lease_ttl_s, log=log)
    return MetadataScan(engine.store)


@dataclass(slots=True)
class _Unclaimed:
    conversation: Conversation

    def finish(self, outcome: JobOutcome) -> None:
        # The conversation's lease kept others off; the metadata records it served.
        pass


class MetadataScan:
    """Every conversation with an unserved request, oldest first (one machine)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def claims(self) -> Iterator[Claim]:
        for conversation in pending_conversations(self.store):
            yield _Unclaimed(conversation)


class _QueuedClaim:
    """A claimed job, its claim renewed from a thread while the compaction runs."""

    def __init__(self, queue: JobQueue, job: Job, conversation: Conversation, ttl_s: float) -> None:
        import threading

        self.queue = queue
        self.job = job
        self.conversation = conversation
        self.ttl_s = ttl_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="lcm-job-renewal", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        from lossless.errors import StoreError

        while not self._stop.wait(self.ttl_s / 3):
            try:
                self.job = self.queue.jobs.renew(self.job, self.ttl_s)
            except StoreError as exc:
                self.queue.log(f"job {self.job.id}: claim not renewed: {exc}")
                return

    def finish(self, outcome: JobOutcome) -> None:
        from lossless.errors import LeaseLostError

        self._stop.set()
        self._thread.join()
        try:
            if outcome.busy:
                self.queue.jobs.fail(self.job, "conversation busy", retry_in_s=BUSY_RETRY_S)
            else:
                self.queue.jobs.complete(self.job)
        except LeaseLostError as exc:
            # Claimed again after this claim expired: the new holder finds the
            # request served (or serves a newer one), so nothing is lost.
            self.queue.log(str(exc))


class JobQueue:
    """Compaction jobs claimed from the store's shared queue (``store.coordination.jobs``)."""

    def __init__(
        self,
        engine: Engine,
        coordination: Coordination,
        *,
        lease_ttl_s: float | None,
        log: Callable[[str], None],
    ) -> None:
        import socket
        import uuid

        self.engine = engine
        self.store = engine.store
        self.jobs = coordination.jobs
        self.log = log
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease_ttl_s = lease_ttl_s
        self._reconciled = False

    def claims(self) -> Iterator[Claim]:
        if not self._reconciled:
            self._reconcile()
        ttl = self.lease_ttl_s or self.engine.compactor().lease_ttl_s
        while True:
            job = self.jobs.claim(self.owner, ttl, kinds=[JOB_KIND])
            if job is None:
                return
            conversation = (
                self.store.conversations.get(job.conversation_id)
                if job.conversation_id is not None
                else None
            )
            if conversation is None or not is_pending(conversation):
                # A duplicate of a request already served (or of a deleted conversation).
                self.jobs.complete(job)
                continue
            claim = _QueuedClaim(self, job, conversation, ttl)
            try:
                yield claim
            finally:
                claim._stop.set()

    def _reconcile(self) -> None:
        """Queue requests recorded without a job (a hook that died between the two)."""
        self._reconciled = True
        for conversation in pending_conversations(self.store):
            self.jobs.enqueue(JOB_KIND, conversation.id)


# --------------------------------------------------------------------------- worker


@dataclass(slots=True)
class JobOutcome:
    conversation_id: int
    mode: str
    passes: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    summaries: list[str] = field(default_factory=list)
    busy: bool = False
    error: str | None = None
    seconds: float = 0.0

    def describe(self) -> str:
        if self.busy:
            return f"conversation {self.conversation_id}: busy (another worker holds its lease)"
        if self.error:
            return f"conversation {self.conversation_id}: failed: {self.error}"
        return (
            f"conversation {self.conversation_id}: {self.mode}, {self.passes} pass(es), "
            f"{self.tokens_before:,} -> {self.tokens_after:,} tokens, "
            f"{len(self.summaries)} summary(ies), {self.seconds:.1f}s"
        )


@dataclass(slots=True)
class WorkerReport:
    jobs: list[JobOutcome] = field(default_factory=list)
    already_running: int | None = None
    idle_exit: bool = False
    # The data folder (its worker lock file) was deleted or replaced: the
    # worker stopped instead of serving a store nobody can reach any more.
    home_gone: bool = False
    # Outbox events (captured by hooks while PostgreSQL was unreachable)
    # delivered to the server, and why the last delivery stopped, if it did.
    delivered: int = 0
    outbox_error: str | None = None
    # Messages added to the substring index (a bulk import leaves them here).
    indexed: int = 0
    # Items given embedding vectors, and why embedding stopped, if it failed.
    embedded: int = 0
    embedding_error: str | None = None


class Worker:
    """Serves compaction requests for one store until idle.

    ``log`` receives one line per job (the CLI prints them; a detached worker's
    stderr is ``logs/worker.log``). ``lease_ttl_s`` bounds how long a crashed
    worker keeps a conversation from others (default: the compactor's, derived
    from the summarizer timeout).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        summarizer: Summarizer | None = None,
        log: Callable[[str], None] | None = None,
        lease_ttl_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        from lossless.delivery_retry import DeliveryRetry, StoreRetry

        self.engine = engine
        self.config = engine.config
        if summarizer is not None:
            engine.summarizer = summarizer
        self.lease_ttl_s = lease_ttl_s
        self.log = log or (lambda _line: None)
        self.clock = clock
        self.sleep = sleep
        self.source = work_source(engine, lease_ttl_s=lease_ttl_s, log=self.log)
        self._once = False
        # ``run`` sets the shortest waits to its poll interval.
        cap = self.config.worker_outbox_retry_max_s
        self.outbox_retry = DeliveryRetry(DEFAULT_POLL_S, cap, clock, self.log)
        self.store_retry = StoreRetry(DEFAULT_POLL_S, cap, clock, self.log)

    def run(
        self,
        *,
        once: bool = False,
        idle_s: float = DEFAULT_IDLE_S,
        poll_s: float = DEFAULT_POLL_S,
    ) -> WorkerReport:
        """Take the home's worker lock and serve requests; see the module docstring."""
        report = WorkerReport()
        lock = worker_lock(self.config.home)
        if not lock.acquire():
            report.already_running = running_worker_pid(self.config.home)
            return report
        self.outbox_retry.base_s = self.store_retry.base_s = poll_s
        self._once = once
        import logging

        # psycopg's pool warns at each of its reconnection attempts (three or
        # four lines per attempt of ours in an outage, on stderr: worker.log);
        # the retries here say the cause once, and when it changes or clears.
        pool_log = logging.getLogger("psycopg.pool")
        pool_level = pool_log.level
        pool_log.setLevel(logging.ERROR)
        try:
            lock.write_pid()
            idle_since = self.clock()
            while True:
                if not lock.still_in_place():
                    report.home_gone = True
                    self.log(f"lcm worker: {self.config.home} is gone: stopping")
                    break
                served = self.serve_pending(report)
                if once:
                    self.build_index(report, max_seconds=float("inf"))
                    # Embedding a large backlog takes minutes of CPU (~30 items
                    # per second): a one-shot run does a bounded slice, the next
                    # run (or `lcm embed`, with progress) goes on from there.
                    self.embed(report, max_seconds=ONCE_EMBED_SECONDS)
                    break
                if served:
                    idle_since = self.clock()
                    continue
                # Not while outbox events wait whose delivery fails: the hooks
                # may have stopped for the day, and then no one else would
                # deliver them once it works again. The retries back off.
                if not self.outbox_retry.failing and self.clock() - idle_since >= idle_s:
                    report.idle_exit = True
                    break
                self.sleep(poll_s)
        finally:
            pool_log.setLevel(pool_level)
            lock.release()
        return report

    def serve_pending(self, report: WorkerReport) -> int:
        """One scan: deliver the outbox, then compact every pending conversation
        once; how many events and conversations were served.

        On a shared store that fails under the worker (the server stopped), the
        work after the outbox backs off (``StoreRetry``) instead of ending the
        worker: what hooks capture meanwhile is delivered once the server is
        back, by this worker if no hook gets there first."""
        from lossless.errors import StoreError

        served = self.deliver_outbox(report)
        retry = self.store_retry
        if not retry.due():
            return served
        try:
            served = self._serve_store(report, served)
        except StoreError as exc:
            if self.engine.store.coordination is None or self._once:
                raise
            retry.failed(exc)
            return served
        retry.succeeded()
        return served

    def _serve_store(self, report: WorkerReport, served: int) -> int:
        for claim in self.source.claims():
            outcome = self.compact(claim.conversation)
            claim.finish(outcome)
            report.jobs.append(outcome)
            self.log(outcome.describe())
            if not outcome.busy:
                served += 1
        if not served:
            served = self.build_index(report)
        if not served:
            served = self.embed(report)
        return served

    def build_index(self, report: WorkerReport, *, max_seconds: float = 5.0) -> int:
        """Add the substring-index backlog in chunks for up to ``max_seconds``
        (then compaction requests are looked at again); chunks indexed."""
        from lossless.engine.indexing import catch_up_all

        deadline = self.clock() + max_seconds
        chunks = 0

        def tally(added: int) -> None:
            nonlocal chunks
            chunks += 1
            report.indexed += added

        before = report.indexed
        catch_up_all(
            self.engine.store, progress=tally, should_stop=lambda: self.clock() >= deadline
        )
        if report.indexed > before:
            left = self.engine.store.search.index_backlog()
            self.log(f"substring index: +{report.indexed - before} message(s), {left} to go")
        return chunks

    def embed(self, report: WorkerReport, *, max_seconds: float = 5.0) -> int:
        """Embed the backlog for up to ``max_seconds`` (then compaction requests
        are looked at again); items embedded. A model that cannot load is
        reported once and not retried by this worker."""
        from lossless.embeddings.loader import SemanticUnavailable
        from lossless.engine.embedding import semantic_status

        if report.embedding_error is not None:
            return 0
        status = semantic_status(self.engine.store, self.config, with_progress=False)
        if not status.active:
            return 0
        deadline = self.clock() + max_seconds
        try:
            run = self.engine.embed(should_stop=lambda: self.clock() >= deadline)
        except SemanticUnavailable as exc:
            report.embedding_error = str(exc)
            self.log(f"embeddings: {exc}")
            return 0
        report.embedded += run.items
        if run.items:
            left = self.engine.store.vectors.progress(self.config.semantic_model).total_pending
            self.log(
                f"embeddings: +{run.items} item(s) ({run.chunks} chunk(s), "
                f"{run.cpu_seconds:.1f} CPU s), {left} to go"
            )
        return run.items

    def deliver_outbox(self, report: WorkerReport) -> int:
        """Deliver what hooks captured while the server was away; events delivered.

        While delivery keeps failing, attempts back off (``DeliveryRetry``) and
        the failure is logged when it starts, changes or recovers, not at
        every poll."""
        from lossless import offline_capture

        retry = self.outbox_retry
        if retry.failing and not retry.due(offline_capture.outbox_position(self.config)):
            return 0
        delivery = offline_capture.deliver_outbox(self.engine)
        if delivery is None:
            if retry.failing and not (offline_capture.outbox_position(self.config) or (0,))[0]:
                retry.emptied()
            return 0
        if self._once:
            # One attempt and done (cron): nothing to back off from.
            self.log(delivery.describe())
        elif delivery.error is None:
            retry.succeeded(delivery)
        else:
            retry.failed(delivery, offline_capture.outbox_position(self.config))
        report.delivered += delivery.delivered
        report.outbox_error = delivery.error
        schedule_compaction(self.engine, delivery.conversations)
        return delivery.delivered

    def compact(self, conversation: Conversation) -> JobOutcome:
        """Compact one conversation for its pending request and record it as served."""
        from lossless.engine.compaction import CompactionError

        store = self.engine.store
        meta = conversation.metadata or {}
        requested = request_time(meta.get(REQUESTED_AT))
        mode: CompactionMode = "sweep" if meta.get(REQUEST_MODE) == "sweep" else "incremental"
        outcome = JobOutcome(conversation.id, mode)
        started = time.monotonic()
        try:
            compactor = self.engine.compactor(lease_ttl_s=self.lease_ttl_s)
            results = self._run(compactor, conversation.id, mode)
        except CompactionError as exc:
            # A misconfigured summarizer: retrying every poll would spin, so the
            # request counts as served and the error is kept for `lcm doctor`.
            outcome.error = str(exc)
            results = []
        except Exception as exc:
            outcome.error = f"{type(exc).__name__}: {exc}"
            results = []
        outcome.seconds = time.monotonic() - started
        if results and all(r.noop and r.noop.startswith("busy") for r in results):
            outcome.busy = True
            return outcome
        if results:
            from lossless.summarize.health import note_summarizer_health

            note_summarizer_health(self.engine.config, results)
            outcome.tokens_before = results[0].tokens_before
            outcome.tokens_after = results[-1].tokens_after
            outcome.passes = sum(len(r.passes) for r in results)
            outcome.summaries = [s for r in results for s in r.summaries_created]
            errors = [r.error for r in results if r.error]
            if errors and outcome.error is None:
                outcome.error = errors[-1]
        store.conversations.update_metadata(
            conversation.id, {DONE_AT: requested, LAST_ERROR: outcome.error}
        )
        return outcome

    def _run(
        self, compactor: Compactor, conversation_id: int, mode: CompactionMode
    ) -> list[CompactionResult]:
        if mode == "sweep":
            return [compactor.sweep(conversation_id)]
        results: list[CompactionResult] = []
        for _ in range(MAX_INCREMENTAL_ROUNDS):
            # What an agent loop runs after each turn: one leaf pass and the
            # condensations it enables, then down to the context threshold if
            # still above it. Repeated: the session may have grown by many turns.
            result = compactor.after_turn(conversation_id)
            results.append(result)
            if not result.acted or result.error:
                break
        return results
