"""The substring (trigram) index: built inline for small writes, behind bulk imports."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pytest

from lossless.engine import indexing
from lossless.engine.engine import Engine
from lossless.store.contract import GrepQuery
from lossless.worker import Worker, WorkerReport


def write_messages(path: Path, count: int, *, start: int = 0) -> Path:
    lines = [json.dumps({"session_id": "bulk"})]
    for i in range(start, start + count):
        role = "user" if i % 2 == 0 else "assistant"
        lines.append(json.dumps({"role": role, "content": f"message {i} code=ZX{i:05d}Q"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def import_deferred(engine: Engine, folder: Path, count: int) -> None:
    """Import ``count`` messages as `lcm import` does: no trigram indexing yet."""
    engine.importer(defer_substring_index=True).import_file(
        write_messages(folder / "b.jsonl", count), "generic", final=True
    )


def regex(engine: Engine, pattern: str) -> list[str]:
    return [h.id for h in engine.store.search.grep(GrepQuery(pattern, mode="regex", limit=500))]


def test_a_small_import_is_indexed_at_once(tmp_path: Path, lcm_home: Path) -> None:
    with Engine.open(lcm_home) as engine:
        engine.import_file(write_messages(tmp_path / "s.jsonl", 40), "generic", final=True)
        assert engine.store.search.index_backlog() == 0


def test_a_deferred_import_is_searchable_before_and_after_indexing(
    tmp_path: Path, lcm_home: Path
) -> None:
    with Engine.open(lcm_home) as engine:
        import_deferred(engine, tmp_path, 300)
        assert engine.store.search.index_backlog() == 300
        before = [regex(engine, r"ZX0012\dQ"), regex(engine, "ZX00299Q"), regex(engine, "nope")]
        assert [len(found) for found in before] == [10, 1, 0]
        chunks: list[int] = []
        assert indexing.catch_up_all(engine.store, chunk_rows=128, progress=chunks.append) == 300
        assert chunks == [128, 128, 44]
        assert engine.store.search.index_backlog() == 0
        after = [regex(engine, r"ZX0012\dQ"), regex(engine, "ZX00299Q"), regex(engine, "nope")]
        assert after == before
        assert engine.store.integrity_check() == []


def test_small_writes_do_not_index_a_bulk_backlog_inline(tmp_path: Path, lcm_home: Path) -> None:
    with Engine.open(lcm_home) as engine:
        import_deferred(engine, tmp_path, 60)
        # Stands in for a backlog above the inline limit: a hook's ingest
        # must leave it to the worker rather than index it all in the hook.
        assert indexing.keep_current(engine.store, inline_rows=50) == 60
        assert indexing.keep_current(engine.store, inline_rows=60) == 0
        assert engine.store.search.index_backlog() == 0


def test_the_worker_builds_the_backlog_and_can_stop_between_chunks(
    tmp_path: Path, lcm_home: Path
) -> None:
    with Engine.open(lcm_home) as engine:
        import_deferred(engine, tmp_path, 4500)
        # Read for the deadline, before the first chunk, before the second.
        ticks = iter([0.0, 0.0, 100.0])
        worker = Worker(engine, clock=lambda: next(ticks, 100.0))
        report = WorkerReport()
        assert worker.build_index(report, max_seconds=1.0) == 1
        assert report.indexed == indexing.CHUNK_ROWS
        assert worker.run(once=True).indexed == 4500 - indexing.CHUNK_ROWS
        assert engine.store.search.index_backlog() == 0


@pytest.mark.parametrize("inline_rows", [50_000, 0])
def test_lcm_import_indexes_or_hands_the_backlog_to_the_worker(
    tmp_path: Path, lcm_home: Path, monkeypatch: pytest.MonkeyPatch, inline_rows: int
) -> None:
    from click.testing import CliRunner

    from lossless.cli import cli, search_index

    monkeypatch.setattr(search_index, "IMPORT_INDEX_INLINE_ROWS", inline_rows)
    source = write_messages(tmp_path / "b.jsonl", 200)
    result = CliRunner().invoke(cli, ["import", "--json", str(source)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["messages_added"] == 200
    if inline_rows:
        assert (report["substring_index_backlog"], report["worker_pid"]) == (0, None)
        status = CliRunner().invoke(cli, ["status", "--json"], catch_exceptions=False)
        assert json.loads(status.stdout)["substring_index_backlog"] == 0
        return
    # A real detached `lcm worker` builds it.
    assert report["substring_index_backlog"] == 200 and report["worker_pid"]
    try:
        deadline = time.monotonic() + 60
        with Engine.open(lcm_home) as engine:
            while engine.store.search.index_backlog():
                assert time.monotonic() < deadline, (lcm_home / "logs" / "worker.log").read_text()
                time.sleep(0.2)
            assert len(regex(engine, "ZX0019[0-9]Q")) == 10
    finally:
        # Done with it: do not leave it idling until its timeout.
        with contextlib.suppress(ProcessLookupError):
            os.kill(report["worker_pid"], signal.SIGTERM)


def test_engine_builds_the_search_index_on_request(tmp_path: Path, lcm_home: Path) -> None:
    with Engine.open(lcm_home) as engine:
        import_deferred(engine, tmp_path, 2_500)
        chunks: list[int] = []
        assert engine.build_search_index(progress=chunks.append) == 2_500
        assert chunks == [indexing.CHUNK_ROWS, 2_500 - indexing.CHUNK_ROWS]
        assert engine.store.search.index_backlog() == 0
        assert engine.build_search_index() == 0


def test_lcm_status_shows_a_backlog(tmp_path: Path, lcm_home: Path) -> None:
    from click.testing import CliRunner

    from lossless.cli import cli

    with Engine.open(lcm_home) as engine:
        import_deferred(engine, tmp_path, 120)
    table = CliRunner().invoke(cli, ["status"], catch_exceptions=False).stdout
    assert "substring index: 120 message(s) not indexed yet" in table
    data = json.loads(CliRunner().invoke(cli, ["status", "--json"]).stdout)
    assert data["substring_index_backlog"] == 120
