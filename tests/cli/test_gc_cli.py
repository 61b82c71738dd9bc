"""``lcm gc``: space given back, every message and part kept byte-exact."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from lossless.cli import cli
from lossless.engine.engine import Engine
from lossless.engine.verify import verify

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample-session.jsonl"


def _snapshot(home: Path) -> tuple[list[tuple[str, str]], list[str | None], int]:
    with Engine.open(home) as engine:
        store = engine.store
        (conversation,) = store.conversations.list()
        messages = store.messages.list(conversation.id)
        parts = store.messages.parts([m.id for m in messages])
        records = store.messages.native_records(conversation.id)
        return (
            [(m.role, m.content) for m in messages],
            [p.text for m in messages for p in parts[m.id]],
            len(records),
        )


def _run(home: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_gc_restores_old_rows_and_keeps_every_message(lcm_home: Path) -> None:
    with Engine.open(lcm_home) as engine:
        engine.import_file(SAMPLE, final=True)
    messages, parts, records = _snapshot(lcm_home)
    # Rows written before migration 0010 were stored in full.
    db = sqlite3.connect(lcm_home / "lcm.db")
    db.execute(
        "UPDATE message_parts SET text = (SELECT substr(m.content, text_start + 1, text_len) "
        "FROM messages m WHERE m.id = message_parts.message_id), text_start = NULL, "
        "text_len = NULL WHERE text_start IS NOT NULL"
    )
    db.commit()
    db.close()
    report = json.loads(_run(lcm_home, "gc", "--json"))
    assert report["rows_stored_once"] > 0 and report["raw_lines_dropped"] == 0
    assert _snapshot(lcm_home) == (messages, parts, records)
    with Engine.open(lcm_home) as engine:
        assert verify(engine.store).problems == []


def test_gc_drops_old_raw_lines_only_when_asked(lcm_home: Path) -> None:
    with Engine.open(lcm_home) as engine:
        engine.import_file(SAMPLE, final=True)
    messages, parts, records = _snapshot(lcm_home)
    assert records > 0
    shown = _run(lcm_home, "gc", "--raw-older-than", "0", "--dry-run")
    assert "would drop" in shown and "nothing changed" in shown
    assert _snapshot(lcm_home) == (messages, parts, records)
    assert "dropped" in _run(lcm_home, "gc", "--raw-older-than", "0")
    after = _snapshot(lcm_home)
    assert after[:2] == (messages, parts)
    assert after[2] < records
    with Engine.open(lcm_home) as engine:
        assert verify(engine.store).problems == []


def test_gc_refuses_a_negative_age(lcm_home: Path) -> None:
    result = CliRunner().invoke(cli, ["--home", str(lcm_home), "gc", "--raw-older-than", "-1"])
    assert result.exit_code != 0 and "-1" in result.output


_HASHES = (
    ("messages", "content_hash"),
    ("message_parts", "content_hash"),
    ("native_records", "raw_hash"),
)


def _hash_types(home: Path) -> set[tuple[str, str, int]]:
    db = sqlite3.connect(home / "lcm.db")
    try:
        return {
            (table, kind, size)
            for table, column in _HASHES
            for kind, size in db.execute(
                f"SELECT DISTINCT typeof({column}), length(CAST({column} AS BLOB)) FROM {table}"
            )
        }
    finally:
        db.close()


def test_hashes_are_kept_as_bytes_and_gc_turns_old_hex_text_into_bytes(lcm_home: Path) -> None:
    with Engine.open(lcm_home) as engine:
        engine.import_file(SAMPLE, final=True)
    as_bytes = {(table, "blob", 32) for table, _ in _HASHES}
    assert _hash_types(lcm_home) == as_bytes
    # Rows hashed by migration 0007 (or rewritten before) hold the hex text.
    db = sqlite3.connect(lcm_home / "lcm.db")
    for table, column in _HASHES:
        db.execute(f"UPDATE {table} SET {column} = lower(hex({column}))")
    db.commit()
    db.close()
    assert _hash_types(lcm_home) == {(table, "text", 64) for table, _ in _HASHES}
    with Engine.open(lcm_home) as engine:
        assert verify(engine.store).problems == []
    messages, parts, records = _snapshot(lcm_home)
    report = json.loads(_run(lcm_home, "gc", "--json"))
    assert report["rows_stored_once"] >= records
    assert _hash_types(lcm_home) == as_bytes
    assert _snapshot(lcm_home) == (messages, parts, records)
    with Engine.open(lcm_home) as engine:
        # (tests/engine/test_verify.py: a changed text is caught against the bytes)
        assert verify(engine.store).problems == []
