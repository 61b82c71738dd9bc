"""A message's meaning read with the turns around it: the semantic score search fuses.

A reply such as "Yes, twice last year" means nothing alone; the question
before it says what it is about. So the semantic side of ``search_all``
scores a message by the cosine of the query with the weighted sum of its own
direction and its neighbours' in the conversation (``FusionWeights.context``,
offsets in ``seq``), rather than by its own vector alone. The sum is
renormalised, so a message among similar turns is not counted twice. On
LoCoMo this took hybrid any@10 from 0.69 to 0.75 on the held-out
conversations (docs/benchmarks.md). Only chunk 0 of each message takes part:
the start of a long tool output says what it is.

Context only lifts: a message scores at least its own cosine (unrelated
neighbours never dilute a clear match), and at most just below the best own
cosine in its window (a turn borrows relevance from its neighbours; it never
overtakes them). With raw multilingual-e5 vectors, which share a common
direction, a sum of turns leant towards any query and these guards cost 2.5
points of recall@5 on LoCoMo; on the centred vectors search compares now
(``embeddings.centring``) unrelated turns are near orthogonal, and the
guarded score meets every LoCoMo target (docs/benchmarks.md, third
session). They stay: they are what makes the score safe for a model without
a shipped mean, or a conversation whose turns share a topic the query does not.

numpy is imported here only, and only when a hybrid search runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lossless.store.contract import MessageNeighbour

# A turn lifted by a neighbour's match stays this far below that neighbour.
LEND_MARGIN = 0.002


def context_cosines(
    query: Sequence[float],
    hoods: dict[int, list[MessageNeighbour]],
    weights: Sequence[tuple[int, float]],
    offsets: Iterable[int] = (0,),
) -> dict[int, float]:
    """Message id -> the query's cosine with its context, for every message found.

    ``hoods`` maps a message to its neighbourhood (``neighbourhoods`` of the
    vector repository, itself at offset 0); each message at one of
    ``offsets`` in a neighbourhood is scored from the vectors around it there,
    so a neighbourhood fetched one step wider scores its neighbours too. A
    message without its own vector is not scored.
    """
    import numpy as np

    rows: dict[int, int] = {}  # message id -> its row in ``units``
    vectors: list[Any] = []
    for hood in hoods.values():
        for n in hood:
            if n.message_id not in rows:
                rows[n.message_id] = len(vectors)
                vectors.append(n.vector)
    if not vectors:
        return {}
    ids = list(rows)
    # A last row of zeros stands for a missing neighbour: weight 0, cosine -1.
    # One conversion of them all (one per vector cost ~2 ms for 600).
    units = np.zeros((len(vectors) + 1, len(vectors[0])), dtype=np.float32)
    if all(isinstance(v, memoryview) and v.format == "b" for v in vectors):
        # SQLite's matrix hands out views of its int8 rows: joined as bytes and
        # widened at once, the same floats as np.array's element by element
        # reading of 600 views, at a third of its ~0.3 ms.
        units[:-1] = np.frombuffer(b"".join(vectors), dtype=np.int8).reshape(len(vectors), -1)
    else:
        units[:-1] = np.array(vectors, dtype=np.float32)
    norms = np.linalg.norm(units, axis=1)
    usable = (norms > 0).tolist()
    units /= np.where(norms > 0, norms, 1.0)[:, None]
    q = np.asarray(query, dtype=np.float32)
    alone = units @ q
    alone[-1] = -1.0
    missing = len(vectors)
    wanted = tuple(offsets)
    # One row per message to score: its own row, then one per context weight.
    members: list[list[int]] = []
    mix_weights: list[list[float]] = []
    scored: set[int] = set()
    for hood in hoods.values():
        at = {n.offset: rows[n.message_id] for n in hood if usable[rows[n.message_id]]}
        for centre in wanted:
            own = at.get(centre)
            if own is None or ids[own] in scored:
                continue
            scored.add(ids[own])
            row, row_weights = [own], [1.0]
            for delta, weight in weights:
                near = at.get(centre + delta)
                row.append(missing if near is None else near)
                row_weights.append(0.0 if near is None else weight)
            members.append(row)
            mix_weights.append(row_weights)
    if not members:
        return {}
    # All at once: a numpy call per message cost a search at 100,000 messages ~10 ms.
    index = np.asarray(members)
    mixes = np.einsum("cm,cmd->cd", np.asarray(mix_weights, dtype=np.float32), units[index])
    lengths = np.linalg.norm(mixes, axis=1)
    mixed = mixes @ q
    own_cosines = alone[index[:, 0]]
    lent = alone[index[:, 1:]].max(axis=1) if index.shape[1] > 1 else np.full(len(index), -1.0)
    caps = np.maximum(own_cosines, lent - LEND_MARGIN)
    scores: dict[int, float] = {}
    for c, own in enumerate(index[:, 0].tolist()):
        length = float(lengths[c])
        if length <= 0:
            continue
        own_cosine = float(own_cosines[c])
        scores[ids[own]] = max(own_cosine, min(float(mixed[c]) / length, float(caps[c])))
    return scores
