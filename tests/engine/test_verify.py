"""`lcm verify` finds nothing wrong in a healthy store and names each corruption."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from lossless.cli import cli
from lossless.engine.engine import Engine
from lossless.engine.verify import verify

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample-session.jsonl"
SMALL = {"fresh_tail_count": 8, "leaf_chunk_tokens": 800, "leaf_min_fanout": 3}


@pytest.fixture
def compacted(lcm_home: Path) -> Path:
    with Engine.open(lcm_home, **SMALL) as engine:
        result = engine.import_file(SAMPLE, final=True)
        assert result.messages_added == 120
        assert result.conversation_id is not None
        engine.compact(result.conversation_id)
        assert engine.store.stats().summaries >= 3
    return lcm_home / "lcm.db"


def problems(home: Path) -> list[str]:
    with Engine.open(home) as engine:
        return [str(p) for p in verify(engine.store).problems]


def test_healthy_store_verifies(compacted: Path, lcm_home: Path) -> None:
    assert problems(lcm_home) == []
    result = CliRunner().invoke(cli, ["verify", "--json"])
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["ok"] and report["messages"] == 120 and report["summaries"] >= 3


def test_real_transcripts_verify_after_compaction(shared_data: Path, lcm_home: Path) -> None:
    with Engine.open(lcm_home, **SMALL) as engine:
        for path in sorted((shared_data / "claude-code").rglob("*.jsonl"))[:3]:
            engine.import_file(path, final=True)
        for conversation in engine.store.conversations.list():
            engine.compact(conversation.id)
        report = verify(engine.store)
    assert report.ok, report.problems
    assert report.summaries > 0


def _sql(db: Path, statement: str) -> None:
    from lossless.store.sqlite.repository import register_search_functions

    connection = sqlite3.connect(db)
    # The word index's triggers call it (migration 0009).
    register_search_functions(connection)
    connection.execute(statement)
    connection.commit()
    connection.close()


def test_lost_context_item_is_reported(compacted: Path, lcm_home: Path) -> None:
    _sql(
        compacted,
        "DELETE FROM context_items WHERE ordinal = (SELECT max(ordinal) FROM context_items)",
    )
    found = problems(lcm_home)
    assert any("not reachable from the context" in p for p in found), found
    result = CliRunner().invoke(cli, ["verify"])
    assert result.exit_code == 1 and "not reachable" in result.stderr


def test_double_coverage_is_reported(compacted: Path, lcm_home: Path) -> None:
    _sql(
        compacted,
        "INSERT INTO context_items(conversation_id, ordinal, item_type, message_id, token_count) "
        "SELECT 1, 100000, 'message', id, token_count FROM messages WHERE seq = 0",
    )
    assert any("covered twice" in p for p in problems(lcm_home))


def test_sequence_gap_and_broken_link_are_reported(compacted: Path, lcm_home: Path) -> None:
    _sql(compacted, "UPDATE messages SET seq = seq + 1000 WHERE seq = 119")
    _sql(
        compacted,
        "UPDATE summary_parents SET parent_id = (SELECT id FROM summaries WHERE kind = 'condensed' "
        "LIMIT 1) WHERE ordinal = 0",
    )
    found = problems(lcm_home)
    assert any("expected 119 (gap)" in p for p in found), found
    assert any("is built from" in p and "depth" in p for p in found), found
    assert any("reached twice" in p for p in found), found


def test_tampered_content_is_named_by_id_and_fails(compacted: Path, lcm_home: Path) -> None:
    with Engine.open(lcm_home) as engine:
        message = engine.store.messages.list(1)[5]
        parts = engine.store.messages.parts([message.id])[message.id]
        record = next(r for r in engine.store.messages.native_records(1) if r.message_id)
    _sql(compacted, f"UPDATE messages SET content = 'TAMPERED' WHERE id = {message.id}")
    _sql(
        compacted,
        f"UPDATE message_parts SET text = 'x' WHERE message_id = {message.id} "
        f"AND ordinal = {parts[-1].ordinal}",
    )
    _sql(compacted, f"UPDATE native_records SET raw = '{{}}' WHERE id = {record.id}")
    _sql(compacted, "UPDATE messages SET content_hash = NULL WHERE seq = 0")
    found = problems(lcm_home)
    assert any(
        p.endswith(
            f"message {message.id}: content does not match the hash recorded "
            "when it was stored (changed outside lossless)"
        )
        for p in found
    ), found
    assert any(
        f"part {parts[-1].ordinal} of message {message.id}: content does not" in p for p in found
    ), found
    assert any(f"native record {record.id} (of message {record.message_id})" in p for p in found), (
        found
    )
    assert any("has no content hash" in p for p in found), found
    result = CliRunner().invoke(cli, ["verify"])
    assert (
        result.exit_code == 1 and f"message {message.id}: content does not match" in result.stderr
    )


def test_a_sanctioned_rewrite_keeps_the_store_whole(compacted: Path, lcm_home: Path) -> None:
    with Engine.open(lcm_home) as engine:
        message = engine.store.messages.list(1)[3]
        record = next(r for r in engine.store.messages.native_records(1) if r.message_id)
        engine.store.messages.rewrite(message.id, "[redacted]", message.metadata)
        engine.store.messages.rewrite_native_record(record.id, '{"redacted": true}')
    assert problems(lcm_home) == []


def _as_before_text_stored_once(lcm_home: Path) -> None:
    """Store every part text and raw line verbatim, as before migration 0010,
    and drop its columns and the tables of 0011 (embeddings), 0012 (context
    totals), 0014 (conversation totals) and 0015 (raw line dictionaries); the
    test removes the ledger rows from 0007 on."""
    with Engine.open(lcm_home, **SMALL) as engine:
        lines = {
            r.id: r.raw
            for c in engine.store.conversations.list()
            for r in engine.store.messages.native_records(c.id)
        }
    connection = sqlite3.connect(lcm_home / "lcm.db")
    connection.executemany(
        "UPDATE native_records SET raw = ?, raw_template = 0 WHERE id = ?",
        [(raw, i) for i, raw in lines.items()],
    )
    connection.execute(
        "UPDATE message_parts SET text = (SELECT substr(m.content, text_start + 1, text_len) "
        "FROM messages m WHERE m.id = message_parts.message_id) WHERE text_start IS NOT NULL"
    )
    for table, column in (
        ("message_parts", "text_start"),
        ("message_parts", "text_len"),
        ("native_records", "raw_template"),
    ):
        connection.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    # 0011 (embeddings): its tables and triggers, so it runs again alike.
    for trigger in (
        "embeddings_counted",
        "embeddings_deleted",
        "embeddings_message_rewritten",
        "embeddings_summary_rewritten",
        "embeddings_memory_rewritten",
        "embeddings_memory_deleted",
        "embeddings_file_rewritten",
    ):
        connection.execute(f"DROP TRIGGER {trigger}")
    for table in ("embeddings", "embedding_state", "embedding_counts"):
        connection.execute(f"DROP TABLE {table}")
    # 0012 (context totals): its triggers and table, so it runs again alike.
    for trigger in ("context_items_counted", "context_items_uncounted", "context_items_recounted"):
        connection.execute(f"DROP TRIGGER {trigger}")
    connection.execute("DROP TABLE context_totals")
    # 0014 (conversation totals): likewise.
    # (appends count their own inserts: only summaries and large files have an
    # insert trigger)
    for table in ("messages", "message_parts", "native_records", "summaries", "large_files"):
        for kind in ("uncounted", "recounted"):
            connection.execute(f"DROP TRIGGER {table}_{kind}")
    for table in ("summaries", "large_files"):
        connection.execute(f"DROP TRIGGER {table}_counted")
    connection.execute("DROP TABLE conversation_totals")
    # 0015 (raw line dictionaries): the lines are verbatim again above.
    connection.execute("DROP TABLE raw_dictionaries")
    connection.commit()
    connection.close()


def test_a_store_from_before_hashes_is_backfilled(lcm_home: Path) -> None:
    """Migration 0007 records the hashes of rows stored before it."""
    with Engine.open(lcm_home, **SMALL) as engine:
        engine.import_file(SAMPLE, final=True)
    _as_before_text_stored_once(lcm_home)
    db = lcm_home / "lcm.db"
    for table, column in (
        ("messages", "content_hash"),
        ("message_parts", "content_hash"),
        ("native_records", "raw_hash"),
    ):
        _sql(db, f"UPDATE {table} SET {column} = NULL")
    # A store from before 0007 has none of the later migrations either.
    _sql(db, "DELETE FROM schema_migrations WHERE version >= 7")
    _sql(db, "ALTER TABLE leases DROP COLUMN acquired_at")  # 0008
    for table, column in (
        ("messages", "content_hash"),
        ("message_parts", "content_hash"),
        ("native_records", "raw_hash"),
    ):
        _sql(db, f"ALTER TABLE {table} DROP COLUMN {column}")
    assert problems(lcm_home) == []
