"""What every PostgreSQL repository shares: its base class, row types and column lists."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg

from lossless.errors import (
    StoreError,
)
from lossless.models import (
    Conversation,
    Message,
    Summary,
)
from lossless.store import rows

if TYPE_CHECKING:
    from lossless.store.postgres.store import PostgresStore


Row = dict[str, Any]
Conn = psycopg.Connection[Row]

MESSAGE_COLUMNS = (
    "m.id, m.conversation_id, m.seq, m.role, m.content, m.token_count, m.created_at, "
    "m.ingest_key, m.metadata"
)
SUMMARY_COLUMNS = (
    "s.id, s.conversation_id, s.kind, s.depth, s.content, s.token_count, s.earliest_at, "
    "s.latest_at, s.descendant_count, s.source_token_count, s.file_ids, s.metadata, s.created_at"
)


def already_decoded(value: Any) -> Any:
    # psycopg decodes json columns already.
    return value


def to_conversation(row: Any) -> Conversation:
    return rows.conversation(row, already_decoded)


def to_message(row: Any) -> Message:
    return rows.message(row, already_decoded)


def to_summary(row: Any) -> Summary:
    return rows.summary(row, already_decoded)


class Repo:
    def __init__(self, store: PostgresStore) -> None:
        self.s = store


def lock_conversation(conn: Conn, conversation_id: int) -> None:
    row = conn.execute(
        "SELECT id FROM conversations WHERE id = %s FOR NO KEY UPDATE", [conversation_id]
    ).fetchone()
    if row is None:
        raise StoreError(f"conversation {conversation_id} does not exist")
