"""Hybrid search reads a message with the turns around it (``engine.semantic_context``).

Synthetic vectors on a real SQLite store: what is checked is the fusion, not
a model. Directions: axis 0 is "the question's topic", the others unrelated.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from lossless import Engine
from lossless.engine.search import DEFAULT_FUSION, FusionWeights, QueryVector, search_all
from lossless.engine.semantic_context import context_cosines
from lossless.models import NewMessage
from lossless.store.contract import MessageNeighbour, NewVector

M = "test-model"
DIM = 384


def unit(*weights: float) -> tuple[float, ...]:
    raw = [*weights, *([0.0] * (DIM - len(weights)))]
    norm = math.sqrt(sum(x * x for x in raw))
    return tuple(x / norm for x in raw)


def _store_with(home: Path, turns: list[tuple[str, tuple[float, ...]]]) -> tuple[Engine, list[int]]:
    engine = Engine.open(home)
    conv = engine.store.conversations.get_or_create(project="/p", session_id="s", client="t")
    with engine.store.transaction() as tx:
        ids = [
            m.id
            for m in tx.messages.append(
                conv.id, [NewMessage(role="user", content=text) for text, _ in turns]
            ).inserted
        ]
        tx.vectors.add(
            M,
            [
                NewVector("message", str(i), 0, conv.id, v)
                for i, (_, v) in zip(ids, turns, strict=True)
            ],
        )
    return engine, ids


def test_the_reply_after_a_matching_question_is_found(tmp_path: Path) -> None:
    turns = [
        ("unrelated chatter about the weather", unit(0, 0, 1)),
        ("what did you paint last weekend?", unit(1, 0.3)),
        ("a sunset over the lake", unit(0.5, 1)),  # the answer: half on topic alone
        ("unrelated talk about dinner", unit(0, 0, 0, 1)),
        ("more unrelated talk about trains", unit(0, 0, 0, 0, 1)),
    ]
    engine, ids = _store_with(tmp_path / "home", turns)
    with engine:
        # Elsewhere, a turn alone a little closer to the query than the answer is.
        other = engine.store.conversations.get_or_create(project="/p", session_id="o", client="t")
        with engine.store.transaction() as tx:
            (far,) = tx.messages.append(other.id, [NewMessage(role="user", content="x")]).inserted
            tx.vectors.add(
                M, [NewVector("message", str(far.id), 0, other.id, unit(1, 0, 0, 0, 0, 0, 1.2))]
            )
        query = QueryVector(M, unit(1, 0.2))
        loose = FusionWeights(semantic_floor=0.3)
        alone = search_all(
            engine.store,
            "zebra",
            semantic=query,
            weights=FusionWeights(semantic_floor=0.3, context=()),
        )
        hits = search_all(engine.store, "zebra", semantic=query, weights=loose)
        assert [h.id for h in alone[:3]] == [str(ids[1]), str(far.id), str(ids[2])]
        assert [h.id for h in hits[:3]] == [str(ids[1]), str(ids[2]), str(far.id)]
        assert all(h.matched == ("semantic",) for h in hits)
        # Turns far from the topic stay out, context or not.
        assert str(ids[4]) not in [h.id for h in hits]


def test_a_hit_by_vector_alone_needs_the_floor(tmp_path: Path) -> None:
    turns = [
        ("the zebra crossing is closed", unit(0, 1)),  # words match, vector does not
        ("a close paraphrase", unit(1, 0.1)),
        ("something vaguely near", unit(1, 1.5)),
    ]
    engine, ids = _store_with(tmp_path / "home", turns)
    with engine:
        query = QueryVector(M, unit(1))
        weights = FusionWeights(semantic_floor=0.8, context=())
        found = {
            h.id: h.matched
            for h in search_all(engine.store, "zebra", semantic=query, weights=weights)
        }
        assert found == {str(ids[0]): ("lexical",), str(ids[1]): ("semantic",)}


def test_a_turn_next_to_the_match_never_overtakes_it() -> None:
    # Vectors sharing a common direction, as multilingual-e5's do: the sum of
    # two turns leans to the query more than either.
    common = [0.8] + [0.0] * 10

    def near(i: int, amount: float) -> tuple[float, ...]:
        v = list(common)
        v[1 + i] = amount
        return unit(*v)

    q = near(0, 0.6)
    hood = [
        MessageNeighbour(0, 10, near(0, 0.6)),  # the match itself
        MessageNeighbour(1, 11, near(1, 0.6)),  # an unrelated turn after it
        MessageNeighbour(2, 12, near(2, 0.6)),
    ]
    scores = context_cosines(q, {10: hood}, DEFAULT_FUSION.context, (0, 1, 2))
    assert scores[10] == pytest.approx(1.0, abs=1e-4)
    assert scores[11] < scores[10]
    assert scores[12] < scores[10]
    # Unweighted offsets are not read; nothing is scored without its own vector.
    assert context_cosines(q, {10: hood[1:]}, DEFAULT_FUSION.context, (0,)) == {}


def test_int8_views_and_the_same_floats_give_the_same_scores() -> None:
    """SQLite's matrix hands out memoryviews of int8 rows, read in one pass;
    PostgreSQL tuples of floats: the same values score the same, to the bit."""
    import numpy as np

    rng = np.random.default_rng(3)
    rows = rng.integers(-127, 128, (6, DIM), dtype=np.int8)
    rows[4] = 0  # a neighbour without a usable vector
    flat = memoryview(rows.reshape(-1))
    views = [flat[i * DIM : (i + 1) * DIM] for i in range(6)]
    floats = [tuple(float(x) for x in row) for row in rows]
    q = tuple(float(x) for x in rng.standard_normal(DIM))

    def hoods(vectors: list[Any]) -> dict[int, list[MessageNeighbour]]:
        return {
            20: [MessageNeighbour(o, 18 + o + 2, vectors[o + 2]) for o in (-2, -1, 0, 1)],
            23: [MessageNeighbour(o, 23 + o, vectors[3 + o]) for o in (-1, 0, 1, 2)],
        }

    from_views = context_cosines(q, hoods(views), DEFAULT_FUSION.context, (0, -1, 1))
    from_floats = context_cosines(q, hoods(floats), DEFAULT_FUSION.context, (0, -1, 1))
    assert from_views == from_floats
    assert set(from_views) == {19, 20, 21, 22, 23}


def test_vector_hits_that_cannot_reach_the_page_are_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message found by its vector alone is read (text, time, place) only if
    its best possible score reaches the page: the page is the same either way."""
    turns = [(f"the zebra report number {i}", unit(1, 0.4 + 0.1 * i)) for i in range(3)]
    turns += [(f"vector only turn {i}", unit(1, 0.3 + 0.25 * i)) for i in range(6)]
    engine, _ = _store_with(tmp_path / "home", turns)
    with engine:
        query = QueryVector(M, unit(1))
        weights = FusionWeights(semantic_floor=0.3, context=())
        now = "2027-01-01T00:00:00.000Z"
        everything = search_all(
            engine.store, "zebra", semantic=query, weights=weights, limit=9, now=now
        )
        assert len(everything) == 9
        read: list[int] = []
        repository = type(engine.store.messages)  # a new one per access
        get_many = repository.get_many

        def recording(self: Any, message_ids: Any) -> Any:
            read.extend(message_ids)
            return get_many(self, message_ids)

        monkeypatch.setattr(repository, "get_many", recording)
        for limit in (3, 4, 5):
            read.clear()
            page = search_all(
                engine.store, "zebra", semantic=query, weights=weights, limit=limit, now=now
            )
            assert page == everything[:limit]
            vector_only = {int(h.id) for h in everything[limit:] if h.matched == ("semantic",)}
            # Those below the page by more than recency can lend were not read.
            far = {
                int(h.id)
                for h in everything[limit:]
                if h.matched == ("semantic",)
                and h.score + weights.recency < everything[limit - 1].score
            }
            assert far and far <= vector_only
            assert not far & set(read)
