"""Content hashes on the real embedded PostgreSQL: recorded at ingest, the
migration's SQL computes what Python computes, tampering is named by id."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.pg_fixtures import own_pg_server  # noqa: F401  (fixture)
from tests.store.postgres_server import EmbeddedPostgres, require_psycopg

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.engine.verify import verify

require_psycopg()

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample-session.jsonl"
MIGRATION = (
    Path(__file__).resolve().parents[2]
    / "src/lossless/store/postgres/migrations/0007_content_hashes.sql"
)


def _sql(url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement)


@pytest.fixture
def pg_engine(own_pg_server: EmbeddedPostgres, tmp_path: Path):  # type: ignore[no-untyped-def]  # noqa: F811
    from lossless.store.postgres import PostgresStore

    url = own_pg_server.create_database()
    config = load_config(tmp_path / "home", env={}, overrides={"leaf_chunk_tokens": 800})
    engine = Engine.open(config=config, store=PostgresStore(url))
    result = engine.import_file(SAMPLE, final=True)
    assert result.conversation_id is not None
    engine.compact(result.conversation_id)
    try:
        yield engine, url, result.conversation_id
    finally:
        engine.close()
        own_pg_server.drop_database(url)


def _as_before_text_stored_once(engine: Engine, url: str, cid: int) -> None:
    """Store every part text and raw line in full, as rows written before
    migration 0010 (the only rows migration 0007 ever backfills) were."""
    import psycopg

    lines = [(r.raw, r.id) for r in engine.store.messages.native_records(cid)]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.cursor().executemany(
            "UPDATE lcm.native_records SET raw = %s, raw_template = false WHERE id = %s", lines
        )
        conn.execute(
            "UPDATE lcm.message_parts p SET text = substr(m.content, p.text_start + 1, "
            "p.text_len), text_start = NULL, text_len = NULL FROM lcm.messages m "
            "WHERE m.id = p.message_id AND p.text_start IS NOT NULL"
        )


def test_hashes_from_sql_match_python_and_tampering_is_named(pg_engine) -> None:  # type: ignore[no-untyped-def]
    engine, url, cid = pg_engine
    assert verify(engine.store).ok
    _as_before_text_stored_once(engine, url, cid)
    assert verify(engine.store).ok
    # The migration's own UPDATEs recompute every hash in SQL: still whole.
    _sql(url, "UPDATE lcm.messages SET content_hash = NULL")
    _sql(url, "UPDATE lcm.message_parts SET content_hash = NULL")
    _sql(url, "UPDATE lcm.native_records SET raw_hash = NULL")
    assert any("has no content hash" in str(p) for p in verify(engine.store).problems)
    body = MIGRATION.read_text("utf-8")
    for statement in body.split(";"):
        lines = [ln for ln in statement.splitlines() if ln.strip() and not ln.startswith("--")]
        if lines and lines[0].startswith("UPDATE"):
            _sql(url, "\n".join(lines))
    report = verify(engine.store)
    assert report.ok, report.problems[:5]

    message = engine.store.messages.list(cid)[7]
    record = next(r for r in engine.store.messages.native_records(cid) if r.message_id)
    _sql(url, f"UPDATE lcm.messages SET content = 'TAMPERED' WHERE id = {message.id}")
    _sql(url, f"UPDATE lcm.native_records SET raw = '{{}}' WHERE id = {record.id}")
    found = [str(p) for p in verify(engine.store).problems]
    assert any(f"message {message.id}: content does not match" in p for p in found), found
    assert any(f"native record {record.id} (of message {record.message_id})" in p for p in found)
    # A sanctioned rewrite records new hashes.
    engine.store.messages.rewrite(message.id, "[redacted]", message.metadata)
    engine.store.messages.rewrite_native_record(record.id, '{"redacted": true}')
    assert verify(engine.store).ok
