"""`lcm conversations` over real history; clear errors for unwritable outputs
and homes; honest counts when exporting and re-importing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def lcm(*args: str, home: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ, **env)
    environ.pop("COLUMNS", None)
    prefix = ["--home", str(home)] if home is not None else []
    return subprocess.run(
        [sys.executable, "-m", "lossless", *prefix, *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
    )


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = Path(__file__).resolve().parents[2].parent / "shared" / "data"
    if not data.is_dir():
        pytest.skip(f"real transcripts not found at {data} (../shared/data)")
    home = tmp_path_factory.mktemp("listing") / "home"
    done = lcm("import", "--complete", "-q", str(data / "claude-code"), str(data / "codex"),
               home=home)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return home


def test_conversations_show_title_activity_counts_and_parent(imported: Path) -> None:
    rows = json.loads(lcm("conversations", "--json", home=imported).stdout)
    assert len(rows) == 9
    activity = [r["last_activity"] for r in rows]
    assert activity == sorted(activity, reverse=True)  # most recently active first
    subagents = [r for r in rows if r["parent_id"] is not None]
    assert len(subagents) == 2
    parent = next(r for r in rows if r["id"] == subagents[0]["parent_id"])
    assert subagents[0]["session_id"].startswith(parent["session_id"])
    for row in rows:
        messages = json.loads(lcm("messages", str(row["id"]), "--json", home=imported).stdout)
        stored = messages["messages"]
        assert row["messages"] == len(stored)
        assert row["message_tokens"] == sum(m["token_count"] for m in stored)
        assert row["last_activity"] == max(m["created_at"] for m in stored)
        first_user = next((m["content"] for m in stored if m["role"] == "user"), None)
        assert first_user is None or first_user.startswith(row["first_prompt"])
        assert (row["summaries"], row["max_depth"]) == (0, None)
    table = lcm("conversations", home=imported, COLUMNS="100").stdout
    assert "Work on bead spotter-dov" in table  # the first prompt stands in for a title
    assert f"↳{subagents[0]['parent_id']} " in table


def test_conversations_filters(imported: Path) -> None:
    def ids(*args: str) -> list[int]:
        done = lcm("conversations", "--json", *args, home=imported)
        assert done.returncode == 0, done.stderr
        return [r["id"] for r in json.loads(done.stdout)]

    everything = json.loads(lcm("conversations", "--json", home=imported).stdout)
    codex = [r["id"] for r in everything if r["client"] == "codex"]
    assert ids("--client", "codex") == codex and len(codex) == 2
    assert ids("--since", "2026-05-01") == codex  # the Codex sessions are the May ones
    assert ids("--since", "2099-01-01") == []
    project = everything[0]["project"]
    assert ids("--project", project) == [r["id"] for r in everything if r["project"] == project]
    assert ids("--limit", "3") == [r["id"] for r in everything[:3]]
    bad = lcm("conversations", "--since", "yesterday-ish", home=imported)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "--since" in bad.stderr


def test_conversation_listing_is_not_one_query_per_row(tmp_path: Path) -> None:
    """The overview costs the same number of statements for 3 or 60 conversations."""
    from lossless.config import load_config
    from lossless.engine.engine import Engine
    from lossless.models import NewMessage

    engine = Engine.open(config=load_config(tmp_path / "home"))
    store = engine.store
    ids = []
    for i in range(60):
        conv = store.conversations.get_or_create(project="p", session_id=f"s{i}", client="api")
        store.messages.append(conv.id, [NewMessage(role="user", content=f"hello {i}")])
        ids.append(conv.id)
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    store.conversations.overview(ids[:3])
    few = len(statements)
    statements.clear()
    store.conversations.overview(ids)
    assert len(statements) == few
    engine.close()


def test_export_to_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    done = lcm("export", "-o", str(tmp_path / "missing" / "x.jsonl"), home=tmp_path / "h")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert f"the folder {tmp_path / 'missing'} does not exist" in done.stderr


@pytest.mark.parametrize("how", ["argument", "env"])
def test_a_home_that_cannot_be_created_is_a_clear_error(tmp_path: Path, how: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    home = blocker / "home"  # a folder inside a file cannot exist
    if how == "argument":
        done = lcm("grep", "x", home=home)
    else:
        done = lcm("grep", "x", LCM_HOME=str(home))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f"cannot create the data folder {home}" in done.stderr
    assert ("--home" if how == "argument" else "LCM_HOME") in done.stderr


def _stderr_on_a_terminal(home: Path, *args: str) -> str:
    """Run lcm with stderr on a pseudo-terminal; what it printed there."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lossless", "--home", str(home), *args],
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_new_empty_store_is_announced_once(tmp_path: Path) -> None:
    home = tmp_path / "mistyped"
    first = _stderr_on_a_terminal(home, "conversations")
    assert f"no store was at {home}" in first.replace("\r\n", " ").replace("\n", " ")
    assert "empty" in first
    assert "no store was" not in _stderr_on_a_terminal(home, "conversations")
    # Not to a pipe: tools read the first lines of stderr.
    assert "no store was" not in lcm("conversations", home=tmp_path / "other").stderr


def test_export_and_import_count_the_same_records(imported: Path, tmp_path: Path) -> None:
    stream = tmp_path / "all.jsonl"
    exported = lcm("export", "-o", str(stream), "-q", home=imported)
    assert exported.returncode == 0, exported.stderr
    counts = json.loads(stream.read_text("utf-8").splitlines()[-1])["counts"]
    assert counts["native_record"] > 0
    for kind, n in counts.items():
        assert f"{n:,} {kind.replace('_', ' ')}" in exported.stderr
    target = tmp_path / "target"
    first = json.loads(lcm("import", "--from-export", str(stream), "--json", home=target).stdout)
    assert first["added"] == counts and first["skipped"] == {}
    again = json.loads(lcm("import", "--from-export", str(stream), "--json", home=target).stdout)
    assert again["skipped"] == counts and again["added"] == {}


def test_reimporting_an_unchanged_transcript_says_unchanged(imported: Path) -> None:
    data = Path(__file__).resolve().parents[2].parent / "shared" / "data"
    done = lcm("import", "--complete", "-q", str(data / "codex"), home=imported)
    assert done.returncode == 0, done.stderr
    assert "2 files unchanged since the last import" in done.stdout
    assert "0 already stored" not in done.stdout


def test_dag_of_a_conversation_without_summaries(imported: Path) -> None:
    out = lcm("dag", "4", home=imported).stdout
    assert "max depth" not in out and "-1" not in out
    assert "7 messages, 0 summaries" in out
