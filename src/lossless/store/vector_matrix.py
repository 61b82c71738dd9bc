"""An exact nearest-vector search in memory: every vector scored, no index to drift.

The SQLite backend keeps its vectors in the database file (it cannot load a
vector extension) and scans them here: the int8 rows become one float32
matrix, each row re-normalised, and a query is one matrix-vector product
(BLAS) plus a partial sort. The matrix is loaded once per process and then
only extended with rows added since (``VectorMatrix.extend``). numpy is
imported by this module alone, on the first search.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lossless.embeddings.models import DIMENSIONS

KIND_CODES = {"message": 0, "summary": 1, "memory": 2, "file": 3}


@dataclass(frozen=True, slots=True)
class MatrixRow:
    """One stored chunk: the id of its row, what it belongs to, its int8 bytes."""

    row_id: int
    kind: str
    ref: str
    conversation_id: int | None
    vector: bytes


class VectorMatrix:
    """The vectors of one model, appended in row-id order."""

    def __init__(self) -> None:
        import numpy as np

        self._np = np
        self.matrix: Any = np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.kinds: list[str] = []
        self.refs: list[str] = []
        self.kind_codes: Any = np.zeros(0, dtype=np.int8)
        self.positions: dict[tuple[str, str], list[int]] = {}
        self.conversations: Any = np.zeros(0, dtype=np.int64)
        self.last_row_id = 0
        self.deletions = -1

    def __len__(self) -> int:
        return len(self.refs)

    def extend(self, rows: Sequence[MatrixRow]) -> None:
        np = self._np
        if not rows:
            return
        block = np.frombuffer(b"".join(r.vector for r in rows), dtype=np.int8)
        block = block.reshape(len(rows), DIMENSIONS).astype(np.float32)
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        block /= np.where(norms == 0, 1.0, norms)
        self.matrix = np.concatenate([self.matrix, block]) if len(self) else block
        start = len(self.refs)
        for offset, r in enumerate(rows):
            self.positions.setdefault((r.kind, r.ref), []).append(start + offset)
        self.kinds.extend(r.kind for r in rows)
        self.refs.extend(r.ref for r in rows)
        codes = np.array([KIND_CODES[r.kind] for r in rows], dtype=np.int8)
        self.kind_codes = np.concatenate([self.kind_codes, codes])
        ids = np.array([-1 if r.conversation_id is None else r.conversation_id for r in rows])
        self.conversations = np.concatenate([self.conversations, ids.astype(np.int64)])
        self.last_row_id = max(self.last_row_id, rows[-1].row_id)

    def scores(self, query: Sequence[float]) -> Any:
        """Cosine of ``query`` (a unit vector) with every row.

        einsum, not ``@``: a matrix-vector product is memory-bound, and BLAS
        threads waking on a busy machine cost tens of milliseconds (measured:
        56 ms for 2,000 rows with OpenBLAS's threads, 0.07 ms without).
        """
        np = self._np
        return np.einsum("ij,j->i", self.matrix, np.asarray(query, dtype=np.float32))

    def best(
        self,
        query: Sequence[float],
        limit: int,
        allowed: Any | None = None,
        skip: set[tuple[str, str]] | None = None,
    ) -> list[tuple[str, str, int | None, float]]:
        """(kind, ref, conversation_id, cosine) of the ``limit`` best items, best first.

        ``allowed`` is a boolean mask over rows (None: all); items in ``skip``
        are left out. An item with several chunks counts once, by its best chunk.
        """
        np = self._np
        if limit <= 0 or not len(self):
            return []
        scores = self.scores(query)
        if allowed is not None:
            scores = np.where(allowed, scores, -np.inf)
        found: dict[tuple[str, str], tuple[str, str, int | None, float]] = {}
        # Over-fetch a little for items with several chunks, then widen if short.
        take = min(len(self), limit * 2)
        while True:
            top = (
                np.argpartition(-scores, take - 1)[:take]
                if take < len(self)
                else np.arange(len(self))
            )
            top = top[np.argsort(-scores[top], kind="stable")]
            found.clear()
            for index in top:
                score = float(scores[index])
                if score == -np.inf:
                    break
                key = (self.kinds[index], self.refs[index])
                if key not in found and (skip is None or key not in skip):
                    conversation = int(self.conversations[index])
                    found[key] = (key[0], key[1], None if conversation < 0 else conversation, score)
                    if len(found) >= limit:
                        break
            if len(found) >= limit or take >= len(self):
                return list(found.values())
            take = min(len(self), take * 4)

    def mask(self, kinds: Sequence[str], conversation_ids: Sequence[int] | None) -> Any | None:
        """Rows of the given kinds and, if given, conversations (None: every row).

        Memories have no conversation: the caller checks their project.
        """
        np = self._np
        parts: list[Any] = []
        if set(kinds) != set(KIND_CODES):
            codes = np.asarray([KIND_CODES[k] for k in kinds], dtype=np.int8)
            parts.append(np.isin(self.kind_codes, codes))
        if conversation_ids is not None:
            in_scope = np.isin(self.conversations, np.asarray(conversation_ids, dtype=np.int64))
            parts.append(in_scope | (self.conversations < 0))
        if not parts:
            return None
        mask = parts[0]
        for part in parts[1:]:
            mask = mask & part
        return mask

    def similarity_of(
        self, query: Sequence[float], items: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], float]:
        np = self._np
        rows = [i for key in dict.fromkeys(items) for i in self.positions.get(key, ())]
        if not rows:
            return {}
        index = np.asarray(rows)
        scores = np.einsum("ij,j->i", self.matrix[index], np.asarray(query, dtype=np.float32))
        out: dict[tuple[str, str], float] = {}
        for i, score in zip(rows, scores, strict=True):
            key = (self.kinds[i], self.refs[i])
            out[key] = max(out.get(key, -1.0), float(score))
        return out
