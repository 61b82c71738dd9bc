"""A nearest-vector search in memory: exact, or pruned past ``EXACT_ROWS`` when set.

The SQLite backend keeps its vectors in the database file (it cannot load a
vector extension) and scans them here. The rows stay int8, as stored (384
bytes each, a quarter of float32: 38 MB per 100,000 chunks), beside each
row's inverse norm, so a score is the int8 row times the query, scaled.

Up to ``EXACT_ROWS`` rows every row is scored. Beyond, a full scan costs
tens of milliseconds (100,000 int8 rows: ~25 ms here, a million ten times
that), so each row also has a 384-bit code: the signs of its components
minus the store's mean vector (centred: multilingual-e5's vectors share a
large common direction, and signs taken around zero would say little). A
query ranks every row by Hamming distance to its own code (six 64-bit words
a row), keeps the closest ``RESCORED_SHARE`` of the rows (at least
``RESCORED_PER_RESULT`` x ``limit`` and ``MIN_RESCORED``), and scores those
exactly from their int8 rows. What that costs in recall against the exact
scan is measured on real vectors and on 100,000 real-ish ones
(docs/benchmarks.md); every score returned is the exact cosine.

Buffers grow by doubling, so a store whose worker embeds between searches
appends without copying every row each time. The matrix is loaded once per
process and then only extended with rows added since. numpy is imported by
this module alone, on the first search.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lossless.embeddings.models import DIMENSIONS
from lossless.store.contract import MessageNeighbour

KIND_CODES = {"message": 0, "summary": 1, "memory": 2, "file": 3}
KIND_NAMES = {code: kind for kind, code in KIND_CODES.items()}

EXACT_ROWS: int | None = 20_000
"""Up to this many rows every row is scored (a few ms); beyond, codes prune
first. None: always exact."""
RESCORED_SHARE = 0.05
"""Rows scored exactly on the pruned path: this share of the rows, or
``RESCORED_PER_RESULT`` x limit, or ``MIN_RESCORED``, whichever is most. On
LoCoMo's real multilingual-e5 vectors 5 % kept 0.98 of the exact top 10; at
100,000 real-ish vectors see docs/benchmarks.md (``bench_semantic.py --only
pruning``)."""
RESCORED_PER_RESULT = 40
MIN_RESCORED = 2_000
_WORDS = DIMENSIONS // 64
_GATHERED = 2_048  # rows gathered and scored at once (768 KB: within L2)
LOAD_BLOCK = 20_000
"""Rows appended at once while loading: bounded memory, numpy-sized steps."""
_FAR = DIMENSIONS + 1  # a Hamming distance no code reaches: a row left out


def reach_of(np: Any, distance: Any, take: int) -> int:
    """The smallest Hamming distance within which ``take`` rows of ``distance``
    fall (``_FAR - 1`` when fewer rows than that are allowed at all).

    A count per distance, not a partial sort of a million keys (5 ms against
    12); and past 65,536 rows the counts of a strided sample guess it, then
    whole-array counts at the guess and its neighbours settle it (a bincount
    of a million distances converts them to 64-bit first: 1.2 ms CPU, the
    guess and two or three counts ~0.5). The same answer either way (tested).
    """
    step = len(distance) // 65_536
    if step > 1:
        sample = np.bincount(distance[::step], minlength=_FAR + 1).cumsum()
        reach = min(int(np.searchsorted(sample, take / step)), _FAR - 1)
        below = int(np.count_nonzero(distance <= reach))
        for _ in range(4):
            if below >= take:
                if reach == 0:
                    return 0
                fewer = int(np.count_nonzero(distance <= reach - 1))
                if fewer < take:
                    return reach
                reach, below = reach - 1, fewer
            else:
                if reach == _FAR - 1:
                    return reach
                reach += 1
                below = int(np.count_nonzero(distance <= reach))
        # The sample was far off: count every distance.
    counts = np.bincount(distance, minlength=_FAR + 1).cumsum()
    return min(int(np.searchsorted(counts, take)), _FAR - 1)


@dataclass(frozen=True, slots=True)
class MatrixRow:
    """One stored chunk: the id of its row, what it belongs to, its int8 bytes,
    which chunk of its item it is, and (a message's) place in its conversation."""

    row_id: int
    kind: str
    ref: str
    conversation_id: int | None
    vector: bytes
    chunk: int = 0
    seq: int | None = None


class VectorMatrix:
    """The vectors of one model, appended in row-id order."""

    def __init__(
        self,
        exact_rows: int | None = EXACT_ROWS,
        *,
        rescored_per_result: int = RESCORED_PER_RESULT,
        min_rescored: int = MIN_RESCORED,
        rescored_share: float = RESCORED_SHARE,
    ) -> None:
        import numpy as np

        self._np = np
        self.exact_rows = exact_rows
        self.rescored_per_result = rescored_per_result
        self.min_rescored = min_rescored
        self.rescored_share = rescored_share
        self._size = 0
        self._rows: Any = np.zeros((0, DIMENSIONS), dtype=np.int8)
        self._inverse_norms: Any = np.zeros(0, dtype=np.float32)
        self._kind_codes: Any = np.zeros(0, dtype=np.int8)
        self._conversations: Any = np.zeros(0, dtype=np.int64)
        # A message's ref is its id: kept as a number (a million refs as
        # strings and a dict of positions would cost hundreds of MB).
        self._message_ids: Any = np.zeros(0, dtype=np.int64)
        # Chunk numbers and a message's seq: its neighbours' vectors are read
        # from here, not from SQLite (at 100,000 messages that query cost a
        # search ~13 ms).
        self._chunks: Any = np.zeros(0, dtype=np.int16)
        self._seqs: Any = np.zeros(0, dtype=np.int64)
        self._by_place: Any | None = None  # (conversation << 32 | seq sorted, their rows)
        self._named_refs: dict[int, str] = {}
        self._named_positions: dict[tuple[str, str], list[int]] = {}
        self._sorted_messages: Any | None = None  # (ids sorted, their rows)
        # Codes for pruning: built when the matrix first outgrows exact_rows,
        # rebuilt around a new centre each time it doubles since.
        self._codes: Any | None = None  # (_WORDS, capacity) uint64, column-major
        self._centre: Any | None = None
        self._coded_at = 0
        self.last_row_id = 0
        self.deletions = -1

    def __len__(self) -> int:
        return self._size

    @property
    def resident_bytes(self) -> int:
        """Memory held by the arrays (capacity included), for reports."""
        arrays = [self._rows, self._inverse_norms, self._kind_codes, self._conversations]
        arrays += [self._message_ids, self._chunks, self._seqs]
        if self._codes is not None:
            arrays.append(self._codes)
        return sum(int(a.nbytes) for a in arrays)

    # -- loading -----------------------------------------------------------

    def extend(self, rows: Iterable[MatrixRow]) -> None:
        """Append ``rows`` (in row-id order), in blocks so a million rows load in bounded memory."""
        self.extend_tuples(
            (r.row_id, r.kind, r.ref, r.conversation_id, r.vector, r.chunk, r.seq) for r in rows
        )

    def extend_tuples(self, rows: Iterable[Sequence[Any]]) -> None:
        """``extend`` from plain tuples in ``MatrixRow``'s field order (as SQLite
        returns them: a million ``MatrixRow`` objects cost seconds to build)."""
        block: list[Sequence[Any]] = []
        for row in rows:
            block.append(row)
            if len(block) >= LOAD_BLOCK:
                self._append(block)
                block = []
        if block:
            self._append(block)

    def append_block(self, rows: Sequence[Sequence[Any]]) -> None:
        """``extend_tuples`` of one block already fetched (``cursor.fetchmany``)."""
        if rows:
            self._append(rows)

    def reserve(self, rows: int) -> None:
        """Room for ``rows`` more rows and an eighth beyond (at least 1,024): a
        load that knows its size allocates once (doubling up to a million rows
        held the old and new buffers at once), and the rows a worker embeds
        after it fit without doubling a full buffer (768 MB for a million rows,
        the old one held meanwhile)."""
        self._reserve(self._size + rows + max(rows // 8, 1_024))

    def _append(self, rows: Sequence[Sequence[Any]]) -> None:
        np = self._np
        start, end = self._size, self._size + len(rows)
        self._reserve(end)
        row_ids, kinds, refs, conversations, vectors, chunks, seqs = zip(*rows, strict=True)
        block = np.frombuffer(b"".join(vectors), dtype=np.int8).reshape(len(rows), DIMENSIONS)
        self._rows[start:end] = block
        # In float32 (int8 squares would overflow int8); a sum of 384 squares
        # stays below 2**24, an exact float32 integer in any order, so this is
        # the norm of the float copy without making one.
        norms = np.sqrt(np.einsum("ij,ij->i", block, block, dtype=np.float32))
        self._inverse_norms[start:end] = 1.0 / np.where(norms == 0, 1.0, norms)
        codes = [KIND_CODES[k] for k in kinds]
        self._kind_codes[start:end] = codes
        self._conversations[start:end] = [-1 if c is None else c for c in conversations]
        self._chunks[start:end] = chunks
        self._seqs[start:end] = [-1 if q is None else q for q in seqs]
        message = KIND_CODES["message"]
        if codes.count(message) == len(codes):
            self._message_ids[start:end] = np.fromiter(map(int, refs), np.int64, len(refs))
        else:
            ids = self._message_ids
            for offset, (code, ref) in enumerate(zip(codes, refs, strict=True)):
                if code == message:
                    ids[start + offset] = int(ref)
                else:
                    ids[start + offset] = -1
                    self._named_refs[start + offset] = ref
                    self._named_positions.setdefault((KIND_NAMES[code], ref), []).append(
                        start + offset
                    )
        self._size = end
        self._sorted_messages = None
        self._by_place = None
        self.last_row_id = max(self.last_row_id, int(row_ids[-1]))
        if self._codes is not None:
            if end >= 2 * self._coded_at:
                self._build_codes()
            else:
                self._codes[:, start:end] = self._encode(self._unit(slice(start, end)))

    def place_messages(self, ids: Any, seqs: Any) -> None:
        """Set each message row's seq from (message id, seq) pairs in any order
        (a row whose message is not among them keeps none: -1)."""
        np = self._np
        n = self._size
        order = np.argsort(ids, kind="stable")
        ids, seqs = ids[order], seqs[order]
        wanted = self._message_ids[:n]
        at = np.minimum(np.searchsorted(ids, wanted), max(len(ids) - 1, 0))
        known = (self._kind_codes[:n] == KIND_CODES["message"]) & (wanted >= 0)
        if len(ids):
            known &= ids[at] == wanted
            self._seqs[:n] = np.where(known, seqs[at], -1)
        else:
            self._seqs[:n] = -1
        self._by_place = None

    def _reserve(self, size: int) -> None:
        np = self._np
        capacity = len(self._inverse_norms)
        if size <= capacity:
            return
        capacity = max(size, 2 * capacity, 1_024)

        def grown(array: Any, fill: int | float = 0) -> Any:
            shape = (capacity, *array.shape[1:])
            out = np.full(shape, fill, dtype=array.dtype)
            out[: self._size] = array[: self._size]
            return out

        self._rows = grown(self._rows)
        self._inverse_norms = grown(self._inverse_norms)
        self._kind_codes = grown(self._kind_codes, -1)
        self._conversations = grown(self._conversations, -1)
        self._message_ids = grown(self._message_ids, -1)
        self._chunks = grown(self._chunks)
        self._seqs = grown(self._seqs, -1)
        if self._codes is not None:
            codes = np.zeros((_WORDS, capacity), dtype=np.uint64)
            codes[:, : self._size] = self._codes[:, : self._size]
            self._codes = codes

    def _unit(self, rows: Any) -> Any:
        """Rows ``rows`` (a slice or an index array) as float32 unit vectors."""
        np = self._np
        block = self._rows[rows].astype(np.float32)
        block *= self._inverse_norms[rows][:, None]
        return block

    def _build_codes(self) -> None:
        np = self._np
        n = self._size
        # The mean of a sample is centre enough, and reading every row of a
        # million to find it would cost a second.
        step = max(1, n // 50_000)
        self._centre = self._unit(slice(0, n, step)).mean(axis=0)
        self._codes = np.zeros((_WORDS, len(self._inverse_norms)), dtype=np.uint64)
        # LOAD_BLOCK rows at a time: their float32 copy is 31 MB (50,000 rows'
        # were 77 MB, the peak of a first search at a million rows).
        for start in range(0, n, LOAD_BLOCK):
            end = min(n, start + LOAD_BLOCK)
            self._codes[:, start:end] = self._encode(self._unit(slice(start, end)))
        self._coded_at = n

    def _encode(self, units: Any) -> Any:
        """The (_WORDS, len(units)) uint64 sign codes of unit vectors around the centre."""
        np = self._np
        bits = np.packbits(units > self._centre, axis=1)  # (n, 48) uint8, big-endian bits
        return np.ascontiguousarray(bits.view(">u8").astype(np.uint64).T)

    # -- searching ---------------------------------------------------------

    def _ref(self, index: int) -> tuple[str, str]:
        kind = KIND_NAMES[int(self._kind_codes[index])]
        if kind == "message":
            return kind, str(int(self._message_ids[index]))
        return kind, self._named_refs[index]

    def _candidates(self, query: Any, allowed: Any | None, take: int) -> tuple[Any, bool]:
        """Row indexes worth scoring exactly, at least ``take`` of them when there
        are, and whether they are every row that ``allowed`` lets through."""
        np = self._np
        n = self._size
        if self.exact_rows is None or n <= self.exact_rows or take >= n:
            return (range(n) if allowed is None else np.flatnonzero(allowed[:n])), True
        if self._codes is None:
            self._build_codes()
        assert self._centre is not None and self._codes is not None
        code = self._encode(query[None, :])[:, 0]
        word = np.empty(n, dtype=np.uint64)
        np.bitwise_xor(self._codes[0, :n], code[0], out=word)
        distance = np.bitwise_count(word).astype(np.uint16)
        for w in range(1, _WORDS):
            np.bitwise_xor(self._codes[w, :n], code[w], out=word)
            distance += np.bitwise_count(word)
        if allowed is not None:
            distance[~allowed[:n]] = _FAR
        reach = reach_of(np, distance, take)
        rows = np.flatnonzero(distance <= reach)
        return rows, reach == _FAR - 1

    def scores_of(self, rows: Any, query: Any) -> Any:
        """Exact cosines of ``query`` (a float32 unit vector) with rows ``rows``."""
        np = self._np
        # einsum, not ``@``: BLAS threads waking on a busy machine cost tens of
        # milliseconds (measured: 56 ms for 2,000 rows with OpenBLAS's threads,
        # 0.07 ms without); and it multiplies the int8 rows by the float32
        # query without a float copy of them.
        if isinstance(rows, range):
            # A contiguous range is read in place (measured at 100,000 rows:
            # 23 ms; an index array plus astype cost 145 ms).
            block = self._rows[rows.start : rows.stop]
            norms = self._inverse_norms[rows.start : rows.stop]
            return np.einsum("ij,j->i", block, query, dtype=np.float32) * norms
        # Rows picked by the codes are gathered a cache-sized block at a time
        # and scored there: one gather of 50,000 rows (19 MB) written out and
        # read back cost 11.3 ms CPU at a million rows, blocks 7.6. Each row's
        # cosine is the same sum either way (einsum scores a row on its own).
        scores = np.empty(len(rows), dtype=np.float32)
        block = np.empty((min(_GATHERED, len(rows)), DIMENSIONS), dtype=np.int8)
        for start in range(0, len(rows), _GATHERED):
            picked = rows[start : start + _GATHERED]
            gathered = block[: len(picked)]
            # mode="clip": with "raise" numpy buffers ``out`` (measured 1-2 ms
            # more at a million rows); these indexes come from this matrix.
            np.take(self._rows, picked, axis=0, out=gathered, mode="clip")
            np.einsum(
                "ij,j->i",
                gathered,
                query,
                dtype=np.float32,
                out=scores[start : start + len(picked)],
            )
        scores *= self._inverse_norms[rows]
        return scores

    def best(
        self,
        query: Sequence[float],
        limit: int,
        allowed: Any | None = None,
        skip: set[tuple[str, str]] | None = None,
    ) -> list[tuple[str, str, int | None, float]]:
        """(kind, ref, conversation_id, cosine) of the ``limit`` best items, best first.

        ``allowed`` is a boolean mask over rows (None: all); items in ``skip``
        are left out. An item with several chunks counts once, by its best
        chunk. Exact up to ``exact_rows`` rows; beyond, among the rows whose
        codes are nearest (see the module docstring).
        """
        np = self._np
        if limit <= 0 or not len(self):
            return []
        q = np.asarray(query, dtype=np.float32)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        take = max(
            self.min_rescored,
            self.rescored_per_result * limit,
            int(self.rescored_share * len(self)),
        )
        while True:
            rows, complete = self._candidates(q, allowed, take)
            found = self._best_items(rows, self.scores_of(rows, q), limit, skip)
            if len(found) >= limit or complete:
                return found
            # Short after skips and chunk duplicates: look further.
            take *= 4

    def _best_items(
        self, rows: Any, scores: Any, limit: int, skip: set[tuple[str, str]] | None
    ) -> list[tuple[str, str, int | None, float]]:
        """The ``limit`` best distinct items among scored ``rows``, best first.

        The order is that of a stable sort of every score (ties: lower row
        first), but only the best few are sorted: a full argsort of 100,000
        scores cost 25 ms a search, the partition ~1 ms. Widened when chunks
        of one item and skipped items leave it short.
        """
        np = self._np
        wanted = min(len(scores), max(4 * limit, 64))
        while True:
            if wanted < len(scores):
                # Every row scoring at least the ``wanted``-th best, ties included,
                # so the stable order of these is the full order's beginning.
                kth = np.partition(scores, len(scores) - wanted)[len(scores) - wanted]
                picked = np.flatnonzero(scores >= kth)
            else:
                picked = np.arange(len(scores))
            order = picked[np.argsort(-scores[picked], kind="stable")]
            found: dict[tuple[str, str], tuple[str, str, int | None, float]] = {}
            for at in order.tolist():
                index = int(rows[at])  # a range or an index array
                key = self._ref(index)
                if key not in found and (skip is None or key not in skip):
                    conversation = int(self._conversations[index])
                    found[key] = (
                        key[0],
                        key[1],
                        None if conversation < 0 else conversation,
                        float(scores[at]),
                    )
                    if len(found) >= limit:
                        return list(found.values())
            if len(picked) >= len(scores):
                return list(found.values())
            wanted *= 4

    def mask(self, kinds: Sequence[str], conversation_ids: Sequence[int] | None) -> Any | None:
        """Rows of the given kinds and, if given, conversations (None: every row).

        Memories have no conversation: the caller checks their project.
        """
        np = self._np
        n = self._size
        parts: list[Any] = []
        if set(kinds) != set(KIND_CODES):
            codes = np.asarray([KIND_CODES[k] for k in kinds], dtype=np.int8)
            parts.append(np.isin(self._kind_codes[:n], codes))
        if conversation_ids is not None:
            conversations = self._conversations[:n]
            in_scope = np.isin(conversations, np.asarray(conversation_ids, dtype=np.int64))
            parts.append(in_scope | (conversations < 0))
        if not parts:
            return None
        mask = parts[0]
        for part in parts[1:]:
            mask = mask & part
        return mask

    def _positions(self, items: Iterable[tuple[str, str]]) -> list[int]:
        np = self._np
        rows: list[int] = []
        wanted: list[int] = []
        for kind, ref in items:
            if kind == "message":
                if ref.isdigit():
                    wanted.append(int(ref))
            else:
                rows.extend(self._named_positions.get((kind, ref), ()))
        if wanted:
            if self._sorted_messages is None:
                ids = self._message_ids[: self._size]
                order = np.argsort(ids, kind="stable")
                self._sorted_messages = (ids[order], order)
            sorted_ids, order = self._sorted_messages
            keys = np.asarray(wanted, dtype=np.int64)
            left = np.searchsorted(sorted_ids, keys, side="left")
            right = np.searchsorted(sorted_ids, keys, side="right")
            for lo, hi in zip(left.tolist(), right.tolist(), strict=True):
                rows.extend(order[lo:hi].tolist())
        return rows

    def similarity_of(
        self, query: Sequence[float], items: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], float]:
        """The best chunk's cosine of each item that has a vector."""
        np = self._np
        rows = self._positions(dict.fromkeys(items))
        if not rows:
            return {}
        q = np.asarray(query, dtype=np.float32)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        index = np.asarray(rows)
        out: dict[tuple[str, str], float] = {}
        for i, score in zip(rows, self.scores_of(index, q).tolist(), strict=True):
            key = self._ref(i)
            out[key] = max(out.get(key, -1.0), float(score))
        return out

    def neighbours(
        self, origins: Sequence[tuple[int, int, int]], before: int, after: int
    ) -> dict[int, list[MessageNeighbour]]:
        """Around each origin (message id, conversation id, seq): the messages
        from ``before`` earlier to ``after`` later in its conversation that have
        a chunk-0 row, in seq order. Each vector is a view of its int8 row, not
        a copy (600 copies a search cost ~1 ms)."""
        np = self._np
        if not origins or not self._size:
            return {}
        if self._by_place is None:
            n = self._size
            first = (self._kind_codes[:n] == KIND_CODES["message"]) & (self._chunks[:n] == 0)
            first &= self._seqs[:n] >= 0
            rows = np.flatnonzero(first)
            # One sortable key per message: a conversation's seqs stay far below 2**32.
            keys = (self._conversations[rows] << 32) | self._seqs[rows]
            order = np.argsort(keys, kind="stable")
            self._by_place = (keys[order], rows[order])
        keys, rows = self._by_place
        place = np.asarray([(c << 32) | s for _, c, s in origins], dtype=np.int64)
        start = np.asarray([c << 32 for _, c, _ in origins], dtype=np.int64)
        low = np.searchsorted(keys, np.maximum(place - before, start), side="left")
        high = np.searchsorted(keys, place + after, side="right")
        counts = (high - low).tolist()
        taken = rows[np.concatenate([np.arange(a, b) for a, b in zip(low, high, strict=True)])]
        seqs = self._seqs[taken].tolist()
        ids = self._message_ids[taken].tolist()
        flat = memoryview(self._rows.reshape(-1))  # rows as slices of one flat view
        found: dict[int, list[MessageNeighbour]] = {}
        at = 0
        for (message_id, _, seq), count in zip(origins, counts, strict=True):
            if count:
                found[message_id] = [
                    MessageNeighbour(
                        seqs[i] - seq, ids[i], flat[r * DIMENSIONS : (r + 1) * DIMENSIONS]
                    )
                    for i, r in enumerate(taken[at : at + count].tolist(), at)
                ]
            at += count
        return found
