"""Drive one worker through a job: claim items, answer them in threads, record outcomes.

Only this thread touches the store. Answering threads call the model and
hand their ``ItemAnswer`` back; this thread records it in one transaction
with the result's searchable message, fenced by the claim, so a result is
stored once or not at all. Leases are renewed while answers are awaited, and
a lease that was lost (another worker took the item over) just drops the
answer: the other worker's outcome is the one that counts.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from lossless.engine.ingest import ingest_messages
from lossless.engine.operators.llm_map import ItemAnswer, JobAborted, Stopped
from lossless.models import Conversation, NewMessage
from lossless.redact.redactor import Redactor
from lossless.store.contract import Repositories, Store
from lossless.store.map_jobs import MapClaim, MapCounts, MapJob, MapOutcome
from lossless.tokens import estimate_tokens

#: A claim not renewed for this long is free for any worker to take.
DEFAULT_LEASE_TTL_S = 60.0
# How often the loop wakes to renew leases and notice a cancel.
_TICK_S = 0.5
_STATUS_EVERY_S = 2.0

AnswerFn = Callable[[MapClaim, threading.Event], ItemAnswer]


class _Superseded(Exception):
    """The claim was taken over: roll the result's message back with it."""


@dataclass
class RunStats:
    recorded: int = 0
    superseded: int = 0
    model: str | None = None


def result_text(job: MapJob, claim: MapClaim, value: object) -> str:
    """The searchable form of one result: which job and item, and the answer."""
    answer = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"[{job.id} item {claim.index} (input line {claim.line_no})]\n{answer}"


class JobRunner:
    def __init__(
        self,
        store: Store,
        job: MapJob,
        conversation: Conversation | None,
        answer: AnswerFn,
        *,
        owner: str,
        concurrency: int,
        redactor: Redactor | None = None,
        lease_ttl_s: float = DEFAULT_LEASE_TTL_S,
        progress: Callable[[MapCounts], None] | None = None,
        stop: threading.Event | None = None,
        loading: Callable[[], bool] = lambda: False,
    ) -> None:
        self.store = store
        self.job = job
        self.conversation = conversation
        self.answer = answer
        self.owner = owner
        self.concurrency = concurrency
        self.redactor = redactor
        self.lease_ttl_s = lease_ttl_s
        self.progress = progress
        self.stop = stop or threading.Event()
        self.loading = loading
        self.stats = RunStats()

    def run(self) -> RunStats:
        """Work until no item is left to claim (or the job is cancelled / stopped).

        A few claims wait in ``ready`` beside those being answered, so a slot
        that frees up is refilled at once, before this thread records the
        answer that freed it: the model is never idle while the store writes.
        """
        in_flight: dict[Future[ItemAnswer], MapClaim] = {}
        ready: deque[MapClaim] = deque()
        # Answers taken off in_flight but not yet recorded when recording one of
        # them ended the run (a JobAborted): settled in the finally like in_flight.
        unrecorded: list[tuple[MapClaim, Future[ItemAnswer]]] = []
        renewed = checked = time.monotonic()
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix=f"lcm-{self.job.id}")

        def refill() -> None:
            while ready and len(in_flight) < self.concurrency:
                claim = ready.popleft()
                in_flight[pool.submit(self.answer, claim, self.stop)] = claim

        try:
            while True:
                now = time.monotonic()
                if now - checked >= _STATUS_EVERY_S:
                    checked = now
                    current = self.store.map_jobs.get(self.job.id)
                    if current is None or current.status == "cancelled":
                        self.stop.set()
                    if self.progress is not None:
                        self.progress(self.store.map_jobs.counts(self.job.id))
                if self.stop.is_set():
                    break
                wanted = 2 * self.concurrency - len(in_flight) - len(ready)
                if wanted > 0:
                    ready.extend(
                        self.store.map_jobs.claim(
                            self.job.id, self.owner, limit=wanted, ttl_s=self.lease_ttl_s
                        )
                    )
                refill()
                if not in_flight:
                    if self.loading():
                        time.sleep(_TICK_S / 5)
                        continue
                    counts = self.store.map_jobs.counts(self.job.id)
                    if counts.pending == 0 and counts.running == 0:
                        break
                    # Another worker holds the rest: wait until it finishes them
                    # or its leases expire and they can be claimed here.
                    time.sleep(_TICK_S)
                    continue
                done, _ = wait(in_flight, timeout=_TICK_S, return_when=FIRST_COMPLETED)
                finished = [(in_flight.pop(future), future) for future in done]
                refill()
                for index, (claim, future) in enumerate(finished):
                    try:
                        self._record(claim, future)
                    except BaseException:
                        unrecorded.extend(finished[index + 1 :])
                        raise
                if time.monotonic() - renewed >= self.lease_ttl_s / 3:
                    renewed = time.monotonic()
                    self.store.map_jobs.renew(self.job.id, self.owner, self.lease_ttl_s)
        finally:
            self.stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            unfinished = list(ready)
            for claim, future in [*unrecorded, *((c, f) for f, c in in_flight.items())]:
                if future.done() and not future.cancelled() and future.exception() is None:
                    self._record(claim, future)
                else:
                    unfinished.append(claim)
            self.store.map_jobs.release(unfinished)
        if self.progress is not None:
            self.progress(self.store.map_jobs.counts(self.job.id))
        return self.stats

    def _record(self, claim: MapClaim, future: Future[ItemAnswer]) -> None:
        try:
            answer = future.result()
        except Stopped:
            self.store.map_jobs.release([claim])
            return
        except JobAborted:
            self.store.map_jobs.release([claim])
            self.stop.set()
            raise
        except Exception as exc:  # a bug or an unexpected failure: this item fails, not the job
            answer = ItemAnswer(False, None, f"{type(exc).__name__}: {exc}", claim.attempts + 1)
        self.stats.model = answer.model or self.stats.model
        try:
            with self.store.transaction() as tx:
                message_id = None
                result = None
                error = answer.error
                if answer.ok:
                    result = json.dumps(answer.value, ensure_ascii=False)
                    if self.redactor is not None:
                        result = self.redactor.redact_json(result).text
                    message_id = self._register(tx, claim, answer)
                elif error is not None and self.redactor is not None:
                    error = self.redactor.redact_text(error).text
                recorded = tx.map_jobs.complete(
                    claim,
                    MapOutcome(
                        status="ok" if answer.ok else "failed",
                        attempts=answer.attempts,
                        result=result,
                        error=error,
                        calls=answer.calls,
                        input_tokens=answer.input_tokens,
                        output_tokens=answer.output_tokens,
                        message_id=message_id,
                    ),
                )
                if not recorded:
                    raise _Superseded()
        except _Superseded:
            self.stats.superseded += 1
            return
        self.stats.recorded += 1

    def _register(self, tx: Repositories, claim: MapClaim, answer: ItemAnswer) -> int | None:
        if self.conversation is None:
            return None
        text = result_text(self.job, claim, answer.value)
        message = NewMessage(
            role="assistant",
            content=text,
            ingest_key=f"{self.job.id}:{claim.index}",
            token_count=estimate_tokens(text),
            metadata={"map_job": self.job.id, "item": claim.index, "line": claim.line_no},
        )
        ids = ingest_messages(tx, self.conversation, [message], redactor=self.redactor)
        return ids[0] if ids else None
