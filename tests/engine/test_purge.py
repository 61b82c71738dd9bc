"""`purge`: a pattern added after the fact reaches every stored copy of a secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from lossless.cli import cli
from lossless.engine.engine import Engine
from lossless.engine.purge import PURGE_TABLES, purge
from lossless.engine.sensitive import PatternBook
from lossless.redact import UserPattern
from lossless.store.contract import GrepQuery, Store

SECRET = "ACME-12345"
SMALL = {"fresh_tail_count": 2, "leaf_chunk_tokens": 200, "leaf_target_tokens": 60}


def _transcript(path: Path) -> Path:
    lines: list[dict[str, object]] = []
    for turn in range(8):
        lines.append({"role": "user", "content": f"Turn {turn}: the ticket {SECRET} is open."})
        lines.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Looking up {SECRET} for turn {turn} now."},
                    {
                        "type": "tool_use",
                        "id": f"t{turn}",
                        "name": "Bash",
                        "input": {"command": f"tickets show {SECRET}"},
                    },
                ],
            }
        )
        lines.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"t{turn}",
                        "content": f"{SECRET}: status open, owner ops",
                    }
                ],
            }
        )
    body = "".join(json.dumps(line) + "\n" for line in lines)
    # A line that cannot be parsed is kept in quarantine, secret and all.
    body += f'{{"role": "user", "content": "broken {SECRET}\n'
    path.write_text(body, "utf-8")
    return path


def _import(home: Path, tmp_path: Path) -> None:
    with Engine.open(home, **SMALL) as engine:
        result = engine.import_file(_transcript(tmp_path / "s.jsonl"), kind="generic", final=True)
        assert result.messages_added == 24 and len(result.problems) == 1
        conversation = engine.store.conversations.list()[0]
        assert engine.compact(conversation.id).error is None
        assert engine.store.summaries.list(conversation.id)


def _add_pattern(home: Path) -> None:
    book = PatternBook.load(home)
    book.add(UserPattern(name="ticket", regex=r"ACME-\d{5}"))
    book.save()


def _traces(store: Store) -> list[str]:
    """Every place the secret can still be read back from, through the contract."""
    found: list[str] = []
    for mode in ("regex", "full_text"):
        for hit in store.search.grep(GrepQuery(SECRET, mode=mode, limit=1000)):  # type: ignore[arg-type]
            found.append(f"grep {mode} {hit.kind} {hit.id}")
    for c in store.conversations.list():
        messages = store.messages.list(c.id)
        parts = store.messages.parts([m.id for m in messages])
        for m in messages:
            if SECRET in m.content or SECRET in json.dumps(m.metadata):
                found.append(f"message {m.id}")
            for p in parts[m.id]:
                if SECRET in (p.text or "") or SECRET in json.dumps(p.metadata):
                    found.append(f"part {m.id}/{p.ordinal}")
        for r in store.messages.native_records(c.id):
            if SECRET in r.raw:
                found.append(f"record {r.id}")
            json.loads(r.raw)  # still valid JSON
        for s in store.summaries.list(c.id):
            if SECRET in s.content:
                found.append(f"summary {s.id}")
    for q in store.quarantine.list(limit=1000):
        if SECRET.encode() in q.raw:
            found.append(f"quarantine {q.id}")
    return found


def _disk(home: Path) -> bytes:
    db = home / "lcm.db"
    return b"".join(
        Path(str(db) + suffix).read_bytes()
        for suffix in ("", "-wal", "-shm")
        if Path(str(db) + suffix).exists()
    )


def test_purge_redacts_every_table_once_and_scrub_clears_the_disk(
    lcm_home: Path, tmp_path: Path
) -> None:
    _import(lcm_home, tmp_path)
    _add_pattern(lcm_home)
    with Engine.open(lcm_home) as engine:
        before = _traces(engine.store)
        assert any(t.startswith("summary") for t in before)
        assert any(t.startswith("quarantine") for t in before)
        stats_before = engine.store.stats()

        dry = purge(engine.store, engine.redactors, dry_run=True)
        assert all(dry.tables[name].changed > 0 for name in PURGE_TABLES), dry.tables
        assert _traces(engine.store) == before  # a dry run writes nothing

        report = purge(engine.store, engine.redactors)
        assert {n: t.changed for n, t in report.tables.items()} == {
            n: t.changed for n, t in dry.tables.items()
        }
        assert report.redactions["user:ticket"] == sum(
            t.redactions.get("user:ticket", 0) for t in report.tables.values()
        )
        assert report.tables["messages"].scanned == stats_before.messages
        assert report.conversations_changed == 1
        assert _traces(engine.store) == []
        assert engine.store.stats() == stats_before  # nothing added or lost
        (conversation,) = engine.store.conversations.list()
        tally = conversation.metadata["redactions"]
        # Quarantined lines count too: their transcript belongs to the conversation.
        assert tally == report.redactions
        assert engine.grep(r"\[REDACTED:user:ticket\]")

        again = purge(engine.store, engine.redactors)
        assert again.rows_changed == 0 and again.redactions == {}
        assert engine.store.conversations.list()[0].metadata["redactions"] == tally

        assert SECRET.encode() in _disk(lcm_home)  # the old text still sits in free pages
        engine.store.scrub()
        assert _traces(engine.store) == []
    on_disk = _disk(lcm_home)
    assert SECRET.encode() not in on_disk
    assert b"12345" not in on_disk


def test_interrupted_purge_is_finished_by_running_it_again(lcm_home: Path, tmp_path: Path) -> None:
    _import(lcm_home, tmp_path)
    _add_pattern(lcm_home)
    with Engine.open(lcm_home) as engine:
        calls = 0

        def stop_midway(_step: int) -> None:
            nonlocal calls
            calls += 1
            if calls == 2:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            purge(engine.store, engine.redactors, progress=stop_midway, batch_size=5)
        left = _traces(engine.store)
        assert left, "the interruption left work to do"
        done_first = engine.store.conversations.list()[0].metadata["redactions"]["user:ticket"]
        assert done_first > 0  # the committed batches were counted

        report = purge(engine.store, engine.redactors, batch_size=5)
        assert report.rows_changed > 0
        assert _traces(engine.store) == []
        total = engine.store.conversations.list()[0].metadata["redactions"]["user:ticket"]
        fresh_total = done_first + report.redactions["user:ticket"]
        assert total == fresh_total  # every secret counted exactly once


def test_cli_purge_dry_run_json_and_table(lcm_home: Path, tmp_path: Path) -> None:
    _import(lcm_home, tmp_path)
    runner = CliRunner()
    added = runner.invoke(cli, ["sensitive", "add", "ticket", r"ACME-\d{5}"])
    assert added.exit_code == 0, added.output

    dry = runner.invoke(cli, ["sensitive", "purge", "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    planned = json.loads(dry.stdout)
    assert planned["dry_run"] is True and planned["redactions"]["user:ticket"] > 0
    assert set(planned["tables"]) == set(PURGE_TABLES)

    done = runner.invoke(cli, ["sensitive", "purge"])
    assert done.exit_code == 0, done.output
    assert "messages" in done.stdout and "user:ticket" in done.stdout
    with Engine.open(lcm_home) as engine:
        assert _traces(engine.store) == []
    assert SECRET.encode() not in _disk(lcm_home)

    nothing = json.loads(runner.invoke(cli, ["sensitive", "purge", "--json"]).stdout)
    assert nothing["rows_changed"] == 0
