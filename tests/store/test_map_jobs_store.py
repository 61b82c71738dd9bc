"""The map-job repository on both backends: claims are disjoint, outcomes fenced, once each."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lossless.errors import NotFoundError
from lossless.store.contract import Store
from lossless.store.map_jobs import MapOutcome, NewMapItem, NewMapJob
from lossless.store.sqlite import SQLiteStore


@pytest.fixture(params=["sqlite", "postgresql"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    if request.param == "sqlite":
        yield lambda: SQLiteStore(tmp_path / "lcm.db")
        return
    url = request.getfixturevalue("pg_url")
    from lossless.store.postgres import PostgresStore

    yield lambda: PostgresStore(url)


def _job(store: Store, items: int = 10, job_id: str = "job_test") -> str:
    store.map_jobs.create(
        NewMapJob(id=job_id, kind="llm_map", project="p", spec={"prompt": "x"}, created_at="t")
    )
    store.map_jobs.add_items(
        job_id,
        [NewMapItem(i, i + 1, f'{{"n": {i}}}') for i in range(items)]
        + [NewMapItem(items, items + 1, "{bad", problem="line is not JSON")],
    )
    return job_id


def test_claims_outcomes_and_counts(open_store: Callable[[], Store]) -> None:
    store = open_store()
    try:
        job = _job(store)
        assert store.map_jobs.add_items(job, [NewMapItem(0, 1, '{"n": 0}')]) == 0  # idempotent
        assert store.map_jobs.get(job).loaded_items == 11  # type: ignore[union-attr]
        first = store.map_jobs.claim(job, "a", limit=4, ttl_s=60)
        second = store.map_jobs.claim(job, "b", limit=100, ttl_s=60)
        assert [c.index for c in first] == [0, 1, 2, 3]
        assert [c.index for c in second] == [4, 5, 6, 7, 8, 9]  # the bad line is never claimed
        assert store.map_jobs.claim(job, "c", limit=5, ttl_s=60) == []
        assert store.map_jobs.complete(first[0], MapOutcome("ok", 1, result="1", calls=1))
        assert not store.map_jobs.complete(first[0], MapOutcome("ok", 1, result="2"))  # done
        store.map_jobs.release(first[1:])
        again = store.map_jobs.claim(job, "c", limit=10, ttl_s=60)
        assert [c.index for c in again] == [1, 2, 3]
        # The released claim is stale: its token lost to the new claim.
        assert not store.map_jobs.complete(first[1], MapOutcome("ok", 1, result="3"))
        assert store.map_jobs.complete(again[0], MapOutcome("failed", 4, error="boom"))
        counts = store.map_jobs.counts(job)
        assert (counts.ok, counts.failed, counts.running, counts.pending) == (1, 2, 8, 0)
        assert counts.calls == 1
        assert store.map_jobs.requeue_failed(job) == 1  # not the unusable input line
        assert sorted(store.map_jobs.holders(job)) == ["b", "c"]
        assert store.map_jobs.release_holder(job, "b") == 6
        items = store.map_jobs.items(job)
        assert [i.index for i in items] == list(range(11))
        assert items[10].status == "failed" and items[10].error == "line is not JSON"
        assert store.map_jobs.items(job, after=8, limit=1)[0].index == 9
        with pytest.raises(NotFoundError):
            store.map_jobs.set_status("job_missing", "done")
    finally:
        store.close()


def test_an_expired_lease_is_claimed_again_and_the_old_holder_is_fenced(
    open_store: Callable[[], Store],
) -> None:
    store = open_store()
    try:
        job = _job(store, items=2)
        stale = store.map_jobs.claim(job, "dead", limit=1, ttl_s=1)[0]
        time.sleep(1.2)
        fresh = store.map_jobs.claim(job, "alive", limit=1, ttl_s=60)[0]
        assert fresh.index == stale.index and fresh.token > stale.token
        assert not store.map_jobs.complete(stale, MapOutcome("ok", 1, result="late"))
        assert store.map_jobs.complete(fresh, MapOutcome("ok", 1, result="on time"))
        assert store.map_jobs.items(job)[0].result == "on time"
    finally:
        store.close()


def test_concurrent_claimers_never_share_an_item(open_store: Callable[[], Store]) -> None:
    setup = open_store()
    job = _job(setup, items=200)
    setup.close()
    claimed: list[list[int]] = []
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        store = open_store()
        mine: list[int] = []
        try:
            while batch := store.map_jobs.claim(job, name, limit=3, ttl_s=60):
                for claim in batch:
                    assert store.map_jobs.complete(claim, MapOutcome("ok", 1, result="1"))
                    mine.append(claim.index)
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()
            claimed.append(mine)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    every = sorted(i for mine in claimed for i in mine)
    assert every == list(range(200))
