"""What every SQLite repository shares: its base class and row decoding.

Raw lines of at least ``PACK_MIN_CHARS`` characters are stored zlib-packed
(see ``pack_raw``); everything else about a row is mapped by ``lossless.store.rows``.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lossless.errors import StoreError
from lossless.models import (
    JSON,
    Conversation,
    Message,
    Summary,
)
from lossless.store import rows
from lossless.store.hashing import message_hash, part_hash, raw_hash

if TYPE_CHECKING:
    from lossless.store.sqlite.store import SQLiteStore


def decode_json(text: str | None) -> JSON | None:
    return None if text is None else json.loads(text)


# A native record is a transcript line kept verbatim for provenance and export,
# never searched. A long one is stored zlib-compressed (a BLOB in its TEXT
# column; short rows, and rows written before, are text and read as they
# are). Native records were the largest table: a real transcript line repeats
# its tool output in several fields. Lines of 4,096+ characters hold half of
# the real transcripts' raw bytes; compressing them saves 37% of all raw bytes
# for ~0.07 s of CPU per 11 MB, where every line would cost 8x that (zlib's
# set-up per call dominates on short lines) to save 57%.
PACK_MIN_CHARS = 4096


# A message's native record usually holds the message's text again, JSON-escaped
# inside the transcript line (its content, or the text of one of its parts when
# the content is rendered from several), so the text would be stored twice.
# Such a line is stored as a template: the line with the longest such text cut
# out (a U+0000 marks the place; no stored text holds one), rebuilt on reading
# from that text, which is exactly what was cut out. The BLOB starts with a
# byte saying how the text was escaped and whether the template is compressed
# (zlib streams start with 0x78, so they are told apart), then which text it
# was: ``0:`` the content, ``N:`` the part of ordinal N - 1.
TEMPLATE_MIN_CHARS = 32
_TEMPLATES = {
    b"\x01": (False, False),  # (escaped with ensure_ascii, template zlib-compressed)
    b"\x02": (True, False),
    b"\x03": (False, True),
    b"\x04": (True, True),
}
_TEMPLATE_MARKERS = {flags: marker for marker, flags in _TEMPLATES.items()}


def _escaped(text: str, ascii_only: bool) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)[1:-1]


def pack_raw(raw: str, texts: Sequence[str | None] = ()) -> str | bytes:
    """The stored form of a native record's line; ``texts`` are its message's
    content and then its parts' texts, by ordinal (see ``template_source``)."""
    best: tuple[int, int, bool, str] | None = None  # (length, source, ascii_only, escaped)
    for source, text in enumerate(texts):
        if text is None or len(text) < TEMPLATE_MIN_CHARS or (best and len(text) <= best[0]):
            continue
        for ascii_only in (False, True):
            escaped = _escaped(text, ascii_only)
            if escaped in raw:
                best = (len(text), source, ascii_only, escaped)
                break
    if best is not None:
        _, source, ascii_only, escaped = best
        at = raw.find(escaped)
        body = (raw[:at] + "\x00" + raw[at + len(escaped) :]).encode("utf-8")
        packed = len(body) >= PACK_MIN_CHARS
        if packed:
            body = zlib.compress(body, 1)
        return _TEMPLATE_MARKERS[(ascii_only, packed)] + f"{source}:".encode() + body
    if len(raw) < PACK_MIN_CHARS:
        return raw
    return zlib.compress(raw.encode("utf-8"), 1)


def template_source(value: str | bytes) -> int | None:
    """Which text a stored line was cut from (0 content, N part ordinal N - 1);
    None if it is stored whole."""
    if not isinstance(value, bytes) or value[:1] not in _TEMPLATES:
        return None
    return int(value[1 : value.index(b":")])


def unpack_raw(value: str | bytes, text: str | None = None) -> str:
    """The line ``pack_raw`` stored, byte for byte; ``text`` is the one it was
    cut from (``template_source``), for a template."""
    if isinstance(value, str):
        return value
    flags = _TEMPLATES.get(value[:1])
    if flags is None:
        return zlib.decompress(value).decode("utf-8")
    ascii_only, packed = flags
    body = value[value.index(b":") + 1 :]
    if packed:
        body = zlib.decompress(body)
    if text is None:
        raise StoreError("a native record stored as a template has lost the text it was cut from")
    prefix, suffix = body.decode("utf-8").split("\x00", 1)
    return prefix + _escaped(text, ascii_only) + suffix


def register_hash_functions(db: sqlite3.Connection) -> None:
    """The content-hash functions migration 0007 and rewrites use in SQL
    (the same definitions as ``lossless.store.hashing``)."""
    db.create_function("lcm_message_hash", 2, message_hash, deterministic=True)
    db.create_function("lcm_part_hash", 4, part_hash, deterministic=True)
    db.create_function("lcm_raw_hash", 1, lambda raw: raw_hash(unpack_raw(raw)), deterministic=True)


def to_conversation(row: Any) -> Conversation:
    return rows.conversation(row, decode_json)


def to_message(row: Any) -> Message:
    return rows.message(row, decode_json)


def to_summary(row: Any) -> Summary:
    return rows.summary(row, decode_json)


class Repo:
    def __init__(self, store: SQLiteStore) -> None:
        self.s = store
        self.db = store._db
