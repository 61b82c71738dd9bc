"""Raw transcript lines packed with a zlib dictionary trained on the store's own lines.

A native record keeps its transcript line for provenance and export; what is
left of a line once the texts it repeats are references
(``lossless.store.stored_once``) is mostly the same keys and structure line
after line (``{"role": "tool", "tool_call_id": "call_…", "content": …,
"created_at": "2025-…"}``): ~115 bytes a line in the generated set, which
zlib alone cannot shrink (its per-stream cost eats what it finds in one short
line). Primed with a preset dictionary made of earlier lines of the same
store, deflate finds those keys in the dictionary instead: ~115 bytes become
~20. The dictionary is trained once per store, as soon as a batch and the
lines stored before it are enough to show what its lines look like (the
first import's first batch; a hook's appends once the store holds ~64
lines), and kept in the store (``raw_dictionaries``): a packed line names
its dictionary, so a dictionary is never changed or dropped once a line
uses it.

zstd's trained dictionaries are the usual tool for this, but a native
dependency that every hook would load (not measured against this); zlib's
preset dictionary is in the standard library.

A packed value is bytes: ``0x78…`` a plain zlib stream (lines packed before
dictionaries, from ``PLAIN_MIN_CHARS`` on), or ``0x01``, the dictionary's id
as an unsigned LEB128 number, then raw deflate data. A line is text when
packing would not make it smaller. Integrity is not the stream's job: the
raw hash recorded at ingest (``lcm verify``) covers every line as read back.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Final

__all__ = [
    "DICTIONARY_FORMAT",
    "PLAIN_MIN_CHARS",
    "TRAIN_MIN_LINES",
    "RawPacker",
    "train",
]

#: The first byte of a dictionary-packed line (a zlib stream starts with 0x78).
DICTIONARY_FORMAT: Final = 0x01
#: Without a dictionary, lines from this many characters on are zlib-packed
#: (shorter ones gain too little for zlib's per-stream cost; measured in 0010).
PLAIN_MIN_CHARS: Final = 512
#: A dictionary is trained from a batch of at least this many lines: fewer
#: say too little about what the store's lines look like.
TRAIN_MIN_LINES: Final = 64
# The dictionary's size: a line refers back into it at most this far. Short
# lines (most of them: what is left of a line once its texts are references)
# are packed by a compressor copied from one primed with the dictionary, and
# the copy's cost grows with the window and the hash table: a 4 KiB window
# and the smallest table (memLevel 1) keep it at ~10 us a line for the same
# size as the largest. Long lines need the large table (memLevel 1 packs
# the real transcripts' lines 10-16% worse) and a full window, and their
# deflate time dwarfs the copy. Measured on the generated set and the real
# transcripts; the decoder's 32 KiB window reads either.
_WINDOW_BYTES: Final = 4096
_SHORT = (6, 12, 1)  # level, window bits, memLevel
_LONG = (3, 15, 8)
# Each sample's head: a long line's structure is at its start, and one long
# line must not fill the dictionary alone.
_SAMPLE_CHARS: Final = 512


def train(lines: Sequence[str]) -> bytes | None:
    """A preset dictionary for lines like ``lines``, or None when they are too few.

    Samples spread over ``lines`` (each line's head), joined: deflate then
    finds the keys and structure the lines share at short distances. Later
    samples sit nearest the end of the dictionary, where references cost
    least; the order does not matter much, since the samples are alike.
    """
    if len(lines) < TRAIN_MIN_LINES:
        return None
    step = max(1, len(lines) // 64)
    picked: list[bytes] = []
    size = 0
    seen: set[str] = set()
    for line in reversed(lines[::step]):
        head = line[:_SAMPLE_CHARS]
        if head in seen:
            continue
        seen.add(head)
        sample = head.encode("utf-8", "surrogatepass")
        picked.append(sample)
        size += len(sample)
        if size >= _WINDOW_BYTES:
            break
    dictionary = b"".join(reversed(picked))[-_WINDOW_BYTES:]
    return dictionary or None


def _leb128(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_leb128(data: bytes, start: int) -> tuple[int, int]:
    value = shift = 0
    i = start
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i += 1
        if not byte & 0x80:
            return value, i
        shift += 7


class RawPacker:
    """Packs and unpacks one store's raw lines; knows the store's dictionaries.

    ``load`` reads every dictionary of the store (id -> bytes). What it read
    is cached; ``forget`` drops the cache, and a store calls it on every
    rollback, since a dictionary read inside a transaction that rolled back
    no longer exists (and its id may be given to another).
    """

    def __init__(self, load: Callable[[], Mapping[int, bytes]]) -> None:
        self._load = load
        self._dictionaries: dict[int, bytes] = {}
        # Per dictionary id and line length (short, long): a compressor primed
        # with it, copied for each line (priming hashes the whole dictionary;
        # a copy does not).
        self._primed: dict[tuple[int, bool], zlib._Compress] = {}

    def forget(self) -> None:
        # Replaced, not cleared: a thread reading a line between its load and
        # its look-up keeps the dictionaries it loaded.
        self._dictionaries = {}
        self._primed = {}

    def dictionary(self, dictionary_id: int) -> bytes:
        found = self._dictionaries.get(dictionary_id)
        if found is None:
            loaded = dict(self._load())
            self._dictionaries = loaded
            found = loaded.get(dictionary_id)
            if found is None:
                raise LookupError(f"raw line packed with dictionary {dictionary_id}, not stored")
        return found

    def pack(self, raw: str, dictionary_id: int | None, dictionary: bytes | None) -> str | bytes:
        """``raw`` as stored: packed with the dictionary when one is given and it
        makes the line smaller, else as without one."""
        if dictionary_id is None or dictionary is None:
            if len(raw) < PLAIN_MIN_CHARS:
                return raw
            return zlib.compress(raw.encode("utf-8"), 1)
        data = raw.encode("utf-8")
        key = (dictionary_id, len(data) >= PLAIN_MIN_CHARS)
        primed = self._primed.get(key)
        if primed is None:
            level, window_bits, mem_level = _LONG if key[1] else _SHORT
            primed = zlib.compressobj(
                level, zlib.DEFLATED, -window_bits, mem_level, zdict=dictionary
            )
            self._primed[key] = primed
        compressor = primed.copy()
        body = compressor.compress(data) + compressor.flush()
        header = bytes((DICTIONARY_FORMAT,)) + _leb128(dictionary_id)
        if len(header) + len(body) >= len(data):
            return raw
        return header + body

    def unpack(self, value: str | bytes) -> str:
        """The line ``pack`` stored as ``value``."""
        if isinstance(value, str):
            return value
        if value[:1] != bytes((DICTIONARY_FORMAT,)):
            return zlib.decompress(value).decode("utf-8")
        dictionary_id, start = _read_leb128(value, 1)
        decompressor = zlib.decompressobj(-15, zdict=self.dictionary(dictionary_id))
        data = decompressor.decompress(value[start:]) + decompressor.flush()
        return data.decode("utf-8")
