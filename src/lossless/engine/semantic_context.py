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
cosine in its window. multilingual-e5's vectors share a common direction
(unrelated texts score 0.75 against each other), so a sum of turns leans
towards any query, and an unrelated turn next to the one that matches would
otherwise outrank it. A turn borrows relevance from its neighbours; it never
overtakes them. Both guards cost recall on LoCoMo (docs/benchmarks.md), and
are kept: they are what makes the score safe for another model or a
conversation whose turns are unrelated.

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

    q = np.asarray(query, dtype=np.float32)
    wanted = tuple(offsets)
    scores: dict[int, float] = {}
    for hood in hoods.values():
        units: dict[int, tuple[int, Any]] = {}
        for n in hood:
            v = np.asarray(n.vector, dtype=np.float32)
            norm = float(np.linalg.norm(v))
            if norm > 0:
                units[n.offset] = (n.message_id, v / norm)
        for centre in wanted:
            if centre not in units:
                continue
            message_id, own = units[centre]
            if message_id in scores:
                continue
            mix = np.array(own, dtype=np.float32)
            lent = -1.0
            for delta, weight in weights:
                near = units.get(centre + delta)
                if near is not None:
                    mix += weight * near[1]
                    lent = max(lent, float(q @ near[1]))
            length = float(np.linalg.norm(mix))
            if length > 0:
                alone = float(q @ own)
                cap = max(alone, lent - LEND_MARGIN)
                scores[message_id] = max(alone, min(float(q @ mix) / length, cap))
    return scores
