"""Compute the mean vector that ``lossless.embeddings.centring`` removes, and write it.

Not a benchmark: the recipe of the shipped constant
``src/lossless/embeddings/means/<model>.json``, and the check of how much the
choice of corpus matters. The shipped mean is that of LoCoMo's even-numbered
conversations (0, 2, ..., 8: the tuning split of ``bench_locomo.py``; the
odd ones, on which recall is reported, take no part), every turn built and
imported as ``bench_locomo.py`` does and embedded as a passage, each vector
read back through the store's int8 encoding as search reads it. With
``--transcripts`` it also prints the mean of the real agent transcripts (a
seeded sample of their messages' first chunks) and the cosine between the
two, the comparison docs/benchmarks.md reports.

Usage::

    .venv/bin/python benchmarks/embedding_mean.py                  # prints the summary
    .venv/bin/python benchmarks/embedding_mean.py --write          # and rewrites the JSON
    .venv/bin/python benchmarks/embedding_mean.py --transcripts    # and the transcripts' mean
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bench_locomo
import common

TRANSCRIPT_SAMPLE = 600
SEED = 13


def locomo_even_turns() -> list[str]:
    """Every turn of the even-numbered conversations, as ``bench_locomo`` stores it."""
    samples: list[dict[str, Any]] = json.loads(bench_locomo.LOCOMO.read_text(encoding="utf-8"))
    return [t.text for n, s in enumerate(samples) if n % 2 == 0 for t in bench_locomo.turns_of(s)]


def transcript_texts(home: Path) -> list[str]:
    """Chunk 0 of every non-blank message of the real transcripts, by message id."""
    from lossless import Engine
    from lossless.embeddings.chunks import chunk_text
    from lossless.embeddings.models import DEFAULT_MODEL, spec_of

    files = sorted((common.DATA / "claude-code").rglob("*.jsonl"))
    files += sorted((common.DATA / "codex").rglob("*.jsonl"))
    max_chars = spec_of(DEFAULT_MODEL).max_chars
    texts: dict[int, str] = {}
    with Engine.open(home) as engine:
        for path in files:
            engine.import_file(path, final=True)
        for conversation in engine.store.conversations.list():
            for message in engine.store.messages.iter_all(conversation.id):
                chunks = chunk_text(message.content or "", max_chars, 1)
                if chunks:
                    texts[message.id] = chunks[0]
    return [texts[i] for i in sorted(texts)]


def raw_mean(embedder: Any, texts: list[str]) -> Any:
    """The mean of the model's own unit vectors, each read back through int8."""
    import numpy as np

    from lossless.store.vector_codec import from_int8, to_int8

    rows = [np.asarray(from_int8(to_int8(v)), dtype=np.float64) for v in embedder.passages(texts)]
    matrix = np.stack(rows)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix.mean(axis=0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite the shipped JSON")
    parser.add_argument("--transcripts", action="store_true", help="compare with the transcripts")
    args = parser.parse_args(argv)

    import numpy as np

    from lossless.embeddings import centring
    from lossless.embeddings.loader import E5Embedder, verify_weights, weights_path
    from lossless.embeddings.models import DEFAULT_MODEL, spec_of

    spec = spec_of(DEFAULT_MODEL)
    path = weights_path(spec)
    verify_weights(spec, path)
    embedder = E5Embedder(spec, path, threads=1)
    embedder._mean = None  # the model's own vectors: the mean is computed from them
    turns = locomo_even_turns()
    started = time.process_time()
    mean = raw_mean(embedder, turns)
    print(
        f"LoCoMo even conversations: {len(turns):,} turns embedded in "
        f"{time.process_time() - started:.0f} CPU s; |mean| = {np.linalg.norm(mean):.3f}"
    )
    shipped = centring.model_mean(spec.name)
    if shipped is not None and not args.write:
        gap = float(np.max(np.abs(np.asarray(shipped.vector) - mean)))
        print(f"largest difference from the shipped mean: {gap:.2e}")
    if args.transcripts:
        with tempfile.TemporaryDirectory(prefix="lcm-mean-") as home:
            texts = transcript_texts(Path(home))
        sample = random.Random(SEED).sample(texts, min(TRANSCRIPT_SAMPLE, len(texts)))
        other = raw_mean(embedder, sample)
        cosine = float(other @ mean / np.linalg.norm(other) / np.linalg.norm(mean))
        print(
            f"transcripts: {len(sample)} of {len(texts):,} messages; "
            f"|mean| = {np.linalg.norm(other):.3f}; cosine with LoCoMo's = {cosine:.3f}"
        )
    if args.write:
        target = Path(centring.__file__).parent / "means" / f"{spec.name}.json"
        target.parent.mkdir(exist_ok=True)
        record = {
            "model": spec.name,
            "corpus": (
                "LoCoMo (github.com/snap-research/LoCoMo, CC BY-NC 4.0), its even-numbered "
                "conversations only (0, 2, 4, 6, 8: the fusion weights' tuning split; the odd "
                f"ones, on which recall is reported, took no part): all {len(turns)} turns as "
                "lcm import stores them, embedded as passages"
            ),
            "recipe": "benchmarks/embedding_mean.py --write",
            "texts": len(turns),
            "mean": [round(float(x), 7) for x in mean],
        }
        target.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"written: {target} (migration 0013 and its test pin the file: see centring.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
