"""The engine on PostgreSQL with real transcripts: the same store contents as
SQLite, idempotent re-import, compaction that keeps every message."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.engine.compaction_helpers import expand_items
from tests.store.postgres_server import require_psycopg

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.store.contract import GrepQuery, Store
from lossless.store.postgres import PostgresStore
from lossless.store.sqlite import SQLiteStore

require_psycopg()


def _transcripts(shared_data: Path) -> list[Path]:
    files = sorted((shared_data / "claude-code").rglob("*.jsonl"))
    files += sorted((shared_data / "codex").rglob("*.jsonl"))
    if not files:
        pytest.skip(f"no transcripts under {shared_data}")
    return files


def _contents(store: Store) -> dict[tuple[str, str], list[tuple[str, str, str | None]]]:
    out = {}
    for c in store.conversations.list():
        out[(c.client, c.session_id)] = [
            (m.role, m.content, m.ingest_key) for m in store.messages.iter_all(c.id)
        ]
    return out


def test_real_transcripts_import_identically(
    shared_data: Path, pg_url: str, tmp_path: Path
) -> None:
    files = [(None, p) for p in _transcripts(shared_data)]
    config = load_config(tmp_path / "home", env={}, overrides={"fresh_tail_count": 8})
    with (
        Engine.open(config=config, store=SQLiteStore(tmp_path / "lcm.db")) as lite,
        Engine.open(config=config, store=PostgresStore(pg_url)) as pg,
    ):
        lite.import_paths(files)
        report = pg.import_paths(files)
        assert sum(f.messages_added for f in report.files) > 0
        assert pg.store.stats() == lite.store.stats()
        assert _contents(pg.store) == _contents(lite.store)

        again = pg.import_paths(files)
        assert sum(f.messages_added for f in again.files) == 0
        assert pg.store.stats() == lite.store.stats()

        for query in (
            GrepQuery("def |class ", mode="regex", limit=40),
            GrepQuery("(?i)error", mode="regex", limit=40),
            GrepQuery("pytest", mode="regex", scope="messages", limit=25),
        ):
            ours = [(h.created_at, h.snippet) for h in pg.store.search.grep(query)]
            theirs = [(h.created_at, h.snippet) for h in lite.store.search.grep(query)]
            assert ours == theirs, query

        biggest = max(pg.store.conversations.list(), key=lambda c: pg.store.messages.count(c.id))
        before = [m.id for m in pg.store.messages.iter_all(biggest.id)]
        result = pg.compact(biggest.id)
        assert result.error is None
        assert [m.id for m in pg.store.messages.iter_all(biggest.id)] == before
        assert expand_items(pg.store, biggest.id) == before
