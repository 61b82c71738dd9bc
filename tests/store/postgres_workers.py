"""Worker processes for the PostgreSQL coordination tests.

Each runs in its own interpreter (multiprocessing ``spawn``), opens its own
store, and compacts with the real ``Compactor`` and the offline extractive
summarizer, exactly as a worker on another machine would.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

SETTINGS: dict[str, Any] = {
    "fresh_tail_count": 4,
    "leaf_chunk_tokens": 400,
    "leaf_target_tokens": 60,
    "condensed_target_tokens": 80,
    "leaf_min_fanout": 3,
    "condensed_min_fanout": 2,
    "summarizer.provider": "extractive",
}


def _compactor(url: str, home: str, owner: str, wait_s: float) -> Any:
    from lossless.config import load_config
    from lossless.engine.compaction import Compactor
    from lossless.store.postgres import PostgresStore
    from lossless.summarize.configured import summarizer_from_config

    config = load_config(Path(home), env={}, overrides=SETTINGS)
    store = PostgresStore(url)
    compactor = Compactor(store, config, summarizer_from_config(config), owner=owner, wait_s=wait_s)
    return store, compactor


def queue_worker(url: str, home: str, name: str, start: Any, results: Any) -> None:
    """Claim compaction jobs until the queue is empty; report (job, conversation, summaries)."""
    store, compactor = _compactor(url, home, name, wait_s=0.0)
    done: list[tuple[int, int, int]] = []
    try:
        start.wait(60)
        idle_until = time.monotonic() + 2.0
        while time.monotonic() < idle_until:
            job = store.coordination.jobs.claim(name, ttl_s=60, kinds=["compact"])
            if job is None:
                counts = store.coordination.jobs.counts()
                if counts["ready"] == 0 and counts["running"] == 0:
                    break
                time.sleep(0.02)
                continue
            assert job.conversation_id is not None
            result = compactor.sweep(job.conversation_id)
            if result.error:
                store.coordination.jobs.fail(job, result.error, retry_in_s=0.05)
                continue
            store.coordination.jobs.complete(job)
            done.append((job.id, job.conversation_id, len(result.summaries_created)))
            idle_until = time.monotonic() + 2.0
    finally:
        results.put((name, done))
        store.close()


def contending_worker(
    url: str, home: str, name: str, conversation_id: int, start: Any, results: Any
) -> None:
    """Sweep one conversation that every other worker sweeps at the same moment."""
    store, compactor = _compactor(url, home, name, wait_s=30.0)
    try:
        start.wait(60)
        result = compactor.sweep(conversation_id)
        results.put((name, len(result.summaries_created), result.error))
    finally:
        store.close()
