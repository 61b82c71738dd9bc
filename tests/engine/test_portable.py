"""Export/import: real transcripts travel SQLite -> PostgreSQL -> SQLite unchanged."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from tests.store import conftest as _postgres_fixtures

from lossless.config import Config, load_config
from lossless.engine.engine import Engine
from lossless.engine.portable import export_store, import_export
from lossless.errors import InputError
from lossless.store.contract import NewMemory, Store
from lossless.store.sqlite import SQLiteStore

# ``pg_url`` lives in tests/store (the session's ``pg_server`` is in tests/conftest.py).
pg_url = _postgres_fixtures.pg_url


def _transcripts(shared_data: Path) -> list[Path]:
    files = sorted((shared_data / "claude-code").rglob("*.jsonl"))
    files += sorted((shared_data / "codex").rglob("*.jsonl"))
    if not files:
        pytest.skip(f"no transcripts under {shared_data}")
    return files


def _export(store: Store, config: Config) -> str:
    out = io.StringIO()
    export_store(store, config, out)
    return out.getvalue()


def _import(store: Store, config: Config, text: str) -> dict[str, int]:
    return import_export(store, config, io.StringIO(text), source="x.jsonl").added


def _config(home: Path) -> Config:
    return load_config(
        home, env={}, overrides={"fresh_tail_count": 8, "large_file_threshold": 2000}
    )


def test_real_history_round_trips_through_postgres(
    shared_data: Path, pg_url: str, tmp_path: Path
) -> None:
    from lossless.store.postgres import PostgresStore

    source_config = _config(tmp_path / "a")
    with Engine.open(config=source_config, store=SQLiteStore(tmp_path / "a.db")) as engine:
        engine.import_paths([(None, p) for p in _transcripts(shared_data)])
        for conversation in engine.store.conversations.list():
            assert engine.compact(conversation.id).error is None
        store = engine.store
        biggest = max(store.conversations.list(), key=lambda c: store.messages.count(c.id))
        summary = store.summaries.list(biggest.id)[-1]
        memory = store.memory.create(
            NewMemory(
                project=biggest.project,
                text="Run the test suite with CI=true before pushing.",
                tags=("testing",),
                confidence=0.8,
                source_summary_id=summary.id,
                source_conversation_id=biggest.id,
            )
        ).memory
        store.memory.record_surfaced([memory.id], "2026-01-01T00:00:00.000Z")
        first = _export(store, source_config)
        stats = store.stats()
    lines = [json.loads(line) for line in first.splitlines()]
    kinds = {line.get("type") for line in lines}
    assert {"conversation", "message", "summary", "context", "memory", "end"} <= kinds
    assert lines[0] == {"format": "lossless-export", "version": 1}
    assert stats.large_files > 0 and "large_file" in kinds

    pg_config = _config(tmp_path / "b")
    with PostgresStore(pg_url) as pg:
        added = _import(pg, pg_config, first)
        assert added["message"] == stats.messages and added["summary"] == stats.summaries
        assert pg.stats() == stats
        assert _export(pg, pg_config) == first
        # Re-importing adds nothing.
        again = import_export(pg, pg_config, io.StringIO(first))
        assert again.added == {} and again.skipped["message"] == stats.messages
        assert pg.stats() == stats
        copy = pg.memory.get(memory.id)
        assert (
            copy is not None and copy.surfaced_count == 1 and copy.source_summary_id == summary.id
        )
        moved = max(pg.conversations.list(), key=lambda c: pg.messages.count(c.id))
        assert [s.id for s in pg.summaries.list(moved.id)] == [
            s.id for s in SQLiteStore(tmp_path / "a.db").summaries.list(biggest.id)
        ]
        for f in pg.files.list(moved.id):
            assert Path(f.path).is_file() and str(f.path).startswith(str(tmp_path / "b"))
        from_pg = _export(pg, pg_config)

    back_config = _config(tmp_path / "c")
    with SQLiteStore(tmp_path / "c.db") as back:
        _import(back, back_config, from_pg)
        assert back.stats() == stats
        assert _export(back, back_config) == first


def _small_export(tmp_path: Path) -> tuple[str, Config]:
    config = _config(tmp_path / "src")
    with Engine.open(config=config, store=SQLiteStore(tmp_path / "src.db")) as engine:
        for name in ("one", "two"):
            chat = engine.conversation(name)
            chat.ingest(
                [
                    {"role": "user", "content": f"hello from {name} ünïcode"},
                    {"role": "assistant", "content": f"reply to {name}"},
                ]
            )
        engine.store.quarantine.add(
            source_path="/t.jsonl", line_no=3, byte_offset=9, error="bad", raw=b"\xff{"
        )
        return _export(engine.store, config), config


def test_unknown_version_is_refused(tmp_path: Path) -> None:
    text, config = _small_export(tmp_path)
    newer = text.replace('"version":1', '"version":2', 1)
    with SQLiteStore(tmp_path / "t.db") as target:
        with pytest.raises(InputError, match=r"x.jsonl:1: export version 2 is not supported"):
            _import(target, config, newer)
        with pytest.raises(InputError, match="not a lossless export"):
            _import(target, config, '{"format": "other"}\n')
        assert target.stats().conversations == 0


def test_truncated_and_corrupt_streams_name_the_line_and_store_no_partial_conversation(
    tmp_path: Path,
) -> None:
    text, config = _small_export(tmp_path)
    lines = text.splitlines(keepends=True)
    second = next(i for i, line in enumerate(lines) if '"two"' in line and "conversation" in line)
    cut = "".join(lines[: second + 2])  # the second conversation lacks its context record
    with SQLiteStore(tmp_path / "cut.db") as target:
        with pytest.raises(InputError, match=rf"line {second + 1}; it was not imported"):
            _import(target, config, cut)
        assert [c.session_id for c in target.conversations.list()] == ["one"]
        assert target.messages.count() == 2
        # The rest arrives later: importing the whole stream completes the job.
        _import(target, config, text)
        assert _export(target, config) == text

    broken = lines[:]
    broken[second + 1] = broken[second + 1][:25] + "\n"
    with SQLiteStore(tmp_path / "broken.db") as target:
        with pytest.raises(InputError, match=rf"x.jsonl:{second + 2}: not valid JSON"):
            _import(target, config, "".join(broken))
        assert [c.session_id for c in target.conversations.list()] == ["one"]

    wrong = lines[:]
    record = json.loads(wrong[second + 1])
    del record["content"]
    wrong[second + 1] = json.dumps(record) + "\n"
    with SQLiteStore(tmp_path / "wrong.db") as target:
        with pytest.raises(InputError, match=rf"x.jsonl:{second + 2}: message record has no"):
            _import(target, config, "".join(wrong))
        assert target.messages.count() == 2

    with (
        SQLiteStore(tmp_path / "end.db") as target,
        pytest.raises(InputError, match="no end record"),
    ):
        _import(target, config, "".join(lines[:-1]))
