"""Migration 0013 on a store written before it: stored vectors are centred in place.

A store at migration 0012 holds the model's raw vectors (they share its
common direction); opened by today's code, each must hold the same vector
centred on the shipped mean (``lossless.embeddings.centring``), found by a
centred query, with nothing to embed again, while a model without a shipped
mean keeps its vectors. On both backends (a SQLite file, a real embedded
PostgreSQL with pgvector).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.store import old_code
from tests.store.old_code import OpenNew, OpenOld

from lossless.embeddings.centring import centre, model_mean
from lossless.embeddings.models import DEFAULT_MODEL, DIMENSIONS
from lossless.models import NewMessage
from lossless.store.contract import NewVector

BEFORE = 12
OTHER = "model-without-a-mean"


@pytest.fixture(params=old_code.BACKENDS)
def openers(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[OpenOld, OpenNew]:
    """(open the store as the code before 0013 would, open it as today's code)."""
    return old_code.openers(request, tmp_path, BEFORE)


def _cos(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def _raw(mean: Sequence[float], axis: int) -> tuple[float, ...]:
    """A unit vector along the mean plus a part of its own, as the model gives."""
    basis = [0.0] * DIMENSIONS
    basis[axis] = 1.0
    along = sum(b * m for b, m in zip(basis, mean, strict=True)) / sum(m * m for m in mean)
    own = [b - along * m for b, m in zip(basis, mean, strict=True)]
    scale = 0.5 / math.sqrt(sum(x * x for x in own))
    v = [m + scale * o for m, o in zip(mean, own, strict=True)]
    norm = math.sqrt(sum(x * x for x in v))
    return tuple(x / norm for x in v)


def test_stored_vectors_are_centred_in_place(
    openers: tuple[OpenOld, OpenNew],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shipped = model_mean(DEFAULT_MODEL)
    assert shipped is not None
    mean = shipped.vector
    raw = [_raw(mean, axis) for axis in (3, 50, 200)]
    # The raw vectors look alike, as the model's do; centred they do not.
    assert _cos(raw[0], raw[1]) > 0.7
    assert abs(_cos(centre(raw[0], mean), centre(raw[1], mean))) < 0.05

    open_old, open_new = openers
    old = open_old(monkeypatch)
    try:
        assert max(m.version for m in old.migrations()) == BEFORE
        conv = old.conversations.get_or_create(project="p", session_id="s", client="generic")
        ids = [
            m.id
            for m in old.messages.append(
                conv.id, [NewMessage(role="user", content=f"turn {n}") for n in range(3)]
            ).inserted
        ]
        old.vectors.add(
            DEFAULT_MODEL,
            [NewVector("message", str(i), 0, conv.id, v) for i, v in zip(ids, raw, strict=True)],
        )
        old.vectors.add(OTHER, [NewVector("message", str(ids[0]), 0, conv.id, raw[0])])
    finally:
        old.close()

    monkeypatch.undo()
    store = open_new()
    try:
        assert max(m.version for m in store.migrations()) > BEFORE
        hoods = store.vectors.neighbourhoods(DEFAULT_MODEL, [ids[1]], before=1, after=1)
        stored = {n.message_id: n.vector for n in hoods[ids[1]]}
        for message_id, v in zip(ids, raw, strict=True):
            # Rounded to int8 twice (before and after): these vectors lie almost
            # on one axis, the worst case for that rounding.
            assert _cos(stored[message_id], centre(v, mean)) > 0.995
        [kept] = store.vectors.neighbourhoods(OTHER, [ids[0]], before=0, after=0)[ids[0]]
        assert _cos(kept.vector, raw[0]) > 0.999
        best = store.vectors.nearest(DEFAULT_MODEL, centre(raw[2], mean), limit=3)
        assert best[0].ref == str(ids[2]) and best[0].score > 0.99
        assert best[1].score < 0.1  # unrelated once centred
        progress = store.vectors.progress(DEFAULT_MODEL)
        assert progress.embedded["message"] == 3 and progress.pending["message"] == 0
    finally:
        store.close()
