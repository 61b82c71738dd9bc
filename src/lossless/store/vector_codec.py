"""How a unit vector is written to each backend, in one place.

SQLite keeps int8 components (384 bytes a vector): the vector scaled so its
largest component is 127. Cosine does not depend on scale, so a search
re-normalises the int8 vector and the ranking error stays far below the
model's own (about 1e-3 in cosine). PostgreSQL keeps pgvector's ``vector``,
written as its text literal. Pure Python: the store imports no numpy until a
search loads the vectors.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence

from lossless.embeddings.models import DIMENSIONS
from lossless.errors import InputError


def check_vector(vector: Sequence[float]) -> None:
    if len(vector) != DIMENSIONS:
        raise InputError(f"a vector has {len(vector)} components, expected {DIMENSIONS}")
    if not all(math.isfinite(x) for x in vector):
        raise InputError("a vector has a component that is not a finite number")


def to_int8(vector: Sequence[float]) -> bytes:
    """The int8 encoding (two's complement bytes) of ``vector``."""
    check_vector(vector)
    peak = max(abs(x) for x in vector)
    if peak == 0:
        raise InputError("a zero vector has no direction to search by")
    scale = 127.0 / peak
    return bytes(round(x * scale) & 0xFF for x in vector)


def from_int8(blob: bytes) -> Sequence[float]:
    """The direction ``to_int8`` stored (its components as written, not unit length).

    An ``array('b')``: decoded at C speed, and numpy reads it without a copy
    per component (a search decodes hundreds of these).
    """
    if len(blob) != DIMENSIONS:
        raise InputError(f"a stored vector has {len(blob)} bytes, expected {DIMENSIONS}")
    return array("b", blob)


def centre_int8(blob: bytes, mean: Sequence[float]) -> bytes:
    """A stored int8 vector, centred on ``mean`` (migration 0013) and encoded again."""
    # Here, not in lossless.embeddings.centring: the store depends on the
    # embeddings package, never the other way round.
    from lossless.embeddings.centring import centre

    return to_int8(centre(from_int8(blob), mean))


def from_pg_literal(text: str) -> tuple[float, ...]:
    """A vector from pgvector's text form."""
    return tuple(float(x) for x in text.strip("[]").split(","))


def pg_literal(vector: Sequence[float]) -> str:
    """pgvector's text form: ``[0.1,-0.2,...]``."""
    check_vector(vector)
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
