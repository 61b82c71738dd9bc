"""`lcm sensitive purge` on PostgreSQL: every place a secret is stored, end to end."""

from __future__ import annotations

from pathlib import Path

from tests.engine.test_purge import SECRET, _add_pattern, _import, _traces
from tests.store.postgres_server import require_psycopg

from lossless.engine.engine import Engine
from lossless.engine.purge import PURGE_TABLES, purge
from lossless.engine.sensitive import redaction_totals
from lossless.store.postgres import PostgresStore

require_psycopg()


def test_purge_reaches_every_table_and_the_files(
    pg_url: str, lcm_home: Path, tmp_path: Path
) -> None:
    _import(lcm_home, tmp_path, PostgresStore(pg_url))
    _add_pattern(lcm_home)
    with Engine.open(lcm_home, store=PostgresStore(pg_url)) as engine:
        before = _traces(engine.store, lcm_home)
        for where in ("summary", "quarantine", "conversation", "memory", "file "):
            assert any(t.startswith(where) for t in before), (where, before)
        stats_before = engine.store.stats()

        report = purge(engine.store, engine.redactors, engine.config, batch_size=7)
        assert all(report.tables[name].changed > 0 for name in PURGE_TABLES), report.tables
        assert report.files_removed == 1 and report.files_unreadable == []
        assert _traces(engine.store, lcm_home) == []
        assert engine.store.stats() == stats_before
        tally = redaction_totals(engine.store)
        # The archived memory of another project belongs to no conversation.
        assert tally["user:ticket"] == report.redactions["user:ticket"] - 1

        engine.store.scrub()
        again = purge(engine.store, engine.redactors, engine.config)
        assert again.rows_changed == 0 and again.redactions == {}
        assert redaction_totals(engine.store) == tally
        assert _traces(engine.store, lcm_home) == []
    files = b"".join(p.read_bytes() for p in (lcm_home / "files").rglob("*") if p.is_file())
    assert files and SECRET.encode() not in files
