"""The architecture's invariants under random conversations and random compaction.

Conversations are generated in the shapes real transcripts have (prompts,
assistant turns with parallel tool calls, results in one message or one per
call, system notes, meta records, a call still waiting for its result) and
written through the storage contract. After every step of a random sequence of
ingest / incremental / leaf / condense / sweep / budget compaction, and with
summarizers that answer well, answer too long, fail, or crash:

1. lossless: every message is stored byte-exact;
2. coverage: expanding the context items yields every message once, in order;
3. progress: every pass shrinks the context or says truthfully why not, and a
   crash leaves exactly the last committed state;
4. protection: the fresh tail (a message count), pending calls and tool
   pairs are intact, and the newest user prompt is visible in the assembled
   context even when the turn it started was compacted;
and the assembled context is valid for both APIs and within its budget unless
the fresh tail alone exceeds it.

The property runs on every backend: SQLite files and a real PostgreSQL 18
(embedded, each example on a conversation of its own).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.engine.compaction_helpers import (
    CountingSummarizer,
    check_anthropic,
    check_openai,
    expand_items,
    ingest,
    make_config,
    new_conversation,
    open_store,
    ts,
)
from tests.pg_fixtures import own_pg_server  # noqa: F401  (a fixture, used by name)
from tests.store.postgres_server import EmbeddedPostgres

from lossless.config import Config
from lossless.engine.assembly import assemble
from lossless.engine.compaction import CompactionResult, Compactor
from lossless.models import NewMessage, NewPart
from lossless.sources import render_content
from lossless.store.contract import Store
from lossless.summarize import (
    ExtractiveSummarizer,
    SummarizerError,
    SummaryRequest,
    SummaryResponse,
)

REPO = Path(__file__).resolve().parents[2]
VOCAB = ["fix", "src/app.py", "error", "E1234", "retry", "42", "cache", "deploy", "ok", "the"]


# ------------------------------------------------------------------ generation


@st.composite
def words(draw: st.DrawFn, low: int = 1, high: int = 120) -> str:
    n = draw(st.integers(low, high))
    seed = draw(st.integers(0, 10_000))
    rng = random.Random(seed)
    # Unicode and markup on purpose: byte-exactness must not depend on ASCII.
    extra = draw(st.sampled_from(["", " ü日本", " <summary>", " \\n", " 🙂"]))
    return " ".join(rng.choice(VOCAB) for _ in range(n)) + extra


@st.composite
def turn(draw: st.DrawFn, index: int, last: bool) -> list[NewMessage]:
    clock = [index * 1000]

    def at() -> str:
        clock[0] += 1
        return ts(clock[0])

    def text(role: str, body: str, meta: dict[str, Any] | None = None) -> NewMessage:
        return NewMessage(
            role=role,  # type: ignore[arg-type]
            content=body,
            parts=(NewPart("text", text=body),),
            created_at=at(),
            metadata=meta,
        )

    out: list[NewMessage] = []
    if draw(st.booleans()) and draw(st.booleans()):
        out.append(text("system", draw(words(1, 20))))
    if draw(st.integers(0, 9)) == 0:
        out.append(text("user", "<command-name>/status</command-name>", {"is_meta": True}))
    out.append(text("user", draw(words())))
    exchanges = draw(st.integers(0, 4))
    for e in range(exchanges):
        calls = [f"t{index}_{e}_{c}" for c in range(draw(st.integers(1, 2)))]
        parts = []
        if draw(st.booleans()):
            parts.append(NewPart("text", text=draw(words(1, 30))))
        parts += [
            NewPart(
                "tool_use",
                text=json.dumps({"cmd": draw(words(1, 8))}),
                tool_name="Bash",
                tool_call_id=c,
            )
            for c in calls
        ]
        out.append(NewMessage("assistant", render_content(parts), tuple(parts), created_at=at()))
        if last and e == exchanges - 1 and draw(st.booleans()):
            return out  # the newest call is still waiting for its result
        results = [
            NewPart(
                "tool_result",
                text=draw(words(1, 200)),
                tool_call_id=c,
                metadata={"is_error": True} if draw(st.integers(0, 5)) == 0 else None,
            )
            for c in calls
        ]
        if draw(st.booleans()):
            out.append(NewMessage("tool", render_content(results), tuple(results), created_at=at()))
        else:  # Claude Code writes one record per result
            out += [NewMessage("tool", render_content([r]), (r,), created_at=at()) for r in results]
    if draw(st.booleans()):
        out.append(text("assistant", draw(words())))
    return out


@st.composite
def conversations(draw: st.DrawFn) -> list[list[NewMessage]]:
    count = draw(st.integers(1, 9))
    return [draw(turn(i, i == count - 1)) for i in range(count)]


SETTINGS = st.fixed_dictionaries(
    {
        "fresh_tail_count": st.integers(0, 6),
        "leaf_chunk_tokens": st.integers(30, 600),
        "leaf_target_tokens": st.integers(10, 80),
        "condensed_target_tokens": st.integers(10, 120),
        "leaf_min_fanout": st.integers(2, 4),
        "condensed_min_fanout": st.integers(2, 3),
        "incremental_max_depth": st.sampled_from([-1, 0, 1, 2]),
    }
)
OPS = st.lists(
    st.sampled_from(["ingest", "ingest", "incremental", "leaf", "condense", "sweep", "until"]),
    min_size=1,
    max_size=10,
)


# ------------------------------------------------------------------ summarizers


class TooLong:
    name = "too-long"

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        return SummaryResponse(request.text + request.text, 1, 1)


class Flaky:
    """Fails like real providers do (refusals, errors) on a seeded schedule."""

    name = "flaky"

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.inner = CountingSummarizer()

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        if self.rng.random() < 0.4:
            raise SummarizerError("provider rejected the request (HTTP 400)")
        return self.inner.summarize(request)


class Crash(Exception):
    pass


@dataclass
class Crashing:
    """Raises a non-summarizer error at a seeded call, remembering the store
    state at that instant: after the failure the store must be exactly that."""

    store: Store
    conversation_id: int
    seed: int
    name: str = "crashing"

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.snapshot: Any = None
        self.inner = CountingSummarizer()

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        if self.rng.random() < 0.25:
            self.snapshot = snapshot(self.store, self.conversation_id)
            raise Crash("summarizer process died")
        return self.inner.summarize(request)


def snapshot(store: Store, cid: int) -> Any:
    summaries = store.summaries.list(cid)
    return (
        store.context.list(cid),
        summaries,
        [
            (
                s.id,
                store.summaries.source_message_ids(s.id),
                store.summaries.source_summary_ids(s.id),
            )
            for s in summaries
        ],
    )


# ------------------------------------------------------------------ checks


def check_invariants(store: Store, cid: int, ingested: list[NewMessage], tail: int) -> None:
    stored = store.messages.list(cid)
    # 1. lossless, byte-exact, parts included
    assert [m.content for m in stored] == [m.content for m in ingested]
    parts = store.messages.parts([m.id for m in stored])
    for message, original in zip(stored, ingested, strict=True):
        assert [(p.kind, p.text, p.tool_call_id) for p in parts[message.id]] == [
            (p.kind, p.text, p.tool_call_id) for p in original.parts
        ]
    # 2. coverage
    ids = [m.id for m in stored]
    assert expand_items(store, cid) == ids
    # every summary is in context or under exactly one that is
    in_context = {i.summary_id for i in store.context.list(cid) if i.summary_id}
    for s in store.summaries.list(cid):
        assert (s.id in in_context) != (store.summaries.condensed_into(s.id) is not None)
    # 4. fresh tail (a count, not the whole turn), pending calls, pairs
    raw = {i.message_id for i in store.context.list(cid) if i.message_id is not None}
    if tail:
        assert set(ids[-tail:]) <= raw
    prompts = newest_prompts(store, cid)
    cover = store.summaries.covering(ids)
    use_at: dict[str, int] = {}
    answered: set[str] = set()
    for m in stored:
        for p in parts[m.id]:
            if p.kind == "tool_use" and p.tool_call_id:
                use_at[p.tool_call_id] = m.id
            elif p.kind == "tool_result" and p.tool_call_id in use_at:
                answered.add(p.tool_call_id)
                assert cover.get(use_at[p.tool_call_id]) == cover.get(m.id)
    # The newest assistant message of the newest turn, if its calls are not
    # all answered, is waiting for their results.
    newest = next(
        (
            m
            for m in reversed(stored)
            if m.role == "assistant" and (not prompts or m.id > prompts[-1])
        ),
        None,
    )
    if newest is not None and any(
        p.kind == "tool_use" and p.tool_call_id and p.tool_call_id not in answered
        for p in parts[newest.id]
    ):
        assert newest.id in raw, "a call waiting for its result was compacted"


def newest_prompts(store: Store, cid: int) -> list[int]:
    """Ids of the messages a user typed (what assembly must keep visible)."""
    stored = store.messages.list(cid)
    parts = store.messages.parts([m.id for m in stored])
    return [
        m.id
        for m in stored
        if m.role == "user"
        and not (m.metadata or {}).get("is_meta")
        and any(p.kind != "tool_result" for p in parts[m.id])
    ]


def check_progress(result: CompactionResult, store: Store, cid: int, before: Any) -> None:
    for outcome in result.passes:
        if outcome.acted:
            assert outcome.tokens_after < outcome.tokens_before
            assert outcome.summary_tokens < outcome.source_tokens
        else:
            assert outcome.noop
    if result.error is None:
        assert result.tokens_after == store.context.token_total(cid)
    if not result.acted:
        assert result.noop or result.error
        assert snapshot(store, cid) == before


def check_assembly(store: Store, cid: int, budget: int, tail: int) -> None:
    for fmt in ("anthropic", "openai"):
        got = assemble(store, cid, budget=budget, format=fmt, fresh_tail_count=tail)  # type: ignore[arg-type]
        if fmt == "anthropic" and got.messages:
            check_anthropic(got.request())
        if fmt == "openai" and any(m["role"] != "system" for m in got.messages):
            check_openai(got.messages)
        b = got.breakdown
        if not b.tail_over_budget:
            assert b.total <= budget and not b.over_budget
        prompts = newest_prompts(store, cid)
        assert b.prompt_message_id == (prompts[-1] if prompts else None)
        if b.prompt_shown in ("in_tail", "in_place"):
            assert f"msg:{b.prompt_message_id}" in got.included
        elif b.prompt_shown in ("repeated", "clipped"):
            assert f"message {b.prompt_message_id}" in json.dumps(got.messages) or (
                f"lcm describe {b.prompt_message_id}" in json.dumps(got.messages)
            )
        elif b.prompt_shown == "omitted":
            # Only when there is next to no room left for it.
            assert b.tail_over_budget or budget - b.total < 64


# ------------------------------------------------------------------ the backends

StoreOpener = Callable[[Config], Store]


@pytest.fixture
def postgres_opener(own_pg_server: EmbeddedPostgres) -> Iterator[StoreOpener]:  # noqa: F811
    """Opens a PostgreSQL store for each example, all on one database.

    Creating a database per example would cost more than the example; each
    example works on a conversation of its own instead, and every invariant
    is checked per conversation.
    """
    from lossless.store.postgres import PostgresStore

    url = own_pg_server.create_database(prefix="lcm_invariants")
    try:
        yield lambda _config: PostgresStore(url)
    finally:
        own_pg_server.drop_database(url)


# ------------------------------------------------------------------ the property


def random_runs(examples: int) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The property's random inputs, ``examples`` runs of them."""

    def decorate(test: Callable[..., None]) -> Callable[..., None]:
        return settings(
            max_examples=examples,
            deadline=None,
            suppress_health_check=[
                HealthCheck.too_slow,
                HealthCheck.function_scoped_fixture,
                HealthCheck.data_too_large,
            ],
        )(
            given(
                turns=conversations(),
                options=SETTINGS,
                ops=OPS,
                which=st.sampled_from(["counting", "extractive", "too-long", "flaky", "crashing"]),
                seed=st.integers(0, 1_000),
                budget=st.integers(0, 3_000),
            )(test)
        )

    return decorate


@random_runs(60)
def test_invariants_hold_under_random_compaction(
    tmp_path: Path,
    turns: list[list[NewMessage]],
    options: dict[str, int],
    ops: list[str],
    which: str,
    seed: int,
    budget: int,
) -> None:
    random_compaction(open_store, tmp_path, turns, options, ops, which, seed, budget)


# Fewer runs: each costs more on PostgreSQL (a round trip per statement),
# and the SQLite runs already explore the engine's side of the property.
@random_runs(40)
def test_invariants_hold_under_random_compaction_on_postgresql(
    postgres_opener: StoreOpener,
    tmp_path: Path,
    turns: list[list[NewMessage]],
    options: dict[str, int],
    ops: list[str],
    which: str,
    seed: int,
    budget: int,
) -> None:
    random_compaction(postgres_opener, tmp_path, turns, options, ops, which, seed, budget)


def random_compaction(
    open_backend: StoreOpener,
    tmp_path: Path,
    turns: list[list[NewMessage]],
    options: dict[str, int],
    ops: list[str],
    which: str,
    seed: int,
    budget: int,
) -> None:
    config = make_config(tmp_path / uuid.uuid4().hex, **options)
    store = open_backend(config)
    try:
        cid = new_conversation(store, session=uuid.uuid4().hex)
        summarizer: Any = {
            "counting": CountingSummarizer,
            "extractive": ExtractiveSummarizer,
            "too-long": TooLong,
        }.get(which, lambda: None)()
        if which == "flaky":
            summarizer = Flaky(seed)
        elif which == "crashing":
            summarizer = Crashing(store, cid, seed)
        compactor = Compactor(store, config, summarizer)
        pending = list(turns)
        ingested: list[NewMessage] = []
        tail = options["fresh_tail_count"]
        for op in [*ops, "ingest-all", "sweep"]:
            if op.startswith("ingest"):
                batch = pending if op == "ingest-all" else pending[:1]
                for messages in batch:
                    ingest(store, cid, messages)
                    ingested += messages
                pending = [] if op == "ingest-all" else pending[1:]
            else:
                before = snapshot(store, cid)
                try:
                    if op == "incremental":
                        result = compactor.incremental(cid)
                    elif op == "leaf":
                        result = compactor.leaf_pass(cid)
                    elif op == "condense":
                        result = compactor.condense_pass(cid)
                    elif op == "sweep":
                        result = compactor.sweep(cid)
                    else:
                        target = store.context.token_total(cid) // 2
                        result = compactor.compact_until_under(cid, target)
                        if result.reached_target is False:
                            assert result.noop and "protected tail" in result.noop
                except Crash:
                    assert isinstance(summarizer, Crashing)
                    assert snapshot(store, cid) == summarizer.snapshot
                else:
                    if result.error is not None:
                        assert isinstance(summarizer, Crashing)
                        assert snapshot(store, cid) == summarizer.snapshot
                    check_progress(result, store, cid, before)
            check_invariants(store, cid, ingested, tail)
            check_assembly(store, cid, budget, tail)
    finally:
        store.close()


# ------------------------------------------------------------------ a real crash


CRASH_WORKER = textwrap.dedent(
    """
    import sys, time
    from lossless.config import load_config
    from lossless.engine.compaction import Compactor
    from lossless.store.sqlite.store import SQLiteStore
    from lossless.summarize import SummaryResponse

    class Slow:
        name = "slow"
        def summarize(self, request):
            time.sleep(0.05)
            return SummaryResponse(" ".join(request.text.split()[:6]), 1, 1)

    config = load_config(sys.argv[1], env={}, overrides={"fresh_tail_count": 2,
        "leaf_chunk_tokens": 60, "leaf_min_fanout": 2, "condensed_min_fanout": 2})
    store = SQLiteStore(config.db_path)
    print("ready", flush=True)
    Compactor(store, config, Slow(), lease_ttl_s=1.0).sweep(int(sys.argv[2]))
    """
)


def test_a_killed_worker_leaves_a_consistent_store(tmp_path: Path) -> None:
    config = make_config(
        tmp_path / "home",
        fresh_tail_count=2,
        leaf_chunk_tokens=60,
        leaf_min_fanout=2,
        condensed_min_fanout=2,
    )
    store = open_store(config)
    cid = new_conversation(store)
    ingested = [
        NewMessage(
            role="user" if i % 2 == 0 else "assistant",
            content=f"message {i} " * 30,
            created_at=ts(i),
        )
        for i in range(120)
    ]
    ingest(store, cid, ingested)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASH_WORKER, str(config.home), str(cid)],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 30
        while len(store.summaries.list(cid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)  # mid-run, maybe mid-transaction
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    done = len(store.summaries.list(cid))
    assert done >= 3
    check_invariants(store, cid, ingested, 2)
    # The dead worker's lease expires; the next worker finishes the job.
    result = Compactor(store, config, CountingSummarizer(), wait_s=5).sweep(cid)
    assert result.acted and len(store.summaries.list(cid)) > done
    check_invariants(store, cid, ingested, 2)
    store.close()
