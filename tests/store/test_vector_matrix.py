"""The in-memory vector search of the SQLite backend: pruned search against exact."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lossless.store.vector_matrix import MatrixRow, VectorMatrix

DIM = 384


def clustered(n: int, seed: int = 3) -> Any:
    """Unit vectors shaped like a sentence model's: a shared direction, topics, noise."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(DIM)
    topics = rng.standard_normal((40, DIM))
    raw = 3 * common + topics[rng.integers(0, 40, n)] + 0.8 * rng.standard_normal((n, DIM))
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def int8_rows(vectors: Any, start: int = 0, conversations: int = 5) -> list[MatrixRow]:
    rows = []
    for i, v in enumerate(vectors, start):
        scaled = np.round(v * 127 / np.abs(v).max()).astype(np.int8)
        kind, ref = ("summary", f"s{i}") if i % 97 == 0 else ("message", str(i))
        rows.append(MatrixRow(i + 1, kind, ref, i % conversations, scaled.tobytes()))
    return rows


def loaded(vectors: Any, **knobs: int) -> VectorMatrix:
    matrix = VectorMatrix(**knobs)
    matrix.extend(int8_rows(vectors))
    return matrix


def test_pruned_search_finds_what_the_exact_scan_finds_with_exact_scores() -> None:
    vectors = clustered(6_000)
    exact = loaded(vectors, exact_rows=10**9)
    pruned = loaded(vectors, exact_rows=100, rescored_per_result=100, min_rescored=1_000)
    queries = clustered(30, seed=11)
    overlap = []
    for q in queries:
        want = exact.best(q, 10)
        got = pruned.best(q, 10)
        assert len(got) == 10
        overlap.append(len({h[:2] for h in want} & {h[:2] for h in got}) / 10)
        cosines = {h[:2]: h[3] for h in want}
        for kind, ref, _conv, score in got:
            # Every score is the exact cosine of the int8 row, whichever path found it.
            assert score == pytest.approx(exact.similarity_of(q, [(kind, ref)])[(kind, ref)])
            if (kind, ref) in cosines:
                assert score == pytest.approx(cosines[(kind, ref)])
        assert [h[3] for h in got] == sorted((h[3] for h in got), reverse=True)
    # 1,000 of 6,000 rows rescored (17 %): measured 0.87 of the exact top 10
    # on these vectors (0.61 at 5 %: isotropic noise inside 40 topics is the
    # hard case for sign codes; real vectors keep 0.98 at 5 %, docs/benchmarks.md).
    assert np.mean(overlap) >= 0.8


def test_masks_and_skips_hold_on_the_pruned_path() -> None:
    vectors = clustered(3_000)
    pruned = loaded(vectors, exact_rows=100, rescored_per_result=10, min_rescored=50)
    exact = loaded(vectors, exact_rows=10**9)
    q = vectors[42]
    allowed = pruned.mask(["message"], [2])
    hits = pruned.best(q, 20, allowed, skip={("message", "42")})
    assert len(hits) == 20
    assert all(kind == "message" and conv == 2 and ref != "42" for kind, ref, conv, _ in hits)
    want = exact.best(q, 20, exact.mask(["message"], [2]), skip={("message", "42")})
    assert hits[0] == want[0]
    # A filter few rows pass widens the search until they are all found.
    few = pruned.mask(["summary"], None)
    summaries = pruned.best(q, 100, few)
    assert len(summaries) == sum(1 for i in range(3_000) if i % 97 == 0)


def test_growing_in_batches_keeps_every_row_and_its_chunks() -> None:
    vectors = clustered(5_000)
    matrix = VectorMatrix(exact_rows=500, min_rescored=100)
    for start in range(0, 5_000, 700):  # crosses the code rebuilds at 1,000, 2,000 and 4,000
        matrix.extend(int8_rows(vectors[start : start + 700], start))
    assert len(matrix) == 5_000 and matrix.last_row_id == 5_000
    # A second chunk of message 7 that points the other way: its best chunk counts.
    flipped = np.round(-vectors[7] * 127 / np.abs(vectors[7]).max()).astype(np.int8)
    matrix.extend([MatrixRow(5_001, "message", "7", 2, flipped.tobytes())])
    sims = matrix.similarity_of(
        vectors[7], [("message", "7"), ("summary", "s97"), ("message", "x")]
    )
    assert sims[("message", "7")] == pytest.approx(1.0, abs=1e-3)
    assert sims[("summary", "s97")] == pytest.approx(float(vectors[97] @ vectors[7]), abs=2e-2)
    assert ("message", "x") not in sims
    [(kind, ref, conv, score)] = matrix.best(vectors[1234], 1)
    assert (kind, ref, conv) == ("message", "1234", 1234 % 5) and score == pytest.approx(
        1, abs=1e-3
    )
    assert matrix.best(-vectors[7], 1)[0][:2] == ("message", "7")


def test_best_is_the_stable_order_of_every_score_ties_and_chunks_included() -> None:
    # Many exact ties (each vector stored 8 times) and items of several chunks:
    # the partial selection must give what a stable sort of all scores gives.
    base = clustered(400)
    vectors = np.repeat(base, 8, axis=0)
    rows = [
        MatrixRow(i + 1, "message", str(i // 3), 0, r.vector)
        for i, r in enumerate(int8_rows(vectors))
    ]
    matrix = VectorMatrix(exact_rows=None)
    matrix.extend(rows)
    q = np.asarray(base[5], dtype=np.float32)
    q /= np.linalg.norm(q)
    scores = matrix.scores_of(range(len(rows)), q)
    skip = {("message", "1"), ("message", "40")}
    for limit in (1, 10, 50, 200, 5_000):
        want: dict[str, float] = {}
        for at in np.argsort(-scores, kind="stable").tolist():
            ref = str(at // 3)
            if ref not in want and ("message", ref) not in skip:
                want[ref] = float(scores[at])
        got = matrix.best(q, limit, skip=skip)
        assert [(ref, score) for _, ref, _, score in got] == list(want.items())[:limit]


def test_blocks_of_tuples_load_what_rows_load() -> None:
    # SQLite's loader appends fetched tuples a block at a time; the result must
    # be the matrix row-by-row loading builds (kinds mixed, None places kept).
    vectors = clustered(700)
    rows = int8_rows(vectors)
    rows[3] = MatrixRow(4, "memory", "m-3", None, rows[3].vector, 0, None)
    rows[5] = MatrixRow(6, "message", "5", 0, rows[5].vector, 2, 9)
    one = VectorMatrix()
    one.extend(rows)
    blocks = VectorMatrix()
    blocks.reserve(len(rows))
    plain = [(r.row_id, r.kind, r.ref, r.conversation_id, r.vector, r.chunk, r.seq) for r in rows]
    for start in range(0, len(plain), 256):
        blocks.append_block(plain[start : start + 256])
    blocks.append_block([])
    assert len(blocks) == len(one) == 700 and blocks.last_row_id == one.last_row_id == 700
    for name in ("_rows", "_inverse_norms", "_kind_codes", "_conversations", "_message_ids"):
        assert np.array_equal(getattr(blocks, name)[:700], getattr(one, name)[:700]), name
    assert np.array_equal(blocks._chunks[:700], one._chunks[:700])
    assert np.array_equal(blocks._seqs[:700], one._seqs[:700])
    assert blocks._seqs[5] == 9 and blocks._seqs[3] == -1 and blocks._conversations[3] == -1
    assert blocks._named_refs == one._named_refs and blocks._named_positions == one._named_positions
    # The reserved room (an eighth more) takes a later block without regrowing.
    buffer = blocks._rows
    blocks.append_block(plain[:50])
    assert blocks._rows is buffer and len(blocks) == 750
    assert blocks.similarity_of(vectors[3], [("memory", "m-3")]) == pytest.approx(
        {("memory", "m-3"): 1.0}, abs=1e-3
    )
    # Norms as the float copy gives them.
    want = np.linalg.norm(one._rows[:700].astype(np.float32), axis=1)
    assert np.array_equal(blocks._inverse_norms[:700], (1.0 / want).astype(np.float32))


def test_reach_is_the_smallest_distance_holding_take_rows() -> None:
    # The pruned scan's cut-off, guessed from a sample past 65,536 rows and
    # settled by whole counts: it must equal the full count's answer.
    from lossless.store.vector_matrix import _FAR, reach_of

    rng = np.random.default_rng(5)
    for n in (1_000, 200_000):
        distance = np.clip(rng.normal(190, 12, n), 0, DIM).astype(np.uint16)
        distance[rng.random(n) < 0.3] = _FAR  # rows a filter leaves out
        distance[:3] = [0, 1, 1]  # a few exact matches
        allowed = int(np.count_nonzero(distance < _FAR))
        for take in (1, 2, 3, 4, 50, 2_000, n // 20, allowed - 1, allowed, allowed + 1, n):
            counts = np.bincount(distance, minlength=_FAR + 1).cumsum()
            want = min(int(np.searchsorted(counts, take)), _FAR - 1)
            assert reach_of(np, distance, take) == want, (n, take)
    # A sample that guesses far off still gives the exact answer: every 4th
    # row (the sample's stride here) is near, the rest far.
    skewed = np.full(300_000, 200, dtype=np.uint16)
    skewed[::4] = 10
    for take in (1, 10, 75_000, 75_001, 100_000, 300_000):
        counts = np.bincount(skewed, minlength=_FAR + 1).cumsum()
        assert reach_of(np, skewed, take) == min(int(np.searchsorted(counts, take)), _FAR - 1)
