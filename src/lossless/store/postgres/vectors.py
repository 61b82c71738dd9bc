"""Embedding vectors on PostgreSQL: not stored there yet.

The store's ``capabilities.vector_search`` is None, so search stays
full-text on PostgreSQL and ``lcm status`` says why; nothing calls these.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from lossless.errors import StoreError
from lossless.store.contract import (
    EMBEDDING_KINDS,
    EmbeddingKind,
    EmbeddingProgress,
    EmbeddingSource,
    NewVector,
    VectorHit,
)
from lossless.store.postgres.repository import Repo

_UNSUPPORTED = "this lossless stores no embedding vectors on PostgreSQL yet"


class Vectors(Repo):
    def pending(
        self, model: str, *, limit: int, after_message_id: int = 0
    ) -> builtins.list[EmbeddingSource]:
        raise StoreError(_UNSUPPORTED)

    def progress(self, model: str) -> EmbeddingProgress:
        raise StoreError(_UNSUPPORTED)

    def add(self, model: str, vectors: Sequence[NewVector]) -> int:
        raise StoreError(_UNSUPPORTED)

    def nearest(
        self,
        model: str,
        query: Sequence[float],
        *,
        limit: int,
        kinds: Sequence[EmbeddingKind] = EMBEDDING_KINDS,
        conversation_id: int | None = None,
        project: str | None = None,
    ) -> builtins.list[VectorHit]:
        raise StoreError(_UNSUPPORTED)

    def similarities(
        self, model: str, query: Sequence[float], items: Sequence[tuple[EmbeddingKind, str]]
    ) -> dict[tuple[EmbeddingKind, str], float]:
        raise StoreError(_UNSUPPORTED)
