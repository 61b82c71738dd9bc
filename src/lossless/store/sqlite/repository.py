"""What every SQLite repository shares: its base class and row decoding.

Raw lines are stored packed (``lossless.store.raw_packing``); everything
else about a row is mapped by ``lossless.store.rows``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lossless.models import (
    JSON,
    Conversation,
    Message,
    Summary,
)
from lossless.store import rows
from lossless.store.hashing import message_hash, part_hash, raw_hash, stored
from lossless.store.lexical import index_text

if TYPE_CHECKING:
    from lossless.store.sqlite.store import SQLiteStore


def decode_json(text: str | None) -> JSON | None:
    return None if text is None else json.loads(text)


def register_hash_functions(db: sqlite3.Connection, unpack: Callable[[str | bytes], str]) -> None:
    """The content-hash functions migration 0007 and rewrites use in SQL
    (the same definitions as ``lossless.store.hashing``); ``unpack`` reads a
    stored raw line (``lossless.store.raw_packing``)."""
    db.create_function("lcm_message_hash", 2, message_hash, deterministic=True)
    db.create_function("lcm_part_hash", 4, part_hash, deterministic=True)
    db.create_function("lcm_raw_hash", 1, lambda raw: raw_hash(unpack(raw)), deterministic=True)
    # Hex text to the bytes SQLite keeps (``hashing.stored``); bytes and NULL pass.
    db.create_function(
        "lcm_stored_hash",
        1,
        lambda value: stored(value) if isinstance(value, str) else value,
        deterministic=True,
    )


def register_search_functions(db: sqlite3.Connection) -> None:
    """``lcm_search_text``: a text as the word indexes read it (migration 0009)."""
    db.create_function(
        "lcm_search_text",
        1,
        lambda text: index_text(text) if isinstance(text, str) else text,
        deterministic=True,
    )


def register_vector_functions(db: sqlite3.Connection) -> None:
    """``lcm_centred_vector``: a stored int8 vector centred on its model's
    shipped mean (migration 0013, ``lossless.embeddings.centring``); a
    model without a mean keeps its vector. Imports nothing until called."""

    def centred(model: str, blob: bytes | None) -> bytes | None:
        from lossless.embeddings.centring import model_mean
        from lossless.store.vector_codec import centre_int8

        mean = model_mean(model)
        if blob is None or mean is None:
            return blob
        return centre_int8(bytes(blob), mean.vector)

    db.create_function("lcm_centred_vector", 2, centred, deterministic=True)


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
