"""Centring on the model's shipped mean (``lossless.embeddings.centring``).

Pure arithmetic and the shipped constant: no model is loaded. The mean file
is pinned here because migration 0013 converted stored vectors with it:
changing it needs a migration of its own.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

from lossless.embeddings import centring
from lossless.embeddings.centring import centre, model_mean
from lossless.embeddings.models import DEFAULT_MODEL, DIMENSIONS
from lossless.store.vector_codec import centre_int8, from_int8, to_int8

MEAN_SHA256 = "8be18d355b5be4ad2e3886abf04db84666db5cb88f2e0bf38685cda652931e6c"
PG_MIGRATION = (
    Path(centring.__file__).parents[1] / "store/postgres/migrations/0013_centred_vectors.sql"
)


def _cos(a: tuple[float, ...] | list[float], b: tuple[float, ...] | list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def _unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def test_centring_removes_the_common_direction() -> None:
    common = _unit([1.0] * DIMENSIONS)
    mean = [0.9 * c for c in common]  # texts mostly share one direction
    a = _unit([c + (0.4 if i == 0 else 0.0) - 0.4 / DIMENSIONS for i, c in enumerate(common)])
    b = _unit([c + (0.4 if i == 1 else 0.0) - 0.4 / DIMENSIONS for i, c in enumerate(common)])
    assert _cos(a, b) > 0.85  # raw: alike
    ca, cb = centre(a, mean), centre(b, mean)
    assert math.isclose(math.sqrt(sum(x * x for x in ca)), 1.0, rel_tol=1e-9)
    assert _cos(ca, cb) < 0.3  # centred: what tells them apart is left
    # Scale does not matter (stored int8 vectors are scaled), a zero vector stays zero.
    assert (
        max(abs(x - y) for x, y in zip(centre([3 * x for x in a], mean), ca, strict=True)) < 1e-12
    )
    assert centre([0.0] * DIMENSIONS, mean) == tuple([0.0] * DIMENSIONS)


def test_int8_centring_matches_the_float_one() -> None:
    shipped = model_mean(DEFAULT_MODEL)
    assert shipped is not None
    raw = _unit([m + (0.3 if i % 7 == 0 else -0.05) for i, m in enumerate(shipped.vector)])
    stored = to_int8(raw)
    assert (
        _cos(list(from_int8(centre_int8(stored, shipped.vector))), centre(raw, shipped.vector))
        > 0.999
    )


def test_the_shipped_mean_is_the_one_the_migrations_applied() -> None:
    path = Path(centring.__file__).parent / "means" / f"{DEFAULT_MODEL}.json"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == MEAN_SHA256
    shipped = model_mean(DEFAULT_MODEL)
    assert shipped is not None and shipped.texts > 0 and "LoCoMo" in shipped.corpus
    norm = math.sqrt(sum(x * x for x in shipped.vector))
    assert 0.5 < norm < 1.0  # a mean of unit vectors that share a direction
    literal = re.search(r"'\[([^\]]+)\]'::vector", PG_MIGRATION.read_text("utf-8"))
    assert literal is not None
    in_sql = [float(x) for x in literal.group(1).split(",")]
    assert len(in_sql) == DIMENSIONS
    assert max(abs(x - y) for x, y in zip(in_sql, shipped.vector, strict=True)) < 1e-6
    assert model_mean("a-model-with-no-mean") is None
