"""Computing the vectors semantic search needs, behind the writes.

Nothing on a hook's or an import's path embeds: the background worker calls
``embed_backlog`` when it has no compaction to do, a few seconds at a time,
and ``lcm embed`` (or ``Engine.embed``) runs it in the foreground with
progress. Each batch is its own transaction, so stopping loses nothing, and
search uses whatever is embedded so far (``semantic_status`` says how much).
"""

from __future__ import annotations

import time
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lossless.embeddings.chunks import FILE_CHUNKS, MESSAGE_CHUNKS, chunk_text, prose_end
from lossless.store.contract import EmbeddingProgress, EmbeddingSource, NewVector, Store

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.embeddings.loader import Embedder

# Items per batch: one model call and one short transaction.
BATCH_ITEMS = 32
COVERAGE = (
    f"vectors of each message's own words (up to {MESSAGE_CHUNKS} chunks of "
    "text) and of the start of its tool calls and output; summaries, memories, "
    f"large files (up to {FILE_CHUNKS} chunks); full text searches everything"
)
# Vectors of recently embedded chunks, by their text's hash: agents read the
# same file, run the same command and paste the same error again and again
# (14 % of the real transcripts' chunks repeat one before them). 1.5 KB each.
_REUSE_CHUNKS = 4096


class _RecentVectors:
    """The last ``size`` chunks' vectors, keyed by (model, sha1 of the text)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._vectors: OrderedDict[tuple[str, bytes], array[float]] = OrderedDict()

    def get(self, key: tuple[str, bytes]) -> array[float] | None:
        found = self._vectors.get(key)
        if found is not None:
            self._vectors.move_to_end(key)
        return found

    def put(self, key: tuple[str, bytes], vector: Sequence[float]) -> None:
        self._vectors[key] = array("f", vector)
        self._vectors.move_to_end(key)
        while len(self._vectors) > self.size:
            self._vectors.popitem(last=False)


# One per process: the worker embeds in slices of a few seconds, each its own call.
_RECENT = _RecentVectors(_REUSE_CHUNKS)


def _key(model: str, text: str) -> tuple[str, bytes]:
    import hashlib  # not at the top: `lcm status` reads semantic_status, not hashes (~2 ms)

    return model, hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()


@dataclass(slots=True)
class EmbeddingRun:
    """What one ``embed_backlog`` call did."""

    items: int = 0
    chunks: int = 0
    """Chunks stored (reused ones included)."""
    reused: int = 0
    """Chunks whose vector was reused from an identical text, not computed."""
    seconds: float = 0.0
    cpu_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class SemanticStatus:
    """Whether search can be semantic here, and how much of the store it covers."""

    model: str | None
    reason: str | None
    """Why search is lexical only (None when semantic search is on)."""
    progress: EmbeddingProgress | None

    @property
    def active(self) -> bool:
        return self.reason is None

    @property
    def coverage(self) -> str:
        """What of the store vectors are computed for (the rest is full text only)."""
        return COVERAGE

    def describe(self) -> str:
        if self.reason is not None:
            return self.reason
        assert self.progress is not None
        left = self.progress.total_pending
        if left == 0:
            return f"semantic: everything embedded ({self.model})"
        done = self.progress.total - left
        return f"semantic: {done:,} of {self.progress.total:,} items embedded (`lcm embed`)"


def semantic_status(store: Store, config: Config, *, with_progress: bool = True) -> SemanticStatus:
    """Whether vectors can be computed and searched here; never loads the model."""
    from lossless.embeddings.loader import unavailable_reason

    model = config.semantic_model
    if not config.semantic_enabled:
        return SemanticStatus(model, "semantic search is off (semantic.enabled = false)", None)
    if store.capabilities.vector_search is None:
        why = store.capabilities.vector_search_off or (
            "this PostgreSQL server has no pgvector extension, or this role may not create it "
            "(install pgvector, or run CREATE EXTENSION vector as a superuser; lossless adds "
            "its tables at the next open)"
        )
        return SemanticStatus(model, f"semantic search is off: {why}", None)
    reason = unavailable_reason(model)
    if reason is not None:
        return SemanticStatus(model, reason, None)
    return SemanticStatus(model, None, store.vectors.progress(model) if with_progress else None)


def chunks_of(item: EmbeddingSource, max_chars: int) -> list[str]:
    """The texts of ``item`` that get a vector, in order (chunk 0 first)."""
    if item.kind == "message":
        return chunk_text(item.text, max_chars, MESSAGE_CHUNKS, until=prose_end(item.text))
    if item.kind != "file":
        return chunk_text(item.text, max_chars, MESSAGE_CHUNKS)
    # The exploration summary says what the file is; then its content.
    pieces = chunk_text(item.text, max_chars, 1)
    if item.path:
        try:
            with Path(item.path).open(encoding="utf-8", errors="replace") as handle:
                content = handle.read(max_chars * FILE_CHUNKS)
        except OSError:
            content = ""  # a missing content file: its summary still finds it
        pieces += chunk_text(content, max_chars, FILE_CHUNKS - len(pieces))
    return pieces


def embed_backlog(
    store: Store,
    embedder: Embedder,
    *,
    batch_items: int = BATCH_ITEMS,
    progress: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> EmbeddingRun:
    """Embed stored items that have no vector yet, batch by batch, until none
    is left or ``should_stop()``; ``progress`` gets each batch's item count."""
    model = embedder.spec.name
    run = EmbeddingRun()
    started, cpu_started = time.monotonic(), time.process_time()
    after = 0
    while should_stop is None or not should_stop():
        items = store.vectors.pending(model, limit=batch_items, after_message_id=after)
        if not items:
            break
        # Each distinct text is embedded once: repeats in the batch and texts
        # embedded recently reuse that vector.
        texts: dict[tuple[str, bytes], str] = {}
        owners: list[tuple[EmbeddingSource, int, tuple[str, bytes]]] = []
        rows: list[NewVector] = []
        known: dict[tuple[str, bytes], tuple[float, ...]] = {}
        for item in items:
            chunks = chunks_of(item, embedder.spec.max_chars)
            if not chunks:
                rows.append(NewVector(item.kind, item.ref, 0, item.conversation_id, None))
            for number, chunk in enumerate(chunks):
                key = _key(model, chunk)
                owners.append((item, number, key))
                if key in known or key in texts:
                    continue
                recent = _RECENT.get(key)
                if recent is not None:
                    known[key] = tuple(recent)
                else:
                    texts[key] = chunk
        for key, computed in zip(texts, embedder.passages(list(texts.values())), strict=True):
            known[key] = computed
            _RECENT.put(key, computed)
        for item, number, key in owners:
            vector = known[key]
            usable = vector if any(vector) else None
            rows.append(NewVector(item.kind, item.ref, number, item.conversation_id, usable))
        store.vectors.add(model, rows)
        run.items += len(items)
        run.chunks += len(owners)
        run.reused += len(owners) - len(texts)
        after = max([after, *(int(i.ref) for i in items if i.kind == "message")])
        if progress is not None:
            progress(len(items))
    run.seconds = time.monotonic() - started
    run.cpu_seconds = time.process_time() - cpu_started
    return run
