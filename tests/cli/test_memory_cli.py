"""`lcm remember/memories/forget/revive/search/checkpoint/resume` through the real CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from lossless.cli import cli
from lossless.store.sqlite import SQLiteStore

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample-session.jsonl"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_help_teaches() -> None:
    for name in ("remember", "memories", "forget", "revive", "search", "checkpoint", "resume"):
        code, out, _ = run(name, "--help")
        assert code == 0 and "Usage:" in out and len(out) > 200, name


def test_remember_list_forget_revive(tmp_path: Path) -> None:
    code, out, _ = run(
        "remember", "Use uv, not pip", "--tag", "tooling", "--project", "/app", "--json"
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["created"] is True
    mid = doc["memory"]["id"]
    code, out, _ = run("remember", "use UV not pip!", "--tag", "python", "--project", "/app")
    assert code == 0 and f"Already remembered as {mid}" in out and "tooling, python" in out

    code, out, _ = run("memories", "--project", "/app", "--json")
    listed = json.loads(out)["memories"]
    assert [m["id"] for m in listed] == [mid] and listed[0]["tags"] == ["tooling", "python"]
    code, out, _ = run("memories", "--project", "/app")
    assert code == 0 and mid in out and "Use uv, not pip" in out

    code, out, _ = run("forget", mid)
    assert code == 0 and f"lcm revive {mid}" in out
    assert json.loads(run("memories", "--project", "/app", "--json")[1])["memories"] == []
    code, out, _ = run("memories", "--project", "/app", "--all")
    assert mid in out and "yes" in out
    code, out, _ = run("remember", "Use uv not pip", "--project", "/app")
    assert "forgotten" in out
    code, out, _ = run("revive", mid, "--json")
    assert code == 0 and json.loads(out)["memory"]["archived"] is False


def test_errors_go_to_stderr_with_nonzero_exit() -> None:
    for args in (("forget", "mem_0000000000000000"), ("revive", "nope"), ("remember", "  ")):
        code, out, err = run(*args)
        # (a first command on a new home is preceded by the note that the store is new)
        assert code == 1 and out == "" and err.splitlines()[-1].startswith("lcm: error:"), args
    code, _, err = run("search", "?!", "--all-projects")
    assert code == 1 and "no searchable words" in err
    code, _, err = run("resume", "--dir", "/nonexistent-folder-xyz")
    assert code == 1 and "lcm checkpoint" in err


def test_search_covers_history_and_memory() -> None:
    assert run("import", "--complete", "-q", str(SAMPLE))[0] == 0
    code, out, _ = run("conversations", "--json")
    assert code == 0
    project = json.loads(out)[0]["project"]
    run("remember", "Advisory locks guard every migration run", "--project", project)
    code, out, _ = run("search", "advisory migration", "--project", project, "--json")
    assert code == 0
    hits = json.loads(out)["hits"]
    kinds = {h["kind"] for h in hits}
    assert "memory" in kinds and kinds & {"message", "summary"}
    assert hits[0]["kind"] == "memory"
    code, out, _ = run("search", "advisory", "--all-projects")
    assert code == 0 and "memory" in out and "message" in out


def test_checkpoint_and_resume(
    tmp_path: Path, lcm_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run("import", "--complete", "-q", str(SAMPLE))[0] == 0
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    code, _, err = run("checkpoint")
    assert code == 1 and "no conversation for project" in err
    code, out, _ = run("checkpoint", "1", "--dir", str(workspace), "--json")
    assert code == 0
    doc = json.loads(out)
    assert Path(doc["path"]) == workspace / ".lcm-checkpoint.md"
    assert doc["checkpoint"]["conversation_id"] == 1 and doc["checkpoint"]["goal"]
    code, out, _ = run("resume", "--json")
    assert code == 0
    state = json.loads(out)
    assert state["conversation_found"] is True and state["messages_since"] == 0
    code, out, _ = run("resume", "--dir", str(workspace))
    assert code == 0 and out.startswith("# Resuming:") and "## Goal" in out
    store = SQLiteStore(lcm_home / "lcm.db")
    try:
        assert store.conversations.get(1) is not None
    finally:
        store.close()


def test_remember_redacts_secrets_before_storing() -> None:
    """A token handed to `lcm remember` never reaches the memory table."""
    token = "ghp_" + "Qw3rTy7uIoP1aSdF5gHjK9lZxC2vBn4mM6nB"
    code, _out, _ = run(
        "remember", f"deploy uses {token} for the mirror", "--tag", token, "--project", "/app"
    )
    assert code == 0
    listed = json.loads(run("memories", "--project", "/app", "--json")[1])["memories"]
    assert "[REDACTED:github_token]" in listed[0]["text"]
    assert token not in json.dumps(listed)
    home = Path(os.environ["LCM_HOME"])
    for path in home.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
