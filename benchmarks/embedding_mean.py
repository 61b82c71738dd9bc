"""Compute the mean vector that ``lossless.embeddings.centring`` removes, and write it.

Not a benchmark: the recipe of the shipped constant
``src/lossless/embeddings/means/<model>.json``, and the check of how much the
choice of corpus matters. The shipped mean is that of LoCoMo's even-numbered
conversations (0, 2, ..., 8: the tuning split of ``bench_locomo.py``; the
odd ones, on which recall is reported, take no part), every turn built and
imported as ``bench_locomo.py`` does and embedded as a passage, each vector
read back through the store's int8 encoding as search reads it. With
``--transcripts`` it also computes the mean of the real agent transcripts
(Claude Code sessions, MIT; Codex rollouts, Apache-2.0: the permissively
licensed candidate, see docs/benchmarks.md): every chunk the background
worker gives a vector (``engine.embedding.chunks_of``), each distinct text
embedded once and weighted by how often it is stored; it prints the cosine
between the two means, and ``--transcripts-out PATH`` writes that mean in
the shipped file's format (to try it, not to ship: LoCoMo recall decides).

Usage::

    .venv/bin/python benchmarks/embedding_mean.py                  # prints the summary
    .venv/bin/python benchmarks/embedding_mean.py --write          # and rewrites the JSON
    .venv/bin/python benchmarks/embedding_mean.py --transcripts    # and the transcripts' mean
    .venv/bin/python benchmarks/embedding_mean.py --transcripts --transcripts-out /tmp/mean.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bench_locomo
import common


def locomo_even_turns() -> list[str]:
    """Every turn of the even-numbered conversations, as ``bench_locomo`` stores it."""
    samples: list[dict[str, Any]] = json.loads(bench_locomo.LOCOMO.read_text(encoding="utf-8"))
    return [t.text for n, s in enumerate(samples) if n % 2 == 0 for t in bench_locomo.turns_of(s)]


def transcript_chunks(home: Path) -> dict[str, int]:
    """Every chunk the worker embeds for the real transcripts, with how often it is stored."""
    from lossless import Engine
    from lossless.embeddings.models import DEFAULT_MODEL, spec_of
    from lossless.engine.embedding import chunks_of

    files = [(p, "claude-code") for p in sorted((common.DATA / "claude-code").rglob("*.jsonl"))]
    files += [(p, "codex") for p in sorted((common.DATA / "codex").rglob("*.jsonl"))]
    max_chars = spec_of(DEFAULT_MODEL).max_chars
    chunks: dict[str, int] = {}
    with Engine.open(home) as engine:
        for path, kind in files:
            engine.import_file(path, kind, final=True)  # type: ignore[arg-type]
        # Nothing is stored here, so non-message items come back on every call;
        # messages are paged by id, as the worker pages them.
        seen: set[tuple[str, str]] = set()
        after = 0
        while True:
            items = engine.store.vectors.pending(DEFAULT_MODEL, limit=500, after_message_id=after)
            new = [i for i in items if (i.kind, i.ref) not in seen]
            if not new:
                break
            for item in new:
                seen.add((item.kind, item.ref))
                for chunk in chunks_of(item, max_chars):
                    chunks[chunk] = chunks.get(chunk, 0) + 1
            after = max([after, *(int(i.ref) for i in new if i.kind == "message")])
    return chunks


def raw_mean(embedder: Any, texts: list[str], weights: list[int] | None = None) -> Any:
    """The (weighted) mean of the model's own unit vectors, each read back through int8."""
    import numpy as np

    from lossless.store.vector_codec import from_int8, to_int8

    rows = [np.asarray(from_int8(to_int8(v)), dtype=np.float64) for v in embedder.passages(texts)]
    matrix = np.stack(rows)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    w = np.ones(len(texts)) if weights is None else np.asarray(weights, dtype=np.float64)
    return w @ matrix / w.sum()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite the shipped JSON")
    parser.add_argument("--transcripts", action="store_true", help="compare with the transcripts")
    parser.add_argument(
        "--transcripts-out", type=Path, help="write the transcripts' mean here (to try it)"
    )
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
            chunks = transcript_chunks(Path(home))
        started = time.process_time()
        other = raw_mean(embedder, list(chunks), list(chunks.values()))
        cosine = float(other @ mean / np.linalg.norm(other) / np.linalg.norm(mean))
        print(
            f"transcripts: {sum(chunks.values()):,} chunks ({len(chunks):,} distinct) embedded "
            f"in {time.process_time() - started:.0f} CPU s; |mean| = {np.linalg.norm(other):.3f}; "
            f"cosine with LoCoMo's = {cosine:.3f}"
        )
        if args.transcripts_out:
            record = {
                "model": spec.name,
                "corpus": (
                    "the real agent transcripts of shared/data (Claude Code sessions from "
                    "github.com/marot/spotter, MIT; Codex rollouts from "
                    "github.com/codemie-ai/codemie-code, Apache-2.0): every chunk the worker "
                    "embeds, as lcm import stores them, embedded as passages, weighted by how "
                    "often each is stored"
                ),
                "recipe": "benchmarks/embedding_mean.py --transcripts --transcripts-out PATH",
                "texts": sum(chunks.values()),
                "mean": [round(float(x), 7) for x in other],
            }
            args.transcripts_out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
            print(f"written: {args.transcripts_out}")
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
