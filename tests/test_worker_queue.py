"""`lcm worker` on PostgreSQL: compaction jobs claimed from the shared queue.

Four `lcm worker --once` processes, each with its own LCM_HOME as if on its
own machine, against one database holding 20 due conversations: every
conversation is compacted once, by one worker, no summary is made twice and
every message is kept once.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

from tests.engine.compaction_helpers import expand_items
from tests.pg_fixtures import own_pg_server, pg_home
from tests.test_hooks import lcm_argv

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.store.postgres import PostgresStore
from lossless.worker import JOB_KIND, is_pending, request_compaction

__all__ = ["own_pg_server", "pg_home"]

SMALL = {
    "LCM_LEAF_CHUNK_TOKENS": "600",
    "LCM_LEAF_TARGET_TOKENS": "120",
    "LCM_FRESH_TAIL_COUNT": "4",
    "LCM_LEAF_MIN_FANOUT": "3",
    "LCM_CONDENSED_MIN_FANOUT": "2",
    "LCM_SUMMARIZER_PROVIDER": "extractive",
}
CONVERSATIONS = 20
WORKERS = 4

WORDS = [
    "lease",
    "fence",
    "queue",
    "worker",
    "summary",
    "token",
    "message",
    "compaction",
    "database",
    "index",
]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) + str(rng.randint(0, 99)) for _ in range(n))


def test_four_workers_share_twenty_conversations(pg_home: str, tmp_path: Path) -> None:
    env = {**os.environ, **SMALL}
    rng = random.Random(3)
    config = load_config(tmp_path / "seed-home", env=env)
    with Engine.open(config=config) as engine:
        ids = []
        for n in range(CONVERSATIONS):
            chat = engine.conversation(f"queue-{n}", project="p")
            chat.ingest(
                [
                    {"role": "user" if i % 2 == 0 else "assistant", "content": _text(rng, 40)}
                    for i in range(40)
                ]
            )
            request_compaction(engine.store, chat.id, "sweep")
            ids.append(chat.id)
        store = engine.store
        assert isinstance(store, PostgresStore)
        before = {cid: [m.id for m in store.messages.iter_all(cid)] for cid in ids}
        assert store.coordination.jobs.counts()["ready"] == CONVERSATIONS

    workers = [
        subprocess.Popen(
            [*lcm_argv(), "--home", str(tmp_path / f"machine-{w}"), "worker", "--once", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for w in range(WORKERS)
    ]
    reports: list[dict[str, Any]] = []
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err.decode()
        reports.append(json.loads(out))

    served = [job["conversation_id"] for r in reports for job in r["jobs"] if not job["busy"]]
    assert sorted(served) == sorted(ids), "each conversation compacted by exactly one worker"
    assert all(job["error"] is None and job["summaries"] for r in reports for job in r["jobs"])
    made = [s for r in reports for job in r["jobs"] for s in job["summaries"]]
    assert len(made) == len(set(made))

    with PostgresStore(pg_home) as store:
        counts = store.coordination.jobs.counts()
        assert counts["ready"] == counts["running"] == counts["failed"] == 0
        assert counts["done"] >= CONVERSATIONS
        for cid in ids:
            conversation = store.conversations.get(cid)
            assert conversation is not None and not is_pending(conversation)
            summaries = store.summaries.list(cid)
            assert summaries
            assert sorted(s.id for s in summaries) == sorted(
                s
                for r in reports
                for job in r["jobs"]
                if job["conversation_id"] == cid
                for s in job["summaries"]
            )
            covered = [m for s in summaries for m in store.summaries.source_message_ids(s.id)]
            assert len(covered) == len(set(covered)), "a message summarized twice"
            assert [m.id for m in store.messages.iter_all(cid)] == before[cid]
            assert expand_items(store, cid) == before[cid]
        # Every job row names one of the conversations; none was served twice.
        done = [
            row
            for row in (store.coordination.jobs.get(j) for j in range(1, counts["done"] + 1))
            if row is not None and row["kind"] == JOB_KIND
        ]
        assert {row["conversation_id"] for row in done} == set(ids)
