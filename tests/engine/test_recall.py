"""Recall ranking with usage feedback over simulated sessions, plus search across layers."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lossless.engine.memory import remember
from lossless.engine.recall import (
    CONTEXT_HEADER,
    DEFAULT_WEIGHTS,
    MemorySignals,
    feedback_from_response,
    mark_used,
    recall_for_prompt,
    render_additional_context,
    score_memory,
)
from lossless.engine.search import search_all
from lossless.errors import InputError
from lossless.models import NewMessage, NewSummary
from lossless.store.contract import NewMemory
from lossless.store.sqlite import SQLiteStore
from lossless.timeutil import format_ts

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
P = "/work/app"


def at(hours: float) -> str:
    return format_ts(START + timedelta(hours=hours))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "lcm.db")
    yield s
    s.close()


def add(
    store: SQLiteStore, text: str, *, created: str | None = None, confidence: float = 1.0
) -> str:
    return store.memory.create(
        NewMemory(project=P, text=text, created_at=created or at(0), confidence=confidence)
    ).memory.id


def signals(**kw: float) -> MemorySignals:
    base: dict[str, float] = {
        "relevance": 0.6,
        "confidence": 1.0,
        "surfaced_count": 0,
        "used_count": 0,
        "idle_days": 1.0,
    }
    base.update(kw)
    return MemorySignals(
        relevance=base["relevance"],
        confidence=base["confidence"],
        surfaced_count=int(base["surfaced_count"]),
        used_count=int(base["used_count"]),
        idle_days=base["idle_days"],
        seconds_since_surfaced=kw.get("seconds_since_surfaced"),
    )


# -- the pure ranking -------------------------------------------------------------


def test_pure_score_effects() -> None:
    fresh = score_memory(signals())
    ignored = score_memory(signals(surfaced_count=10))
    used = score_memory(signals(surfaced_count=3, used_count=3))
    assert fresh is not None and ignored is not None and used is not None
    assert used > fresh > ignored
    assert score_memory(signals(relevance=0.1)) is None
    assert score_memory(signals(seconds_since_surfaced=60)) is None
    assert (
        score_memory(signals(seconds_since_surfaced=DEFAULT_WEIGHTS.cooldown_seconds)) is not None
    )
    assert score_memory(signals(idle_days=90)) is None  # stale, ordinary match
    assert score_memory(signals(idle_days=90, relevance=0.9)) is not None  # strongly matched
    low = score_memory(signals(confidence=0.5))
    assert low is not None and low < fresh


# -- simulated sessions through the store ----------------------------------------------


def test_used_memory_climbs_over_sessions(store: SQLiteStore) -> None:
    better_match = add(store, "Database migrations take advisory locks while running")
    useful = add(store, "Database migrations are numbered files with checksums")
    prompt = "database migrations advisory locks"
    orders: list[list[str]] = []
    for session in range(5):
        got = recall_for_prompt(store, prompt, P, 2000, limit=2, now=at(session * 3))
        orders.append([r.memory.id for r in got])
        mark_used(store, useful, now=at(session * 3))  # the agent relies on this one
    assert orders[0] == [better_match, useful]
    assert orders[-1] == [useful, better_match]
    final = store.memory.get(useful)
    assert final is not None and final.used_count == 5 and final.surfaced_count == 5


def test_surfaced_often_never_used_sinks_below_fresh(store: SQLiteStore) -> None:
    old = add(store, "Run pytest with -q in the ci pipeline")
    for turn in range(10):
        got = recall_for_prompt(store, "ci pipeline pytest", P, 2000, now=at(turn * 1.0))
        assert [r.memory.id for r in got] == [old]  # surfaced, never used
    fresh = add(store, "Run pytest with -x in the ci pipeline", created=at(10))
    got = recall_for_prompt(store, "ci pipeline pytest", P, 2000, now=at(11))
    assert got[0].memory.id == fresh
    ranks = {r.memory.id: r.score for r in got}
    assert ranks[fresh] > ranks[old]


def test_cooldown_is_respected(store: SQLiteStore) -> None:
    mid = add(store, "Release notes live in CHANGELOG.md")
    prompt = "update the release notes"
    assert [r.memory.id for r in recall_for_prompt(store, prompt, P, 2000, now=at(1))] == [mid]
    assert (
        recall_for_prompt(
            store, prompt, P, 2000, now=format_ts(START + timedelta(hours=1, minutes=5))
        )
        == []
    )
    assert [r.memory.id for r in recall_for_prompt(store, prompt, P, 2000, now=at(2))] == [mid]
    got = store.memory.get(mid)
    assert got is not None and got.surfaced_count == 2 and got.last_surfaced_at == at(2)


def test_byte_budget_is_respected(store: SQLiteStore) -> None:
    for i in range(6):
        add(store, f"Deployment rule {i}: " + "deploy through the staging cluster first " * 3)
    prompt = "deploy to the staging cluster"
    everything = recall_for_prompt(store, prompt, P, 100_000, limit=10, record=False, now=at(0))
    assert len(everything) == 6
    full = render_additional_context(everything)
    for budget in (0, 50, len(CONTEXT_HEADER) + 10, 400, 700, len(full.encode()) - 1):
        got = recall_for_prompt(store, prompt, P, budget, limit=10, record=False, now=at(0))
        assert len(render_additional_context(got).encode("utf-8")) <= budget
        assert len(got) < 6
    assert len(recall_for_prompt(store, prompt, P, 400, limit=10, record=False, now=at(0))) >= 1
    assert len(recall_for_prompt(store, prompt, P, 100_000, limit=2, record=False, now=at(0))) == 2
    untouched = store.memory.list(project=P)
    assert all(m.surfaced_count == 0 for m in untouched)  # record=False


def test_stale_unused_memory_needs_a_strong_match(store: SQLiteStore) -> None:
    mid = add(
        store, "Invoices are exported nightly to the finance bucket with retries", created=at(0)
    )
    later = at(24 * 60)  # sixty days on, never used
    weak = "what happens with retries"
    strong = "invoices exported nightly to finance bucket"
    assert [r.memory.id for r in recall_for_prompt(store, weak, P, 2000, now=at(1))] == [mid]
    assert recall_for_prompt(store, weak, P, 2000, now=later) == []
    assert [r.memory.id for r in recall_for_prompt(store, strong, P, 2000, now=later)] == [mid]
    # A use makes it current again.
    mark_used(store, mid, now=at(24 * 61))
    assert [r.memory.id for r in recall_for_prompt(store, weak, P, 2000, now=at(24 * 62))] == [mid]


def test_irrelevant_and_other_projects_do_not_surface(store: SQLiteStore) -> None:
    add(store, "Use uv, not pip")
    store.memory.create(NewMemory(project="/other", text="Kubernetes manifests live in deploy/"))
    assert recall_for_prompt(store, "how do I write the kubernetes manifests", P, 2000) == []
    assert recall_for_prompt(store, "the and of how", P, 2000) == []
    archived = add(store, "Kubernetes staging namespace is called stage")
    store.memory.archive(archived)
    assert recall_for_prompt(store, "kubernetes staging namespace", P, 2000) == []


def test_feedback_from_response_marks_only_cited_surfaced_ids(store: SQLiteStore) -> None:
    a = add(store, "alpha fact about caching")
    b = add(store, "beta fact about caching")
    marked = feedback_from_response(store, f"Per [{a}] and {b}, and mem_0123456789abcdef.", [a])
    assert marked == [a]
    got_a, got_b = store.memory.get(a), store.memory.get(b)
    assert got_a is not None and got_a.used_count == 1
    assert got_b is not None and got_b.used_count == 0


# -- search across layers ------------------------------------------------------------------


def test_search_all_ranks_history_and_memory_together(store: SQLiteStore) -> None:
    conv = store.conversations.get_or_create(project=P, session_id="s", client="api")
    store.messages.append(
        conv.id,
        [
            NewMessage(
                "user", "the flaky import test again, cursor anchor problem", ingest_key="1"
            ),
            NewMessage("assistant", "I looked at lunch menus", ingest_key="2"),
            NewMessage("assistant", "cursor mentioned once", ingest_key="3"),
        ],
    )
    store.summaries.create(
        NewSummary(
            conv.id, "leaf", 0, "Fixed the flaky import test (cursor anchor).", 9, None, None
        )
    )
    mid = remember(
        store, "Flaky import test root cause: cursor anchor read before fsync", project=P
    )
    hits = search_all(store, "flaky import test cursor anchor", project=P)
    kinds = [h.kind for h in hits]
    assert set(kinds) == {"memory", "message", "summary"}
    assert hits[0].kind == "memory" and hits[0].id == mid.memory.id
    weakest = next(h for h in hits if h.kind == "message" and "once" in h.text)
    full = next(h for h in hits if h.kind == "message" and "flaky" in h.text)
    assert full.score > weakest.score
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert search_all(store, "flaky", project=P, include_history=False)[0].kind == "memory"
    assert all(h.kind != "memory" for h in search_all(store, "flaky", include_memory=False))
    assert len(search_all(store, "flaky import", limit=2)) == 2
    assert search_all(store, "flaky", limit=0) == []
    with pytest.raises(InputError):
        search_all(store, "?!")


COVERAGE_TEXTS = [
    "Running the migrations failed: migration 0015 is missing; tests passed",
    "İstanbul STRASSE straße Größe ss s is sing singing sings dressed dress",
    "parsers parse parsed parsing: the parser's parses, aswell as ing ed eds",
    "静默 失败 飞书 — 東京 にいます 한국어 텍스트 rows row rowed",
    "",
]


@pytest.mark.parametrize("text", COVERAGE_TEXTS)
def test_coverage_in_text_is_coverage_of_its_stemmed_terms(text: str) -> None:
    from lossless.engine.recall import content_words, coverage, coverage_in, term_set

    # Queries made of the text's own words, their stems, suffixed forms and strangers.
    words = content_words(" ".join(COVERAGE_TEXTS))
    forms = [*words, *(w + suffix for w in words for suffix in ("s", "ed", "ing", "ss"))]
    forms += ["strasse", "istanbul", "i̇stanbul", "grösse", "the", "is", "s", "zzz"]
    for start in range(0, len(forms), 3):
        query = term_set(" ".join(forms[start : start + 5]))
        assert coverage_in(query, text) == coverage(query, term_set(text)), (query, text)
    assert coverage_in(frozenset(), text) == 0.0
