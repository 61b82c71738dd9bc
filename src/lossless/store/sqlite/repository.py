"""What every SQLite repository shares: its base class and row decoding.

Raw lines of at least ``PACK_MIN_CHARS`` characters are stored zlib-packed
(see ``pack_raw``); everything else about a row is mapped by ``lossless.store.rows``.
"""

from __future__ import annotations

import json
import zlib
from typing import TYPE_CHECKING, Any

from lossless.errors import StoreError
from lossless.models import (
    JSON,
    Conversation,
    Message,
    Summary,
)
from lossless.store import rows

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
# inside the transcript line, so the text would be stored twice. Such a line
# is stored as a template: the line with the escaped text cut out (a U+0000
# marks the place; no stored text holds one), rebuilt on reading from the
# message's content, which is exactly what was cut out. The first byte of the
# BLOB says how the text was escaped and whether the template is compressed;
# zlib streams start with 0x78, so they are told apart.
TEMPLATE_MIN_CHARS = 32
_TEMPLATES = {
    b"\x01": (False, False),  # (escaped with ensure_ascii, template zlib-compressed)
    b"\x02": (True, False),
    b"\x03": (False, True),
    b"\x04": (True, True),
}
_TEMPLATE_MARKERS = {flags: marker for marker, flags in _TEMPLATES.items()}


def _escaped(content: str, ascii_only: bool) -> str:
    return json.dumps(content, ensure_ascii=ascii_only)[1:-1]


def pack_raw(raw: str, content: str | None = None) -> str | bytes:
    """The stored form of a native record's line; ``content`` is its message's text."""
    if content is not None and len(content) >= TEMPLATE_MIN_CHARS:
        for ascii_only in (False, True):
            escaped = _escaped(content, ascii_only)
            at = raw.find(escaped)
            if at >= 0:
                body = (raw[:at] + "\x00" + raw[at + len(escaped) :]).encode("utf-8")
                packed = len(body) >= PACK_MIN_CHARS
                if packed:
                    body = zlib.compress(body, 1)
                return _TEMPLATE_MARKERS[(ascii_only, packed)] + body
    if len(raw) < PACK_MIN_CHARS:
        return raw
    return zlib.compress(raw.encode("utf-8"), 1)


def is_template(value: str | bytes) -> bool:
    return isinstance(value, bytes) and value[:1] in _TEMPLATES


def unpack_raw(value: str | bytes, content: str | None = None) -> str:
    """The line ``pack_raw`` stored, byte for byte; ``content`` as given to it."""
    if isinstance(value, str):
        return value
    flags = _TEMPLATES.get(value[:1])
    if flags is None:
        return zlib.decompress(value).decode("utf-8")
    ascii_only, packed = flags
    body = zlib.decompress(value[1:]) if packed else value[1:]
    if content is None:
        raise StoreError("a native record stored as a template has no message to rebuild it from")
    prefix, suffix = body.decode("utf-8").split("\x00", 1)
    return prefix + _escaped(content, ascii_only) + suffix


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
