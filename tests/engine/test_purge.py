"""`purge`: a pattern added after the fact reaches every stored copy of a secret."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import lossless.engine.purge as purge_module
from lossless.cli import cli
from lossless.engine.engine import Engine
from lossless.engine.purge import PURGE_TABLES, REMOVALS_JOURNAL, purge
from lossless.engine.sensitive import PatternBook, redaction_totals
from lossless.models import NewLargeFile
from lossless.redact import UserPattern
from lossless.store.contract import GrepQuery, NewMemory, Store

SECRET = "ACME-12345"
SMALL = {
    "fresh_tail_count": 2,
    "leaf_chunk_tokens": 200,
    "leaf_target_tokens": 60,
    "large_file_threshold": 200,
}
# A tool output too large to keep inline: stored as a file under LCM_HOME/files.
BIG_OUTPUT = "\n".join(f"row {i}: ticket {SECRET} owner ops, queue {i % 7}" for i in range(120))


def _transcript(path: Path) -> Path:
    lines: list[dict[str, object]] = []
    for turn in range(8):
        lines.append({"role": "user", "content": f"Turn {turn}: the ticket {SECRET} is open."})
        output = BIG_OUTPUT if turn == 0 else f"{SECRET}: status open, owner ops"
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
                        "content": output,
                    }
                ],
            }
        )
    body = "".join(json.dumps(line) + "\n" for line in lines)
    # A line that cannot be parsed is kept in quarantine, secret and all.
    body += f'{{"role": "user", "content": "broken {SECRET}\n'
    path.write_text(body, "utf-8")
    return path


def _import(home: Path, tmp_path: Path, store: Store | None = None) -> None:
    with Engine.open(home, store=store, **SMALL) as engine:
        result = engine.import_file(_transcript(tmp_path / "s.jsonl"), kind="generic", final=True)
        assert result.messages_added == 24 and len(result.problems) == 1
        conversation = engine.store.conversations.list()[0]
        assert engine.compact(conversation.id).error is None
        assert engine.store.summaries.list(conversation.id)
        (stored_file,) = engine.store.files.list(conversation.id)
        assert SECRET in Path(stored_file.path).read_text("utf-8")
        store = engine.store
        # A title and metadata written by a client integration.
        store.conversations.get_or_create(
            project=conversation.project,
            session_id="titled",
            client="generic",
            title=f"Fix {SECRET} for ops",
            metadata={"cwd": f"/srv/{SECRET}", "branch": "main"},
        )
        store.memory.create(
            NewMemory(
                project=conversation.project,
                text=f"Ticket {SECRET} is owned by ops",
                tags=(SECRET, "ops"),
                source_conversation_id=conversation.id,
            )
        )
        # Archived memories are purged too: `lcm memories revive` would bring them back.
        archived = store.memory.create(NewMemory(project="elsewhere", text=f"old note {SECRET}"))
        store.memory.archive(archived.memory.id)


def _add_pattern(home: Path) -> None:
    book = PatternBook.load(home)
    book.add(UserPattern(name="ticket", regex=r"ACME-\d{5}"))
    book.save()


def _traces(store: Store, home: Path) -> list[str]:
    """Every place the secret can still be read back from: the contract and the files."""
    found: list[str] = []
    for mode in ("regex", "full_text"):
        for hit in store.search.grep(GrepQuery(SECRET, mode=mode, limit=1000)):  # type: ignore[arg-type]
            found.append(f"grep {mode} {hit.kind} {hit.id}")
    for memory in store.memory.list(include_archived=True):
        if SECRET in memory.text or SECRET in memory.tags:
            found.append(f"memory {memory.id}")
    for word in ("ACME", "12345"):
        for mhit in store.memory.search(word, include_archived=True):
            found.append(f"memory search {mhit.memory.id}")
    for c in store.conversations.list():
        if SECRET in (c.title or "") or SECRET in json.dumps(c.metadata):
            found.append(f"conversation {c.id}")
        for f in store.files.list(c.id):
            if SECRET in f.exploration_summary:
                found.append(f"file summary {f.id}")
            if SECRET in Path(f.path).read_text("utf-8"):
                found.append(f"file content {f.id}")
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
    for path in sorted((home / "files").rglob("*")):
        if path.is_file() and SECRET.encode() in path.read_bytes():
            found.append(f"file on disk {path.name}")
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
        before = _traces(engine.store, lcm_home)
        for where in ("summary", "quarantine", "conversation", "memory", "file "):
            assert any(t.startswith(where) for t in before), (where, before)
        stats_before = engine.store.stats()
        (conversation, _titled) = engine.store.conversations.list()
        (old_file,) = engine.store.files.list(conversation.id)
        memories_before = engine.store.memory.list(include_archived=True)

        files_before = sorted((lcm_home / "files").rglob("*"))
        dry = purge(engine.store, engine.redactors, engine.config, dry_run=True)
        assert all(dry.tables[name].changed > 0 for name in PURGE_TABLES), dry.tables
        assert _traces(engine.store, lcm_home) == before  # a dry run writes nothing
        assert sorted((lcm_home / "files").rglob("*")) == files_before
        assert dry.files_removed == 0

        report = purge(engine.store, engine.redactors, engine.config)
        assert {n: t.changed for n, t in report.tables.items()} == {
            n: t.changed for n, t in dry.tables.items()
        }
        assert report.redactions["user:ticket"] == sum(
            t.redactions.get("user:ticket", 0) for t in report.tables.values()
        )
        assert report.tables["messages"].scanned == stats_before.messages
        assert report.tables["memories"].scanned == len(memories_before) == 2
        assert report.tables["large_files"].changed == 1
        assert report.conversations_changed == 2
        assert _traces(engine.store, lcm_home) == []
        assert engine.store.stats() == stats_before  # nothing added or lost
        # Quarantined lines count too: their transcript belongs to the
        # conversation; the archived memory of another project has none.
        tally = redaction_totals(engine.store)
        assert tally["user:ticket"] == report.redactions["user:ticket"] - 1
        assert engine.grep(r"\[REDACTED:user:ticket\]")

        # The large file: new content under its new address, the old copy gone.
        new_file = engine.store.files.get(old_file.id)
        assert new_file is not None and new_file.path != old_file.path
        assert not Path(old_file.path).exists() and report.files_removed == 1
        content = Path(new_file.path).read_text("utf-8")
        assert content == BIG_OUTPUT.replace(SECRET, "[REDACTED:user:ticket]")
        data = content.encode("utf-8")
        assert new_file.byte_size == len(data)
        assert new_file.sha256 == hashlib.sha256(data).hexdigest() in new_file.path
        assert new_file.token_count == engine.estimate(content)
        assert (new_file.media_type, new_file.created_at) == (
            old_file.media_type,
            old_file.created_at,
        )
        assert engine.describe(old_file.id) is not None
        assert not (lcm_home / "files" / REMOVALS_JOURNAL).exists()
        memories = {m.id: m for m in engine.store.memory.list(include_archived=True)}
        assert set(memories) == {m.id for m in memories_before}
        (live,) = [m for m in memories.values() if not m.archived]
        assert [h.memory.id for h in engine.store.memory.search("owned")] == [live.id]
        assert live.text == "Ticket [REDACTED:user:ticket] is owned by ops"
        assert live.tags == ("[REDACTED:user:ticket]", "ops")
        titled = engine.store.conversations.list()[1]
        assert titled.title == "Fix [REDACTED:user:ticket] for ops"
        assert titled.metadata["cwd"] == "/srv/[REDACTED:user:ticket]"
        assert titled.metadata["branch"] == "main"

        again = purge(engine.store, engine.redactors, engine.config)
        assert again.rows_changed == 0 and again.redactions == {} and again.files_removed == 0
        assert redaction_totals(engine.store) == tally

        assert SECRET.encode() in _disk(lcm_home)  # the old text still sits in free pages
        engine.store.scrub()
        assert _traces(engine.store, lcm_home) == []
    on_disk = _disk(lcm_home)
    assert SECRET.encode() not in on_disk
    assert b"12345" not in on_disk
    every_file = b"".join(p.read_bytes() for p in lcm_home.rglob("*") if p.is_file())
    assert b"12345" not in every_file


def test_interrupted_purge_is_finished_by_running_it_again(lcm_home: Path, tmp_path: Path) -> None:
    _import(lcm_home, tmp_path)
    _add_pattern(lcm_home)
    with Engine.open(lcm_home) as engine:
        calls = 0

        def stop_midway(_step: int) -> None:
            nonlocal calls
            calls += 1
            if calls == 3:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            purge(engine.store, engine.redactors, engine.config, progress=stop_midway, batch_size=5)
        left = _traces(engine.store, lcm_home)
        assert left, "the interruption left work to do"
        done_first = redaction_totals(engine.store)["user:ticket"]
        assert done_first > 0  # the committed batches were counted

        report = purge(engine.store, engine.redactors, engine.config, batch_size=5)
        assert report.rows_changed > 0
        assert _traces(engine.store, lcm_home) == []
        total = redaction_totals(engine.store)["user:ticket"]
        # Every secret counted exactly once (less the archived memory of
        # another project, which belongs to no conversation's tally).
        assert total == done_first + report.redactions["user:ticket"] - 1


def test_a_crash_between_commit_and_file_deletion_is_finished_by_the_next_run(
    lcm_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _import(lcm_home, tmp_path)
    _add_pattern(lcm_home)
    with Engine.open(lcm_home) as engine:
        (conversation, _titled) = engine.store.conversations.list()
        (old_file,) = engine.store.files.list(conversation.id)
        finish = purge_module._finish_file_removals
        calls = 0

        def crash_after_commit(store: Store, config: object) -> int:
            nonlocal calls
            calls += 1
            if calls == 2:  # the first call only looks for leftovers of an earlier run
                raise KeyboardInterrupt
            return finish(store, config)  # type: ignore[arg-type]

        monkeypatch.setattr(purge_module, "_finish_file_removals", crash_after_commit)
        with pytest.raises(KeyboardInterrupt):
            purge(engine.store, engine.redactors, engine.config)
        monkeypatch.undo()
        moved = engine.store.files.get(old_file.id)
        assert moved is not None and moved.path != old_file.path  # the row was committed
        assert SECRET in Path(old_file.path).read_text("utf-8")  # the old copy was not deleted
        assert (lcm_home / "files" / REMOVALS_JOURNAL).exists()

        report = purge(engine.store, engine.redactors, engine.config)
        assert report.files_removed == 1 and report.tables["large_files"].changed == 0
        assert not Path(old_file.path).exists()
        assert not (lcm_home / "files" / REMOVALS_JOURNAL).exists()
        assert _traces(engine.store, lcm_home) == []


def test_an_old_file_another_row_still_uses_is_kept(lcm_home: Path, tmp_path: Path) -> None:
    _import(lcm_home, tmp_path)
    with Engine.open(lcm_home) as engine:
        (conversation, _titled) = engine.store.conversations.list()
        (shared,) = engine.store.files.list(conversation.id)
        other = engine.store.conversations.get_or_create(
            project="/other/project", session_id="o", client="generic"
        )
        twin = engine.store.files.create(
            NewLargeFile(
                other.id,
                shared.path,
                shared.byte_size,
                shared.token_count,
                shared.sha256,
                shared.media_type,
                shared.exploration_summary,
            )
        )
    # Only the first conversation's project knows the pattern.
    book = PatternBook.load(lcm_home)
    book.add(
        UserPattern(
            name="ticket", regex=r"ACME-\d{5}", scope="project", project=conversation.project
        )
    )
    book.save()
    with Engine.open(lcm_home) as engine:
        report = purge(engine.store, engine.redactors, engine.config)
        assert report.tables["large_files"].changed == 1 and report.files_removed == 0
        assert engine.store.files.get(twin.id) == twin
        assert SECRET in Path(shared.path).read_text("utf-8")
        moved = engine.store.files.get(shared.id)
        assert moved is not None and SECRET not in Path(moved.path).read_text("utf-8")


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
    assert "1 old large files deleted" in done.stdout
    with Engine.open(lcm_home) as engine:
        assert _traces(engine.store, lcm_home) == []
    assert SECRET.encode() not in _disk(lcm_home)

    nothing = json.loads(runner.invoke(cli, ["sensitive", "purge", "--json"]).stdout)
    assert nothing["rows_changed"] == 0
    assert (nothing["files_removed"], nothing["files_unreadable"]) == (0, [])


def test_a_secret_cut_short_in_a_file_summary_is_not_left_behind(lcm_home: Path) -> None:
    # The summary quotes the first lines clipped at 220 characters: the
    # secret is cut to "ACME-1…", which the pattern no longer matches.
    paste = (
        "a" * 212 + f" {SECRET} tail\n" + "\n".join(f"line {i} of the paste" for i in range(200))
    )
    with Engine.open(lcm_home, large_file_threshold=200) as engine:
        chat = engine.conversation("paste", project="p")
        chat.ingest([{"role": "user", "content": paste}])
        (stored,) = engine.store.files.list(chat.id)
        assert "ACME-1…" in stored.exploration_summary and SECRET not in stored.exploration_summary
    _add_pattern(lcm_home)
    with Engine.open(lcm_home) as engine:
        report = purge(engine.store, engine.redactors, engine.config)
        assert report.tables["large_files"].changed == 1
        rewritten = engine.store.files.get(stored.id)
        assert rewritten is not None
        assert "ACME-1" not in rewritten.exploration_summary
        assert rewritten.exploration_summary.startswith("Text, 201 lines")
        assert Path(rewritten.path).read_text("utf-8") == paste.replace(
            SECRET, "[REDACTED:user:ticket]"
        )


def test_unreadable_and_binary_large_files(lcm_home: Path) -> None:
    _add_pattern(lcm_home)
    with Engine.open(lcm_home) as engine:
        store = engine.store
        cid = store.conversations.get_or_create(project="p", session_id="s", client="generic").id
        # Written by another machine sharing the database: not on this disk.
        elsewhere = store.files.create(
            NewLargeFile(cid, "/nowhere/aa.txt", 10, 3, "aa" * 32, "text/plain", f"a {SECRET}")
        )
        # Imported as base64: not UTF-8, every byte but the secret's must survive.
        data = b"\xff\xfe head " + SECRET.encode() + b" tail \x80"
        binary_path = engine.config.files_dir / "bb" / ("bb" * 32 + ".txt")
        binary_path.parent.mkdir(parents=True)
        binary_path.write_bytes(data)
        binary = store.files.create(
            NewLargeFile(
                cid, str(binary_path), len(data), 9, "bb" * 32, "text/plain", "binary content"
            )
        )

        report = purge(store, engine.redactors, engine.config)
        assert report.files_unreadable == [elsewhere.id]
        assert report.tables["large_files"].changed == 2
        kept = store.files.get(elsewhere.id)
        assert kept is not None
        assert (kept.path, kept.exploration_summary) == (
            "/nowhere/aa.txt",
            "a [REDACTED:user:ticket]",
        )
        rewritten = store.files.get(binary.id)
        assert rewritten is not None and rewritten.path != str(binary_path)
        new = b"\xff\xfe head [REDACTED:user:ticket] tail \x80"
        assert Path(rewritten.path).read_bytes() == new
        assert (rewritten.byte_size, rewritten.sha256) == (
            len(new),
            hashlib.sha256(new).hexdigest(),
        )
        assert rewritten.exploration_summary == "binary content"
        assert not binary_path.exists()

    result = CliRunner().invoke(cli, ["sensitive", "purge"], env={"LCM_HOME": str(lcm_home)})
    assert result.exit_code == 0, result.output
    assert elsewhere.id in result.stderr
