"""Coordination on PostgreSQL: the SKIP LOCKED work queue, fenced claims, and
real worker processes compacting many conversations at once."""

from __future__ import annotations

import gc
import multiprocessing
import multiprocessing.context
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.engine.compaction_helpers import Clock, agent_turn, expand_items, ingest
from tests.store import postgres_workers
from tests.store.postgres_server import require_psycopg

from lossless.errors import LeaseLostError
from lossless.store.postgres import PostgresStore

require_psycopg()


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    s = PostgresStore(pg_url)
    yield s
    s.close()


def conv(store: PostgresStore, session: str) -> int:
    return store.conversations.get_or_create(project="p", session_id=session, client="api").id


# -- the queue ----------------------------------------------------------------


def test_enqueue_is_deduplicated_while_a_job_waits(store: PostgresStore) -> None:
    cid = conv(store, "a")
    first = store.coordination.jobs.enqueue("compact", cid)
    assert first is not None
    assert store.coordination.jobs.enqueue("compact", cid) is None
    assert store.coordination.jobs.enqueue("map", cid) is not None
    job = store.coordination.jobs.claim("w1", 30, kinds=["compact"])
    assert job is not None and job.id == first
    # Work that arrives while the job runs needs a later run.
    assert store.coordination.jobs.enqueue("compact", cid) is not None
    assert store.coordination.jobs.counts() == {"ready": 2, "running": 1, "done": 0, "failed": 0}


def test_claims_are_oldest_first_and_respect_delay(store: PostgresStore) -> None:
    a, b, c = (conv(store, s) for s in "abc")
    store.coordination.jobs.enqueue("compact", c, delay_s=60)
    ja = store.coordination.jobs.enqueue("compact", a)
    jb = store.coordination.jobs.enqueue("compact", b, {"mode": "sweep"})
    first = store.coordination.jobs.claim("w", 30)
    second = store.coordination.jobs.claim("w", 30)
    assert first is not None and second is not None
    assert (first.id, second.id) == (ja, jb)
    assert second.payload == {"mode": "sweep"} and second.attempts == 1
    assert store.coordination.jobs.claim("w", 30) is None  # c is not due yet


def test_concurrent_claimers_get_distinct_jobs(pg_url: str) -> None:
    stores = [PostgresStore(pg_url) for _ in range(4)]
    try:
        ids = {
            stores[0].coordination.jobs.enqueue("compact", conv(stores[0], f"s{i}"))
            for i in range(8)
        }
        barrier = threading.Barrier(4)
        claimed: list[int] = []
        lock = threading.Lock()

        def claim(i: int) -> None:
            barrier.wait()
            while (job := stores[i].coordination.jobs.claim(f"w{i}", 30)) is not None:
                with lock:
                    claimed.append(job.id)

        threads = [threading.Thread(target=claim, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(claimed) == sorted(i for i in ids if i is not None)
    finally:
        for s in stores:
            s.close()


def test_one_conversation_is_never_worked_on_twice_at_once(store: PostgresStore) -> None:
    cid = conv(store, "a")
    store.coordination.jobs.enqueue("compact", cid)
    running = store.coordination.jobs.claim("w1", 30)
    assert running is not None
    store.coordination.jobs.enqueue("compact", cid)
    other = conv(store, "b")
    store.coordination.jobs.enqueue("compact", other)
    job = store.coordination.jobs.claim("w2", 30)
    assert job is not None and job.conversation_id == other
    assert store.coordination.jobs.claim("w3", 30) is None
    store.coordination.jobs.complete(running)
    again = store.coordination.jobs.claim("w3", 30)
    assert again is not None and again.conversation_id == cid


def test_dead_workers_job_is_retried_and_its_late_write_refused(store: PostgresStore) -> None:
    cid = conv(store, "a")
    job_id = store.coordination.jobs.enqueue("compact", cid)
    dead = store.coordination.jobs.claim("dead-worker", 0.2)
    assert dead is not None and dead.id == job_id
    assert store.coordination.jobs.claim("w2", 30) is None  # the claim still holds
    time.sleep(0.3)
    retry = store.coordination.jobs.claim("w2", 30)
    assert retry is not None and retry.id == job_id
    assert retry.attempts == 2 and retry.fence > dead.fence
    with pytest.raises(LeaseLostError):
        store.coordination.jobs.complete(dead)
    with pytest.raises(LeaseLostError):
        store.coordination.jobs.fail(dead, "late")
    with pytest.raises(LeaseLostError):
        store.coordination.jobs.renew(dead, 30)
    store.coordination.jobs.renew(retry, 30)
    store.coordination.jobs.complete(retry)
    record = store.coordination.jobs.get(retry.id)
    assert record is not None and record["state"] == "done" and record["claimed_by"] == "w2"


def test_failures_retry_then_give_up(store: PostgresStore) -> None:
    cid = conv(store, "a")
    job_id = store.coordination.jobs.enqueue("compact", cid, max_attempts=2)
    first = store.coordination.jobs.claim("w", 30)
    assert first is not None
    assert store.coordination.jobs.fail(first, "summarizer down", retry_in_s=0) == "ready"
    second = store.coordination.jobs.claim("w", 30)
    assert second is not None and second.id == job_id and second.attempts == 2
    assert store.coordination.jobs.fail(second, "still down", retry_in_s=0) == "failed"
    record = store.coordination.jobs.get(job_id)
    assert record is not None and record["last_error"] == "still down"
    assert store.coordination.jobs.claim("w", 30) is None


def test_expired_last_attempt_fails_the_job(store: PostgresStore) -> None:
    cid = conv(store, "a")
    job_id = store.coordination.jobs.enqueue("compact", cid, max_attempts=1)
    assert store.coordination.jobs.claim("dies", 0.1) is not None
    time.sleep(0.2)
    assert store.coordination.jobs.claim("w", 30) is None
    record = store.coordination.jobs.get(job_id)
    assert record is not None and record["state"] == "failed"
    assert "expired on attempt 1" in record["last_error"]


def test_failed_attempt_superseded_by_a_newer_request(store: PostgresStore) -> None:
    cid = conv(store, "a")
    store.coordination.jobs.enqueue("compact", cid)
    job = store.coordination.jobs.claim("w", 30)
    assert job is not None
    newer = store.coordination.jobs.enqueue("compact", cid)
    assert store.coordination.jobs.fail(job, "boom", retry_in_s=0) == "failed"
    nxt = store.coordination.jobs.claim("w", 30)
    assert nxt is not None and nxt.id == newer


# -- real workers --------------------------------------------------------------


def _seed(store: PostgresStore, conversations: int) -> dict[int, list[int]]:
    messages: dict[int, list[int]] = {}
    for n in range(conversations):
        cid = conv(store, f"session-{n}")
        clock = Clock()
        for turn in range(6):
            ingest(store, cid, agent_turn(clock, turn + 10 * n, tool_calls=2, words=40))
        messages[cid] = [m.id for m in store.messages.list(cid)]
    return messages


def _check_invariants(store: PostgresStore, messages: dict[int, list[int]]) -> None:
    for cid, ids in messages.items():
        assert [m.id for m in store.messages.list(cid)] == ids  # every message kept once
        assert expand_items(store, cid) == ids  # coverage: each exactly once, in order
    covered = Counter(
        mid
        for cid in messages
        for s in store.summaries.list(cid, depth=0)
        for mid in store.summaries.source_message_ids(s.id)
    )
    assert covered and max(covered.values()) == 1  # no message in two leaves


@pytest.fixture
def ctx() -> Iterator[multiprocessing.context.SpawnContext]:
    """multiprocessing's spawn context, and afterwards its resource tracker stopped.

    Starting a spawned process (and making a semaphore for one: an Event, a
    Queue) starts multiprocessing's resource tracker, a process of its own
    that otherwise runs until pytest exits and ignores SIGTERM: the suite's
    sweep listed it as left running. Stopped as CPython's own tests stop it,
    once the test's semaphores are collected (their finalizers tell the
    tracker, and would start a new one were it stopped first).
    """
    yield multiprocessing.get_context("spawn")
    gc.collect()
    from multiprocessing import resource_tracker

    resource_tracker._resource_tracker._stop()  # type: ignore[attr-defined]


def _spawn(
    ctx: multiprocessing.context.SpawnContext, target: Any, *args: Any
) -> multiprocessing.process.BaseProcess:
    return ctx.Process(target=target, args=args, daemon=True)


def test_four_worker_processes_compact_twenty_conversations(
    store: PostgresStore, pg_url: str, tmp_path: Path, ctx: multiprocessing.context.SpawnContext
) -> None:
    messages = _seed(store, 20)
    start = ctx.Event()
    results = ctx.Queue()
    workers = [
        _spawn(
            ctx,
            postgres_workers.queue_worker,
            pg_url,
            str(tmp_path / f"h{i}"),
            f"w{i}",
            start,
            results,
        )
        for i in range(4)
    ]
    for w in workers:
        w.start()
    for cid in messages:
        assert store.coordination.jobs.enqueue("compact", cid) is not None
    start.set()
    reports = dict(results.get(timeout=120) for _ in workers)
    for w in workers:
        w.join(30)
        assert w.exitcode == 0
    done = [entry for entries in reports.values() for entry in entries]
    assert sorted(cid for _, cid, _ in done) == sorted(messages)  # each compacted once
    assert all(summaries > 0 for _, _, summaries in done)
    assert store.coordination.jobs.counts() == {"ready": 0, "running": 0, "done": 20, "failed": 0}
    assert sum(1 for entries in reports.values() if entries) >= 2  # the work was shared
    _check_invariants(store, messages)


def test_four_workers_contending_for_one_conversation(
    store: PostgresStore, pg_url: str, tmp_path: Path, ctx: multiprocessing.context.SpawnContext
) -> None:
    messages = _seed(store, 1)
    (cid,) = messages
    start = ctx.Event()
    results = ctx.Queue()
    workers = [
        _spawn(
            ctx,
            postgres_workers.contending_worker,
            pg_url,
            str(tmp_path / f"h{i}"),
            f"w{i}",
            cid,
            start,
            results,
        )
        for i in range(4)
    ]
    for w in workers:
        w.start()
    start.set()
    outcomes = [results.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(30)
        assert w.exitcode == 0
    assert all(error is None for _, _, error in outcomes)
    # One sweep did the work; the others, after waiting for the lease, found
    # nothing left (or only what the first left for a later depth).
    assert sum(n for _, n, _ in outcomes) == len(store.summaries.list(cid))
    assert max(n for _, n, _ in outcomes) > 0
    _check_invariants(store, messages)
