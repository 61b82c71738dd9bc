"""Compaction on real SQLite files: passes, modes, protection, failures, leases, processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.engine.compaction_helpers import (
    Clock,
    CountingSummarizer,
    agent_turn,
    check_anthropic,
    check_openai,
    expand_items,
    ingest,
    make_config,
    new_conversation,
    open_store,
    text_message,
    tool_result_message,
    tool_use_message,
)

from lossless.config import Config
from lossless.engine import compaction
from lossless.engine.assembly import assemble
from lossless.engine.compaction import CompactionError, Compactor, load_facts, message_facts
from lossless.errors import LeaseLostError
from lossless.models import Message, NewMessage
from lossless.store.contract import Store
from lossless.summarize import (
    ExtractiveSummarizer,
    SummarizerAuthError,
    SummarizerUnavailable,
    SummaryRequest,
    SummaryResponse,
)

REPO = Path(__file__).resolve().parents[2]

SMALL = {
    "fresh_tail_count": 4,
    "leaf_chunk_tokens": 400,
    "leaf_target_tokens": 60,
    "condensed_target_tokens": 80,
    "leaf_min_fanout": 3,
    "condensed_min_fanout": 2,
}


def setup(
    tmp_path: Path, turns: int = 10, tools: int = 2, **settings: Any
) -> tuple[Config, Store, int]:
    config = make_config(tmp_path / "home", **{**SMALL, **settings})
    store = open_store(config)
    cid = new_conversation(store)
    clock = Clock()
    for turn in range(turns):
        ingest(store, cid, agent_turn(clock, turn, tools))
    return config, store, cid


def state(store: Store, cid: int) -> tuple[Any, ...]:
    """Everything compaction may write, for before/after comparisons."""
    summaries = store.summaries.list(cid)
    links = [
        (s.id, store.summaries.source_message_ids(s.id), store.summaries.source_summary_ids(s.id))
        for s in summaries
    ]
    return (store.context.list(cid), summaries, links)


def pairs_together(store: Store, cid: int) -> None:
    """A tool_use and its tool_result are both raw or both under the same leaf."""
    messages = store.messages.list(cid)
    parts = store.messages.parts([m.id for m in messages])
    cover = store.summaries.covering([m.id for m in messages])
    use_at: dict[str, int] = {}
    for m in messages:
        for p in parts[m.id]:
            if p.kind == "tool_use" and p.tool_call_id:
                use_at[p.tool_call_id] = m.id
            elif p.kind == "tool_result" and p.tool_call_id in use_at:
                assert cover.get(use_at[p.tool_call_id]) == cover.get(m.id), p.tool_call_id


# ------------------------------------------------------------------ leaf passes


def test_leaf_pass_takes_the_oldest_chunk_with_timestamps_and_continuity(tmp_path: Path) -> None:
    config, store, cid = setup(tmp_path)
    summarizer = CountingSummarizer()
    compactor = Compactor(store, config, summarizer)
    before = store.context.token_total(cid)
    first = compactor.leaf_pass(cid)
    assert first.acted and len(first.passes) == 1
    pass1 = first.passes[0]
    request = summarizer.calls[0]
    assert request.depth == 0 and request.previous_context is None
    assert request.text.startswith("[2026-02-12T10:00:07.000Z] user (msg 1):\nTurn 0:")
    assert request.target_tokens == 60

    summary = store.summaries.get(pass1.summary_id or "")
    assert summary is not None and summary.kind == "leaf" and summary.depth == 0
    covered = store.summaries.source_message_ids(summary.id)
    messages = store.messages.list(cid)
    assert covered == [m.id for m in messages[: len(covered)]]
    assert summary.source_token_count == sum(m.token_count for m in messages[: len(covered)])
    assert summary.source_token_count <= 400
    assert summary.earliest_at == messages[0].created_at
    assert summary.latest_at == messages[len(covered) - 1].created_at
    assert summary.metadata is not None and summary.metadata["level"] == "normal"
    items = store.context.list(cid)
    assert items[0].summary_id == summary.id and items[1].message_id == messages[len(covered)].id
    after = store.context.token_total(cid)
    assert after == before - summary.source_token_count + summary.token_count
    assert (pass1.tokens_before, pass1.tokens_after) == (before, after)

    compactor.leaf_pass(cid)
    assert summarizer.calls[1].previous_context == summary.content
    pairs_together(store, cid)


def test_chunk_grows_past_the_cap_only_to_keep_a_tool_pair(tmp_path: Path) -> None:
    config = make_config(tmp_path / "home", **{**SMALL, "leaf_chunk_tokens": 50})
    store = open_store(config)
    cid = new_conversation(store)
    clock = Clock()
    ingest(
        store,
        cid,
        [
            tool_use_message("", [("c1", "Read", {"path": "big.log"})], clock.tick()),
            tool_result_message([("c1", "log line " * 100)], clock.tick()),
            *agent_turn(clock, 1, 1),
        ],
    )
    result = Compactor(store, config, CountingSummarizer()).leaf_pass(cid)
    summary_id = result.summaries_created[0]
    ids = [m.id for m in store.messages.list(cid)]
    assert store.summaries.source_message_ids(summary_id) == ids[:2]
    assert result.passes[0].source_tokens > 50


def test_facts_are_read_a_batch_of_messages_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading the facts of a long conversation never holds all of its text at once,
    and the batches together give every message's facts, as read one by one."""
    _, store, cid = setup(tmp_path, turns=6, tools=2)
    messages = store.messages.list(cid)
    parts = store.messages.parts([m.id for m in messages])
    expected = {m.id: message_facts(m, parts.get(m.id, [])) for m in messages}
    assert any(f.tool_uses for f in expected.values())
    assert any(f.tool_results for f in expected.values())
    read: list[int] = []
    repository = type(store.messages)  # the store hands out a repository per access
    get_many = repository.get_many

    def counting(self: Any, ids: Sequence[int]) -> list[Message]:
        read.append(len(ids))
        return get_many(self, ids)

    monkeypatch.setattr(compaction, "_FACTS_BATCH", 4)
    monkeypatch.setattr(repository, "get_many", counting)
    facts = load_facts(store, [m.id for m in messages])
    assert facts == expected
    assert max(read) == 4 and sum(read) == len(messages) > 8


def test_summary_must_be_smaller_than_what_it_replaces(tmp_path: Path) -> None:
    class Verbose:
        name = "verbose"

        def summarize(self, request: SummaryRequest) -> SummaryResponse:
            return SummaryResponse(request.text * 3, 1, 1)

    config, store, cid = setup(tmp_path)
    result = Compactor(store, config, Verbose()).sweep(cid)
    assert result.acted
    for outcome in result.passes:
        assert outcome.level == "fallback"
        assert outcome.summary_tokens < outcome.source_tokens
        assert outcome.tokens_after < outcome.tokens_before
    assert "[Truncated for context management]" in (
        store.summaries.get(result.summaries_created[0]).content  # type: ignore[union-attr]
    )


def test_tiny_context_counts_make_a_truthful_noop(tmp_path: Path) -> None:
    config = make_config(tmp_path / "home", **{**SMALL, "fresh_tail_count": 1})
    store = open_store(config)
    cid = new_conversation(store)
    # Counted as 0 tokens by the embedder: no summary can be smaller.
    ingest(
        store,
        cid,
        [
            NewMessage(role="user", content="a question", token_count=0),
            NewMessage(role="user", content="another", token_count=0),
        ],
    )
    result = Compactor(store, config, CountingSummarizer()).leaf_pass(cid)
    assert not result.acted and result.noop is not None and "too small" in result.noop
    assert store.summaries.list(cid) == []


# ------------------------------------------------------------------ condensation and modes


def test_sweep_builds_a_dag_with_lineage_and_transitive_descendants(tmp_path: Path) -> None:
    config, store, cid = setup(tmp_path, turns=24)
    summarizer = CountingSummarizer()
    result = Compactor(store, config, summarizer).sweep(cid)
    condensed = [s for s in store.summaries.list(cid) if s.kind == "condensed"]
    assert condensed and max(s.depth for s in condensed) >= 2
    by_id = {s.id: s for s in store.summaries.list(cid)}
    for s in condensed:
        parents = [by_id[p] for p in store.summaries.source_summary_ids(s.id)]
        fanout = 3 if s.depth == 1 else 2
        assert len(parents) >= fanout
        assert {p.depth for p in parents} == {s.depth - 1}
        assert s.descendant_count == sum(1 + p.descendant_count for p in parents)
        assert s.source_token_count == sum(p.source_token_count for p in parents)
        assert s.earliest_at == min(p.earliest_at for p in parents if p.earliest_at)
        assert s.latest_at == max(p.latest_at for p in parents if p.latest_at)
        assert all(store.summaries.condensed_into(p.id) == s.id for p in parents)
    # Each summary was asked for at its own depth (depth-aware prompts).
    depths = sorted(r.depth for r in summarizer.calls)
    assert depths == sorted(by_id[sid].depth for sid in result.summaries_created)
    assert all(p.tokens_after < p.tokens_before for p in result.passes)
    assert expand_items(store, cid) == [m.id for m in store.messages.list(cid)]

    again = Compactor(store, config, summarizer).sweep(cid)
    assert not again.acted and again.noop is not None
    assert "no raw messages outside the protected tail" in again.noop
    assert again.tokens_before == again.tokens_after == result.tokens_after


def test_incremental_runs_only_above_the_leaf_threshold_and_to_max_depth(tmp_path: Path) -> None:
    config, store, cid = setup(tmp_path, turns=1, leaf_chunk_tokens=2_000)
    compactor = Compactor(store, config, CountingSummarizer())
    quiet = compactor.incremental(cid)
    assert not quiet.acted and quiet.noop is not None and "leaf pass above 2,000" in quiet.noop

    config, store, cid = setup(tmp_path / "b", turns=30, incremental_max_depth=0)
    compactor = Compactor(store, config, CountingSummarizer())
    for _ in range(12):
        compactor.incremental(cid)
    assert {s.depth for s in store.summaries.list(cid)} == {0}

    config, store, cid = setup(tmp_path / "c", turns=30, incremental_max_depth=1)
    compactor = Compactor(store, config, CountingSummarizer())
    results = [compactor.incremental(cid) for _ in range(12)]
    assert {s.depth for s in store.summaries.list(cid)} == {0, 1}
    assert sum(len(r.passes) for r in results) == len(store.summaries.list(cid))

    config, store, cid = setup(tmp_path / "d", turns=30, incremental_max_depth=-1)
    compactor = Compactor(store, config, CountingSummarizer())
    for _ in range(12):
        compactor.incremental(cid)
    assert max(s.depth for s in store.summaries.list(cid)) >= 2
    assert expand_items(store, cid) == [m.id for m in store.messages.list(cid)]


def test_compact_until_under_stops_at_the_target(tmp_path: Path) -> None:
    config, store, cid = setup(tmp_path, turns=24)
    full = store.context.token_total(cid)
    target = full * 2 // 3
    result = Compactor(store, config, CountingSummarizer()).compact_until_under(cid, target)
    assert result.reached_target and result.tokens_after <= target
    assert store.context.token_total(cid) == result.tokens_after
    # It stopped as soon as it fitted: one pass fewer would not have.
    assert result.passes[-1].tokens_before > target
    assert store.messages.list(cid)[0].id not in [i.message_id for i in store.context.list(cid)]

    noop = Compactor(store, config, CountingSummarizer()).compact_until_under(cid, full)
    assert not noop.acted and noop.noop is not None and "already at" in noop.noop


def test_compact_until_under_relaxes_fanout_then_reports_the_tail(tmp_path: Path) -> None:
    # 13 turns: the leaf summaries condense into same-depth runs that end in a pair.
    config, store, cid = setup(tmp_path, turns=13, leaf_min_fanout=50, condensed_min_fanout=50)
    result = Compactor(store, config, CountingSummarizer()).compact_until_under(cid, 1)
    assert not result.reached_target
    assert result.noop is not None and "protected tail" in result.noop
    # Fanout 50 was never reachable, so the last resort merged pairs.
    assert any(p.kind == "condensed" and p.source_items == 2 for p in result.passes)
    items = store.context.list(cid)
    assert sum(1 for i in items if i.summary_id) == 1
    assert expand_items(store, cid) == [m.id for m in store.messages.list(cid)]


# ------------------------------------------------------------------ protection


def test_fresh_tail_is_a_count_and_the_long_turn_compacts(tmp_path: Path) -> None:
    config, store, cid = setup(tmp_path, turns=8, tools=3)
    Compactor(store, config, CountingSummarizer()).compact_until_under(cid, 0)
    messages = store.messages.list(cid)
    raw = [i.message_id for i in store.context.list(cid) if i.message_id is not None]
    # The newest turn (prompt, 3 exchanges, answer) is 8 messages; only the
    # last 4 stay raw, plus the call whose result is the oldest of them.
    assert raw == [m.id for m in messages[-5:]]
    assert messages[-5].role == "assistant" and messages[-8].role == "user"
    pairs_together(store, cid)
    # The prompt that opened the turn was compacted, yet the model still sees it.
    got = assemble(store, cid, budget=100_000, fresh_tail_count=4)
    assert got.breakdown.prompt_message_id == messages[-8].id
    assert got.breakdown.prompt_shown == "repeated"
    assert f"msg:{messages[-8].id}" not in got.included
    shown = json.dumps(got.messages)
    assert json.dumps(messages[-8].content)[1:-1] in shown
    check_anthropic(got.request())


def test_a_pending_tool_call_is_never_compacted(tmp_path: Path) -> None:
    config = make_config(tmp_path / "home", **{**SMALL, "fresh_tail_count": 0})
    store = open_store(config)
    cid = new_conversation(store)
    clock = Clock()
    ingest(store, cid, agent_turn(clock, 0, 2))
    ingest(store, cid, [text_message("user", "now deploy", clock.tick())])
    ingest(
        store, cid, [tool_use_message("deploying", [("late", "Bash", {"c": "x"})], clock.tick())]
    )
    compactor = Compactor(store, config, CountingSummarizer())
    compactor.sweep(cid)
    ids = [m.id for m in store.messages.list(cid)]
    raw = [i.message_id for i in store.context.list(cid) if i.message_id is not None]
    # Only the waiting call: its prompt compacts (assembly repeats it).
    assert raw == ids[-1:]
    ingest(store, cid, [tool_result_message([("late", "deployed")], clock.tick())])
    ingest(store, cid, [text_message("user", "thanks, next task " * 20, clock.tick())])
    compactor.sweep(cid)
    raw = [i.message_id for i in store.context.list(cid) if i.message_id is not None]
    assert raw == []
    pairs_together(store, cid)


def test_an_abandoned_call_does_not_pin_the_turn(tmp_path: Path) -> None:
    """A call the model moved on from (an interrupted tool) never gets its
    result; protecting it would keep everything after it raw forever."""
    config = make_config(tmp_path / "home", **{**SMALL, "fresh_tail_count": 2})
    store = open_store(config)
    cid = new_conversation(store)
    clock = Clock()
    ingest(store, cid, [text_message("user", "fix everything " * 10, clock.tick())])
    ingest(store, cid, [tool_use_message("trying", [("lost", "Bash", {"c": "x"})], clock.tick())])
    for turn in range(6):
        ingest(store, cid, agent_turn(clock, turn, 2)[1:])
    Compactor(store, config, CountingSummarizer()).sweep(cid)
    ids = [m.id for m in store.messages.list(cid)]
    raw = [i.message_id for i in store.context.list(cid) if i.message_id is not None]
    # The last 2 messages and the call of the older one's result.
    assert raw == ids[-3:]
    assert expand_items(store, cid) == ids


# ------------------------------------------------------------------ failures


class Failing:
    name = "failing"

    def __init__(self, exc: Exception, after: int = 0) -> None:
        self.exc = exc
        self.after = after
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.calls += 1
        if self.calls > self.after:
            raise self.exc
        return SummaryResponse(f"summary {self.calls}", 1, 1)


def test_auth_error_stops_every_mode_and_writes_nothing(tmp_path: Path) -> None:
    config, store, cid = setup(tmp_path, turns=12)
    before = state(store, cid)
    bad_key = SummarizerAuthError("anthropic rejected the credentials (HTTP 401)")
    for run in ("sweep", "incremental", "after_turn", "leaf_pass"):
        compactor = Compactor(store, config, Failing(bad_key))
        with pytest.raises(CompactionError, match="HTTP 401") as caught:
            getattr(compactor, run)(cid)
        assert caught.value.__cause__ is bad_key
        assert state(store, cid) == before
    with pytest.raises(CompactionError):
        Compactor(store, config, Failing(bad_key)).compact_until_under(cid, 10)
    assert state(store, cid) == before


def test_incremental_is_best_effort(tmp_path: Path) -> None:
    config, store, cid = setup(tmp_path, turns=12)
    before = state(store, cid)
    result = Compactor(store, config, Failing(RuntimeError("provider bug"))).incremental(cid)
    assert result.error is not None and "provider bug" in result.error
    assert not result.acted and state(store, cid) == before
    # An outage is not written over with truncations after a turn...
    down = SummarizerUnavailable("provider unreachable")
    result = Compactor(store, config, Failing(down)).incremental(cid)
    assert result.error is not None and "unreachable" in result.error
    assert state(store, cid) == before
    # ...but an explicit sweep still makes progress with the fallback.
    swept = Compactor(store, config, Failing(down)).sweep(cid)
    assert swept.acted and {p.level for p in swept.passes} == {"fallback"}


def test_a_crash_mid_sweep_keeps_every_finished_pass_and_nothing_else(tmp_path: Path) -> None:
    config, store, cid = setup(tmp_path, turns=12)
    snapshots: list[Any] = []

    class CrashOnThird:
        name = "crash"
        calls = 0

        def summarize(self, request: SummaryRequest) -> SummaryResponse:
            self.calls += 1
            if self.calls == 3:
                snapshots.append(state(store, cid))
                raise KeyboardInterrupt  # not even an Exception
            return SummaryResponse(f"summary {self.calls}", 1, 1)

    with pytest.raises(KeyboardInterrupt):
        Compactor(store, config, CrashOnThird()).sweep(cid)
    assert state(store, cid) == snapshots[0]
    assert len(store.summaries.list(cid)) == 2
    assert expand_items(store, cid) == [m.id for m in store.messages.list(cid)]
    # The lease was released on the way out: the next worker proceeds at once.
    assert Compactor(store, config, CountingSummarizer()).sweep(cid).acted


def test_a_failed_write_rolls_back_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lossless.store.sqlite import dag as sqlite_dag

    config, store, cid = setup(tmp_path, turns=6)
    before = state(store, cid)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(sqlite_dag.Context, "replace_range", broken)
    with pytest.raises(OSError, match="disk full"):
        Compactor(store, config, CountingSummarizer()).leaf_pass(cid)
    assert state(store, cid) == before and store.summaries.list(cid) == []


# ------------------------------------------------------------------ leases


def test_a_held_lease_makes_other_workers_report_busy(tmp_path: Path) -> None:
    config, store, cid = setup(tmp_path, turns=8)
    held = store.leases.acquire(cid, "someone-else", 60)
    assert held is not None
    result = Compactor(store, config, CountingSummarizer(), wait_s=0.2).sweep(cid)
    assert not result.acted and result.noop is not None and result.noop.startswith("busy")
    store.leases.release(held)
    assert Compactor(store, config, CountingSummarizer()).sweep(cid).acted


def test_a_stale_worker_is_fenced_off(tmp_path: Path) -> None:
    config, store, cid = setup(tmp_path, turns=8)
    other_store = open_store(config)
    rival = Compactor(other_store, config, CountingSummarizer(), owner="rival")

    class SlowThenRival:
        name = "slow"

        def summarize(self, request: SummaryRequest) -> SummaryResponse:
            time.sleep(0.4)  # longer than our lease: it expires
            rival.leaf_pass(cid)  # another worker takes over and compacts
            return SummaryResponse("stale summary", 1, 1)

    stale = Compactor(store, config, SlowThenRival(), owner="stale", lease_ttl_s=0.2)
    with pytest.raises(CompactionError, match="no longer held") as caught:
        stale.leaf_pass(cid)
    assert isinstance(caught.value.__cause__, LeaseLostError)
    contents = [s.content for s in store.summaries.list(cid)]
    assert len(contents) == 1 and "stale summary" not in contents
    assert expand_items(store, cid) == [m.id for m in store.messages.list(cid)]


def test_the_fence_is_checked_inside_the_write_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, store, cid = setup(tmp_path, turns=8)
    # Lose the lease between the last renewal and the write.
    monkeypatch.setattr(Compactor, "_renew", lambda self, lease: lease)

    class Usurped:
        name = "usurped"

        def summarize(self, request: SummaryRequest) -> SummaryResponse:
            time.sleep(0.3)
            assert store.leases.acquire(cid, "usurper", 60) is not None
            return SummaryResponse("late", 1, 1)

    before = state(store, cid)
    with pytest.raises(CompactionError, match="nothing written"):
        Compactor(store, config, Usurped(), owner="me", lease_ttl_s=0.1).leaf_pass(cid)
    assert state(store, cid) == before


WORKER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from lossless.config import load_config
    from lossless.engine.compaction import Compactor
    from lossless.store.sqlite.store import SQLiteStore
    from lossless.summarize import SummaryResponse

    home, cid, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    settings = json.loads(sys.argv[4])

    class Slow:
        name = "slow"
        def summarize(self, request):
            time.sleep(delay)
            return SummaryResponse(" ".join(request.text.split()[:10]), 1, 1)

    config = load_config(home, env={}, overrides=settings)
    store = SQLiteStore(config.db_path)
    started = time.time()
    result = Compactor(store, config, Slow(), wait_s=60).sweep(cid)
    print(json.dumps({"start": started, "end": time.time(), "created": result.summaries_created,
                      "noop": result.noop}))
    """
)


def run_workers(config: Config, jobs: list[tuple[int, float]]) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    settings = json.dumps({k: config.get(k) for k in SMALL})
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(config.home), str(cid), str(delay), settings],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for cid, delay in jobs
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    return outputs


def test_processes_compacting_one_conversation_never_duplicate(tmp_path: Path) -> None:
    config, store, cid = setup(tmp_path, turns=16)
    outputs = run_workers(config, [(cid, 0.02)] * 3)
    created = [sid for o in outputs for sid in o["created"]]
    summaries = store.summaries.list(cid)
    assert len(created) == len(set(created)) == len(summaries)
    # A sweep holds the lease for its whole run: one worker did everything,
    # the others waited for it and then found nothing left to do.
    assert sum(1 for o in outputs if o["created"]) == 1
    messages = [m.id for m in store.messages.list(cid)]
    assert expand_items(store, cid) == messages
    # Every message under exactly one leaf, every summary under at most one parent.
    leaf_links = [m for s in summaries for m in store.summaries.source_message_ids(s.id)]
    assert len(leaf_links) == len(set(leaf_links))
    parent_links = [p for s in summaries for p in store.summaries.source_summary_ids(s.id)]
    assert len(parent_links) == len(set(parent_links))


def test_processes_on_different_conversations_run_in_parallel(tmp_path: Path) -> None:
    config, store, first = setup(tmp_path, turns=8)
    second = new_conversation(store, "s2")
    clock = Clock()
    for turn in range(8):
        ingest(store, second, agent_turn(clock, turn, 2))
    outputs = run_workers(config, [(first, 0.25), (second, 0.25)])
    a, b = outputs
    assert a["created"] and b["created"]
    # Each run takes several slow summarizer calls; the runs overlap in time.
    assert max(a["start"], b["start"]) < min(a["end"], b["end"])
    for cid in (first, second):
        assert expand_items(store, cid) == [m.id for m in store.messages.list(cid)]


# ------------------------------------------------------------------ real data, engine, example


def test_every_real_transcript_compacts_with_invariants(shared_data: Path, tmp_path: Path) -> None:
    from lossless import Engine

    with Engine.open(tmp_path / "real", fresh_tail_count=16, leaf_chunk_tokens=8_000) as engine:
        for path in sorted(shared_data.rglob("*.jsonl")):
            engine.import_file(path, final=True)
        conversations = engine.store.conversations.list()
        assert len(conversations) >= 9
        assert isinstance(engine.summarizer, ExtractiveSummarizer)
        for conv in conversations:
            store = engine.store
            before = [(m.id, m.content) for m in store.messages.list(conv.id)]
            result = engine.compact(conv.id)
            assert all(p.tokens_after < p.tokens_before for p in result.passes)
            assert [(m.id, m.content) for m in store.messages.list(conv.id)] == before
            assert expand_items(store, conv.id) == [m for m, _ in before]
            pairs_together(store, conv.id)
            assembled = engine.assemble(conv.id, 50_000)
            check_anthropic(assembled.request())
            check_openai(engine.assemble(conv.id, 50_000, format="openai").messages)
        big = max(conversations, key=lambda c: engine.store.messages.count(c.id))
        assert engine.store.summaries.list(big.id), "the largest session was compacted"


def test_engine_api_after_turn_assemble_and_compact(tmp_path: Path) -> None:
    from lossless import Engine

    with Engine.open(tmp_path / "api", **SMALL) as engine:
        chat = engine.conversation("agent-1")
        acted = False
        for turn in range(20):
            result = chat.after_turn(
                [
                    {"role": "user", "content": f"question {turn} about src/m{turn}.py " * 5},
                    {"role": "assistant", "content": f"answer {turn}: fixed it " * 8},
                ]
            )
            acted = acted or result.acted
            assert result.error is None
        assert acted
        context = chat.assemble(2_000, format="openai")
        check_openai(context.messages)
        assert context.breakdown.total <= 2_000
        squeezed = chat.compact(until=300)
        assert squeezed.target == 300
        assert engine.dag(chat).summary_count == len(engine.store.summaries.list(chat.id))
        assert expand_items(engine.store, chat.id) == [
            m.id for m in engine.store.messages.list(chat.id)
        ]


def test_after_turn_compacts_past_the_context_threshold(tmp_path: Path) -> None:
    from lossless import Engine

    with Engine.open(tmp_path / "thr", **{**SMALL, "leaf_chunk_tokens": 100_000}) as engine:
        chat = engine.conversation("t")
        for turn in range(12):  # 24 messages of 75 tokens: 1,800 tokens
            chat.ingest([{"role": "user", "content": f"q{turn} " * 100}])
            chat.ingest([{"role": "assistant", "content": f"a{turn} " * 100}])
        result = chat.after_turn(budget=2_000)  # threshold 0.75 -> 1,500 tokens
        assert result.acted and result.target == 1_500
        assert engine.store.context.token_total(chat.id) <= 1_500


def test_example_agent_loop_runs(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "LCM_HOME": str(tmp_path / "ex")}
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / "agent_loop.py"), "--turns", "30"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "summaries" in proc.stdout


def test_assembled_context_after_compaction_is_valid(tmp_path: Path) -> None:
    config, store, cid = setup(tmp_path, turns=14)
    Compactor(store, config, ExtractiveSummarizer()).sweep(cid)
    got = assemble(store, cid, budget=3_000, fresh_tail_count=4)
    check_anthropic(got.request())
    assert got.breakdown.summary_count >= 1
