"""``Engine.status``: the one report behind ``lcm status`` and MCP ``lcm_status``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from lossless.cli import cli
from lossless.engine.compaction_requests import LAST_ERROR, request_compaction
from lossless.engine.engine import Engine


def _fill(engine: Engine, conversations: int, *, project: str = "app") -> list[int]:
    ids = []
    for i in range(conversations):
        chat = engine.conversation(f"session-{project}-{i}", project=project)
        chat.ingest(
            [
                {"role": "user", "content": f"question {i} about the deploy"},
                {"role": "assistant", "content": f"answer {i}: rolled back"},
            ]
        )
        ids.append(chat.id)
    return ids


def test_status_counts_one_project_or_the_whole_store(lcm_home: Path) -> None:
    with Engine.open(home=lcm_home) as engine:
        mine = _fill(engine, 3, project="app")
        _fill(engine, 2, project="other")
        request_compaction(engine.store, mine[1])
        engine.store.conversations.update_metadata(mine[2], {LAST_ERROR: "summarizer down"})
        scoped = engine.status(project="app")
        everywhere = engine.status()
    assert (scoped.stats.conversations, scoped.stats.messages) == (3, 6)
    assert scoped.stats.context_tokens > 0
    assert scoped.compaction_pending == [mine[1]]
    assert scoped.compaction_errors == {mine[2]: "summarizer down"}
    assert scoped.newest_session is not None and scoped.newest_session.startswith("session-app")
    assert scoped.project == "app" and scoped.backend == "sqlite"
    assert (everywhere.stats.conversations, everywhere.stats.messages) == (5, 10)
    assert everywhere.project is None and everywhere.worker_pid is None


def _statements_for_status(home: Path, conversations: int, project: str | None) -> int:
    with Engine.open(home=home) as engine:
        _fill(engine, conversations)
        db = engine.store._db  # type: ignore[attr-defined]
        assert isinstance(db, sqlite3.Connection)
        seen: list[str] = []
        db.set_trace_callback(seen.append)
        try:
            engine.status(project=project)
        finally:
            db.set_trace_callback(None)
    return len(seen)


def test_status_costs_the_same_queries_for_2_or_40_conversations(tmp_path: Path) -> None:
    # The MCP report once loaded every summary of every conversation to count
    # them (one query per conversation, N+1); the figures are aggregates now.
    for project in (None, "app"):
        few = _statements_for_status(tmp_path / f"few-{project}", 2, project)
        many = _statements_for_status(tmp_path / f"many-{project}", 40, project)
        assert few == many, (project, few, many)


def test_lcm_status_shows_compaction_state(lcm_home: Path) -> None:
    with Engine.open(home=lcm_home) as engine:
        (cid,) = _fill(engine, 1)
        request_compaction(engine.store, cid)
        engine.store.conversations.update_metadata(cid, {LAST_ERROR: "command exited 1"})
    runner = CliRunner()
    shown = runner.invoke(cli, ["--home", str(lcm_home), "status"], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    assert "compaction:    1 conversation(s) waiting, 1 with an error" in shown.output
    assert f"conversation {cid}: command exited 1" in shown.output
    data = json.loads(
        runner.invoke(
            cli, ["--home", str(lcm_home), "status", "--json"], catch_exceptions=False
        ).output
    )
    assert data["compaction"]["pending"] == [cid]
    assert data["compaction"]["errors"] == {str(cid): "command exited 1"}
    assert data["stats"]["messages"] == 2 and data["stats"]["context_tokens"] > 0


def test_lcm_status_sizes_shows_where_the_bytes_go(lcm_home: Path) -> None:
    with Engine.open(home=lcm_home) as engine:
        _fill(engine, 2)
    runner = CliRunner()
    plain = runner.invoke(cli, ["--home", str(lcm_home), "status"], catch_exceptions=False)
    assert "messages_fts" not in plain.output  # only on request: it reads every page
    shown = runner.invoke(
        cli, ["--home", str(lcm_home), "status", "--sizes"], catch_exceptions=False
    )
    assert shown.exit_code == 0, shown.output
    lines = [line.split() for line in shown.output.splitlines() if line.startswith("  ")]
    tables = {fields[0] for fields in lines if len(fields) == 4 and fields[2] == "MB"}
    assert {"messages", "messages_fts"} <= tables, shown.output
    data = json.loads(
        runner.invoke(
            cli, ["--home", str(lcm_home), "status", "--sizes", "--json"], catch_exceptions=False
        ).output
    )
    sizes = data["size_by_table"]
    assert sizes["messages"] > 0 and sum(sizes.values()) <= data["store"]["bytes_on_disk"]
