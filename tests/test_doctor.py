"""`lcm doctor`: a healthy setup passes; each kind of breakage is named with its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lossless.engine.engine import Engine
from lossless.worker import LAST_ERROR, REQUESTED_AT


def lcm(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "lcm"
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "lossless"]
    return subprocess.run(
        [*argv, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        check=False,
    )


def doctor(
    cwd: Path, env: dict[str, str] | None = None
) -> tuple[int, dict[tuple[str, str], dict[str, Any]]]:
    result = lcm("doctor", "--json", env=env, cwd=cwd)
    report = json.loads(result.stdout)
    assert report["ok"] == (result.returncode == 0)
    checks = {(c["area"], c["name"]): c for c in report["checks"]}
    return result.returncode, checks


def problems(
    checks: dict[tuple[str, str], dict[str, Any]],
) -> dict[tuple[str, str], dict[str, Any]]:
    return {k: c for k, c in checks.items() if c["status"] == "problem"}


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    claude = tmp_path / "user" / ".claude"
    codex = tmp_path / "user" / ".codex"
    claude.mkdir(parents=True)
    codex.mkdir()
    monkeypatch.setenv("LCM_CLAUDE_HOME", str(claude))
    monkeypatch.setenv("LCM_CODEX_HOME", str(codex))
    work = tmp_path / "work"
    work.mkdir()
    for client in ("claude-code", "codex"):
        assert lcm("install", client, cwd=work).returncode == 0
    return {
        "work": work,
        "settings": claude / "settings.json",
        "state": claude.parent / ".claude.json",
        "codex_toml": codex / "config.toml",
    }


def test_fresh_machine_has_no_problems(tmp_path: Path) -> None:
    code, checks = doctor(tmp_path)
    assert code == 0, problems(checks)
    assert checks[("lcm", "this install")]["status"] == "ok"
    assert checks[("claude-code", "install")]["status"] == "info"
    assert checks[("store", "open")]["status"] == "info"


def test_healthy_install_passes_every_check(installed: dict[str, Path]) -> None:
    code, checks = doctor(installed["work"])
    assert code == 0, problems(checks)
    for key in (
        ("claude-code", "user: hooks"),
        ("claude-code", "user: hook command"),
        ("claude-code", "user: MCP server"),
        ("codex", "user: hooks"),
        ("codex", "user: MCP server"),
        ("summarizer", "extractive"),
    ):
        assert checks[key]["status"] == "ok", checks[key]


def test_run_from_home_checks_the_user_install_once(installed: dict[str, Path]) -> None:
    """From $HOME the project scope's files are the user scope's own files."""
    home = installed["settings"].parent.parent
    code, checks = doctor(home)
    assert code == 0, problems(checks)
    assert not [k for k in checks if k[1].startswith("project:")]
    assert checks[("codex", "user: hook trust")]["status"] == "ok"


def test_broken_installs_are_problems_with_fixes(installed: dict[str, Path]) -> None:
    settings = json.loads(installed["settings"].read_text())
    del settings["hooks"]["PreCompact"]
    for group in settings["hooks"]["Stop"]:
        for handler in group["hooks"]:
            handler["command"] = handler["command"].replace(
                str(Path(sys.executable).parent), "/gone/venv/bin"
            )
    installed["settings"].write_text(json.dumps(settings))
    state = json.loads(installed["state"].read_text())
    del state["mcpServers"]["lcm"]
    installed["state"].write_text(json.dumps(state))
    installed["codex_toml"].write_text(
        installed["codex_toml"].read_text() + "\n[features]\nhooks = false\n"
    )

    code, checks = doctor(installed["work"])
    assert code == 1
    found = problems(checks)
    hooks = found[("claude-code", "user: hooks")]
    assert "PreCompact" in hooks["detail"] and hooks["fix"] == "lcm install claude-code"
    command = found[("claude-code", "user: hook command")]
    assert "/gone/venv/bin/lcm does not exist" in command["detail"]
    assert "lcm install claude-code" in command["fix"]
    assert "no 'lcm'" in found[("claude-code", "user: MCP server")]["detail"]
    assert "hooks = false" in found[("codex", "user: hooks enabled")]["detail"]

    # The fixes it names do fix it.
    assert lcm("install", "claude-code", cwd=installed["work"]).returncode == 0
    installed["codex_toml"].write_text(
        installed["codex_toml"].read_text().replace("hooks = false", "hooks = true")
    )
    code, checks = doctor(installed["work"])
    assert code == 0, problems(checks)


def test_mcp_entry_that_does_not_start_is_a_problem(installed: dict[str, Path]) -> None:
    state = json.loads(installed["state"].read_text())
    # Still recognisably lossless's entry, but the subcommand cannot serve MCP.
    state["mcpServers"]["lcm"]["args"] = ["--home", "/dev/null/nope", "mcp"]
    installed["state"].write_text(json.dumps(state))
    code, checks = doctor(installed["work"])
    assert code == 1
    detail = checks[("claude-code", "user: MCP server")]["detail"]
    assert "MCP" in detail


def test_store_worker_summarizer_and_log_problems(
    tmp_path: Path, shared_data: Path, lcm_home: Path
) -> None:
    with Engine.open() as engine:
        # As a large `lcm import` leaves it, with the worker it started gone.
        importer = engine.importer(defer_substring_index=True)
        result = importer.import_file(
            shared_data / "claude-code/spotter/short.jsonl", "claude-code", final=True
        )
        assert result.conversation_id is not None
        engine.store.conversations.update_metadata(
            result.conversation_id,
            {REQUESTED_AT: time.time() - 3600, LAST_ERROR: "summarizer exploded"},
        )
    logs = lcm_home / "logs"
    logs.mkdir()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    (logs / "hooks.log").write_text(
        f"{stamp}Z Stop session=s pid=1 ok 40ms t.jsonl: +3\n"
        f"{stamp}Z Stop pid=2 error 3ms HookInputError: empty stdin\n"
    )
    env = {"LCM_SUMMARIZER_PROVIDER": "command", "LCM_SUMMARIZER_COMMAND": "no-such-llm -p"}
    code, checks = doctor(tmp_path, env)
    assert code == 1
    found = problems(checks)
    backlog = found[("worker", "backlog")]
    assert "no worker running" in backlog["detail"] and "lcm worker --once" in backlog["fix"]
    assert "summarizer exploded" in found[("worker", "compaction errors")]["detail"]
    assert "not on PATH" in found[("summarizer", "command")]["detail"]
    log = checks[("hooks", "recent errors")]
    assert log["status"] == "warn" and "1 of 2" in log["detail"]
    assert checks[("store", "migrations")]["status"] == "ok"
    index = checks[("worker", "substring index")]
    assert index["status"] == "warn" and f"{result.messages_added} message(s)" in index["detail"]

    text = lcm("doctor", env=env, cwd=tmp_path)
    assert text.returncode == 1
    assert "[FAIL] worker: backlog" in text.stdout and "fix: run `lcm worker --once`" in text.stdout


def test_unreadable_store_is_a_problem(tmp_path: Path, lcm_home: Path) -> None:
    lcm_home.mkdir(parents=True)
    (lcm_home / "lcm.db").write_bytes(b"this is not a database" * 100)
    code, checks = doctor(tmp_path)
    assert code == 1
    assert checks[("store", "open")]["status"] == "problem"
