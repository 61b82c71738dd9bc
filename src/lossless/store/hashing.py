"""Content hashes recorded at ingest and recomputed by ``lcm verify``.

One definition for both backends: migration 0007 computes the same hex
SHA-256 in SQL (PostgreSQL) or through these functions registered on the
connection (SQLite) for rows stored before it. Fields are joined with the
unit separator; a missing (NULL) field is the record separator alone, so
"no text" and "empty text" hash differently. Metadata is not hashed: JSON
backends may reorder keys, and the content is what must be byte-exact.

SQLite keeps a hash as its 32 bytes (a BLOB in the TEXT column, ``stored``):
three hashes a message are ~10% of a store of short messages in hex text.
Rows hashed before, by migration 0007 or in SQL, hold the hex text; both
read alike through ``recorded`` (``lcm gc`` turns the text into bytes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _hashlib import HASH

__all__ = [
    "message_digest",
    "message_hash",
    "part_digest",
    "part_hash",
    "raw_digest",
    "raw_hash",
    "recorded",
    "stored",
]

_SEP = "\x1f"
_NULL = "\x1e"


def _first_sha256(data: bytes) -> HASH:
    """hashlib's SHA-256, imported by the first hash: a command that only reads
    the store (``lcm grep``, ``status``) does not load its OpenSSL binding (~2 ms)."""
    global _sha256
    from hashlib import sha256

    _sha256 = sha256
    return sha256(data)


_sha256: Callable[[bytes], HASH] = _first_sha256


def _digest(text: str) -> bytes:
    return _sha256(text.encode("utf-8", "surrogatepass")).digest()


# The digests are what SQLite stores (``stored``'s bytes, without the hex text
# in between: three hashes a message on every import); the hex hashes are
# what PostgreSQL stores and what ``lcm verify`` compares.
def message_digest(role: str, content: str) -> bytes:
    return _digest(_SEP.join(("m", role, content)))


def part_digest(
    kind: str, text: str | None, tool_name: str | None, tool_call_id: str | None
) -> bytes:
    # Spelt out, not a generator over the fields: two parts a message on every import.
    return _digest(
        _SEP.join(
            (
                "p",
                kind,
                _NULL if text is None else text,
                _NULL if tool_name is None else tool_name,
                _NULL if tool_call_id is None else tool_call_id,
            )
        )
    )


def raw_digest(raw: str) -> bytes:
    return _digest(raw)


def message_hash(role: str, content: str) -> str:
    return message_digest(role, content).hex()


def part_hash(kind: str, text: str | None, tool_name: str | None, tool_call_id: str | None) -> str:
    return part_digest(kind, text, tool_name, tool_call_id).hex()


def raw_hash(raw: str) -> str:
    return raw_digest(raw).hex()


def stored(hex_digest: str) -> bytes:
    """A hash as SQLite stores it: its bytes, half the size of its hex text."""
    return bytes.fromhex(hex_digest)


def recorded(value: str | bytes | None) -> str | None:
    """A stored hash (bytes, or the hex text of rows hashed before) as hex text."""
    return value.hex() if isinstance(value, bytes) else value
