"""The model's common direction, removed from its vectors before they are compared.

multilingual-e5 puts every text in a narrow cone: two unrelated texts score
0.75-0.84 cosine, related ones barely more. Cosine between such vectors is
mostly what all texts share, so score gaps are tiny and a sum of turns
(``engine.semantic_context``) leans towards any query. Subtracting the
model's mean vector and renormalising ("centring") keeps what tells texts
apart: unrelated texts then score near 0, and on LoCoMo hybrid recall rose
(docs/benchmarks.md, "third session").

The mean is a constant shipped with the model (``means/<model>.json``, with
the corpus it was computed from and its license), not something each store
learns: a new store of ten messages has no mean worth the name (one message
minus its own mean is nothing), and a store's mean drifts as it grows, so
every stored vector (and PostgreSQL's HNSW index) would need rewriting each
time it moved. The cone is mostly the model's: means of agent transcripts
and of LoCoMo's chat have cosine 0.93 (|mean| 0.91-0.93). What is left
differs by kind of text: centred on the transcripts' mean, LoCoMo gained
less (docs/benchmarks.md, third session), so a per-store mean, frozen once
a store is large enough, is the next step.

Vectors are centred where they are made (``loader.E5Embedder``), so both
backends store, index and compare centred unit vectors, and cosine ranking
over them is exactly centred-cosine ranking. Centring the query alone would
not be: it ranks by q.d - mu.d, without renormalising d - mu. Stores made
before centring are converted in place (migration 0013, ``store.vector_codec.centre_int8`` on
SQLite, pgvector arithmetic on PostgreSQL): the transform needs only the
stored direction, so nothing is embedded again.

Pure Python, so a migration needs no numpy; the embedder centres
whole batches with numpy itself.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from lossless.embeddings.models import DIMENSIONS

_MEANS = Path(__file__).parent / "means"


@dataclass(frozen=True, slots=True)
class ModelMean:
    """A model's mean unit vector, and where it came from."""

    model: str
    vector: tuple[float, ...]
    corpus: str
    """What it was computed from (the file says how, with licenses)."""
    texts: int


@cache
def model_mean(model: str) -> ModelMean | None:
    """The shipped mean of ``model`` (None: its vectors are used as the model gives them)."""
    path = _MEANS / f"{model}.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    vector = tuple(float(x) for x in data["mean"])
    if len(vector) != DIMENSIONS:
        raise ValueError(f"{path}: the mean has {len(vector)} components, expected {DIMENSIONS}")
    return ModelMean(model, vector, str(data["corpus"]), int(data["texts"]))


def centre(vector: Sequence[float], mean: Sequence[float]) -> tuple[float, ...]:
    """The unit vector of ``vector / |vector| - mean`` (``vector`` unchanged if that is 0)."""
    length = math.sqrt(sum(x * x for x in vector))
    if length == 0:
        return tuple(vector)
    moved = [x / length - m for x, m in zip(vector, mean, strict=True)]
    norm = math.sqrt(sum(x * x for x in moved))
    if norm == 0:
        return tuple(x / length for x in vector)
    return tuple(x / norm for x in moved)
