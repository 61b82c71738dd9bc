"""`lcm install` / `lcm uninstall` on temporary homes that already hold user settings."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from lossless.integrations import claude_code, codex
from lossless.integrations.commands import is_lcm_hook

USER_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PostToolUse": [
            {
                "matcher": "Edit|Write",
                "hooks": [{"type": "command", "command": "prettier --write", "timeout": 10}],
            }
        ],
        "Notification": [{"hooks": [{"type": "command", "command": "say hi"}]}],
    },
}
CLAUDE_STATE: dict[str, Any] = {
    "numStartups": 42,
    "projects": {"/home/me/app": {"allowedTools": []}},
    "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": [], "env": {}}},
}
CODEX_TOML = """\
# my codex settings
model = "o3"  # the good one

[mcp_servers.docs]
command = "docs-mcp"
args = ["--port", "0"]

[profiles.fast]
model = "o4-mini"
"""
CODEX_HOOKS: dict[str, Any] = {
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "afplay done.wav"}]}]}
}


def lcm(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "lcm"
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "lossless"]
    return subprocess.run(
        [*argv, *args], capture_output=True, text=True, timeout=60, cwd=cwd, check=False
    )


def write_json(path: Path, data: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2) + "\n"
    path.write_text(text)
    return text


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A user home laid out like the real one: ~/.claude, ~/.claude.json, ~/.codex."""
    user = tmp_path / "user"
    claude_home = user / ".claude"
    codex_home = user / ".codex"
    claude_home.mkdir(parents=True)
    codex_home.mkdir()
    monkeypatch.setenv("LCM_CLAUDE_HOME", str(claude_home))
    monkeypatch.setenv("LCM_CODEX_HOME", str(codex_home))
    return {
        "settings": claude_home / "settings.json",
        "state": user / ".claude.json",
        "codex_toml": codex_home / "config.toml",
        "codex_hooks": codex_home / "hooks.json",
    }


def lcm_handlers(settings: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for event, groups in settings.get("hooks", {}).items():
        for group in groups:
            for handler in group["hooks"]:
                if is_lcm_hook(handler.get("command")):
                    found.setdefault(event, []).append({**handler, "matcher": group.get("matcher")})
    return found


def check_installed_commands(handlers: dict[str, list[dict[str, Any]]], client: str) -> None:
    for event, items in handlers.items():
        assert len(items) == 1, event
        argv = shlex.split(items[0]["command"])
        assert Path(argv[0]).is_absolute() and Path(argv[0]).exists(), argv
        assert argv[-4:] == ["hook", event, "--client", client]


# --------------------------------------------------------------------------- claude code


def test_claude_user_scope_merge_idempotent_and_exact_uninstall(
    homes: dict[str, Path], lcm_home: Path
) -> None:
    settings_text = write_json(homes["settings"], USER_SETTINGS)
    state_text = write_json(homes["state"], CLAUDE_STATE)

    first = lcm("install", "claude-code")
    assert first.returncode == 0, first.stderr
    settings = json.loads(homes["settings"].read_text())
    handlers = lcm_handlers(settings)
    assert set(handlers) == {h.event for h in claude_code.HOOKS}
    check_installed_commands(handlers, "claude-code")
    assert handlers["SessionStart"][0]["matcher"] == "compact|resume"
    # The user's own hooks and settings are all still there, in order; the
    # read-only lcm tools are approved after the user's own entries.
    assert settings["model"] == "opus"
    assert settings["permissions"]["allow"] == [
        *USER_SETTINGS["permissions"]["allow"],
        *claude_code.READ_ONLY_TOOLS,
    ]
    assert "mcp__lcm__lcm_store" not in settings["permissions"]["allow"]
    for event, groups in USER_SETTINGS["hooks"].items():
        assert settings["hooks"][event][: len(groups)] == groups
    state = json.loads(homes["state"].read_text())
    assert state["numStartups"] == 42 and state["projects"] == CLAUDE_STATE["projects"]
    assert state["mcpServers"]["github"] == CLAUDE_STATE["mcpServers"]["github"]
    entry = state["mcpServers"]["lcm"]
    assert entry["type"] == "stdio" and Path(entry["command"]).exists()
    assert entry["args"][-1] == "mcp" and entry["args"][:2] == ["--home", str(lcm_home)]

    installed = (homes["settings"].read_bytes(), homes["state"].read_bytes())
    again = lcm("install", "claude-code")
    assert again.returncode == 0 and "already installed" in again.stdout
    assert (homes["settings"].read_bytes(), homes["state"].read_bytes()) == installed

    gone = lcm("uninstall", "claude-code")
    assert gone.returncode == 0, gone.stderr
    assert homes["settings"].read_text() == settings_text
    assert homes["state"].read_text() == state_text
    nothing = lcm("uninstall", "claude-code")
    assert "nothing to remove" in nothing.stdout
    assert homes["settings"].read_text() == settings_text


def test_claude_ask_for_tools_leaves_permissions_alone(homes: dict[str, Path]) -> None:
    write_json(homes["settings"], USER_SETTINGS)
    assert lcm("install", "claude-code").returncode == 0
    # Re-installing with the opt-out takes lossless's approvals back out.
    assert lcm("install", "claude-code", "--ask-for-tools").returncode == 0
    settings = json.loads(homes["settings"].read_text())
    assert settings["permissions"] == USER_SETTINGS["permissions"]
    assert lcm_handlers(settings)


def test_claude_reinstall_after_lcm_moved_replaces_its_commands(homes: dict[str, Path]) -> None:
    assert lcm("install", "claude-code").returncode == 0
    text = homes["settings"].read_text()
    current = shlex.split(lcm_handlers(json.loads(text))["Stop"][0]["command"])[0]
    homes["settings"].write_text(text.replace(current, "/old/venv/bin/lcm"))
    assert lcm("install", "claude-code").returncode == 0
    handlers = lcm_handlers(json.loads(homes["settings"].read_text()))
    check_installed_commands(handlers, "claude-code")
    assert "/old/venv" not in homes["settings"].read_text()


def test_dry_run_writes_nothing(homes: dict[str, Path], tmp_path: Path) -> None:
    settings_text = write_json(homes["settings"], USER_SETTINGS)
    result = lcm("install", "claude-code", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "+++ " in result.stdout and "hook Stop" in result.stdout
    assert homes["settings"].read_text() == settings_text
    assert not homes["state"].exists()
    assert lcm("install", "codex", "--dry-run").returncode == 0
    assert not homes["codex_toml"].exists() and not homes["codex_hooks"].exists()
    project = tmp_path / "proj"
    project.mkdir()
    assert (
        lcm("install", "claude-code", "--scope", "project", "--dry-run", cwd=project).returncode
        == 0
    )
    assert list(project.iterdir()) == []
    assert lcm("install", "claude-code").returncode == 0
    before = homes["settings"].read_bytes()
    assert lcm("uninstall", "claude-code", "--dry-run").returncode == 0
    assert homes["settings"].read_bytes() == before


def test_claude_project_scope(homes: dict[str, Path], tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    local = project / ".claude" / "settings.local.json"
    local.write_text("{}\n")
    result = lcm("install", "claude-code", "--scope", "project", cwd=project)
    assert result.returncode == 0, result.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    check_installed_commands(lcm_handlers(settings), "claude-code")
    mcp = json.loads((project / ".mcp.json").read_text())
    assert set(mcp["mcpServers"]) == {"lcm"}
    assert not homes["settings"].exists() and not homes["state"].exists()
    # Uninstall from elsewhere with --project-dir; files lossless created go away.
    gone = lcm("uninstall", "claude-code", "--scope", "project", "--project-dir", str(project))
    assert gone.returncode == 0, gone.stderr
    assert not (project / ".claude" / "settings.json").exists()
    assert not (project / ".mcp.json").exists()
    assert local.read_text() == "{}\n"


def test_claude_refuses_foreign_server_and_unreadable_settings(homes: dict[str, Path]) -> None:
    state = {"mcpServers": {"lcm": {"command": "/usr/bin/some-other-lcm-thing", "args": []}}}
    state_text = write_json(homes["state"], state)
    result = lcm("install", "claude-code")
    assert result.returncode == 1 and "not lossless" in result.stderr
    assert homes["state"].read_text() == state_text
    assert not homes["settings"].exists()

    homes["state"].unlink()
    homes["settings"].write_text('{"hooks": {,}')
    broken = lcm("install", "claude-code")
    assert broken.returncode == 1 and "not valid JSON" in broken.stderr
    assert homes["settings"].read_text() == '{"hooks": {,}'


def test_installed_hook_command_runs_and_ingests(
    homes: dict[str, Path], tmp_path: Path, shared_data: Path, lcm_home: Path
) -> None:
    assert lcm("install", "claude-code").returncode == 0
    handlers = lcm_handlers(json.loads(homes["settings"].read_text()))
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes((shared_data / "claude-code/spotter/short.jsonl").read_bytes())
    payload = {
        "session_id": "s",
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "hook_event_name": "Stop",
    }
    # The bare environment below has no LCM_TRANSCRIPT_DIRS: allow the test's
    # folder in the configuration file, as a user would for a custom location.
    # The hook server the hook starts for the next one (the bare environment
    # keeps it on, as a user's) exits a second after, not half an hour.
    lcm_home.mkdir(parents=True, exist_ok=True)
    (lcm_home / "config.toml").write_text(
        f"transcript_dirs = {json.dumps(str(tmp_path))}\n\n[hooks]\nserver_idle_s = 1\n"
    )
    # The command runs through a shell from an unrelated directory with a bare
    # environment, as the client does.
    done = subprocess.run(
        handlers["Stop"][0]["command"],
        shell=True,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout == ""
    log = (lcm_home / "logs" / "hooks.log").read_text()
    assert " Stop " in log and " ok " in log and ": +" in log


# --------------------------------------------------------------------------- codex


def test_codex_install_keeps_comments_and_uninstalls_exactly(
    homes: dict[str, Path],
) -> None:
    homes["codex_toml"].write_text(CODEX_TOML)
    hooks_text = write_json(homes["codex_hooks"], CODEX_HOOKS)
    result = lcm("install", "codex")
    assert result.returncode == 0, result.stderr
    text = homes["codex_toml"].read_text()
    assert text.startswith(CODEX_TOML)
    parsed = tomllib.loads(text)
    assert parsed["model"] == "o3" and parsed["profiles"]["fast"]["model"] == "o4-mini"
    assert parsed["mcp_servers"]["docs"]["command"] == "docs-mcp"
    server = parsed["mcp_servers"]["lcm"]
    assert Path(server["command"]).exists() and server["args"][-1] == "mcp"
    hooks = json.loads(homes["codex_hooks"].read_text())
    assert hooks["hooks"]["Stop"][0] == CODEX_HOOKS["hooks"]["Stop"][0]
    handlers = lcm_handlers(hooks)
    assert set(handlers) == {h.event for h in codex.HOOKS}
    check_installed_commands(handlers, "codex")

    snapshot = (homes["codex_toml"].read_bytes(), homes["codex_hooks"].read_bytes())
    assert "already installed" in lcm("install", "codex").stdout
    assert (homes["codex_toml"].read_bytes(), homes["codex_hooks"].read_bytes()) == snapshot

    assert lcm("uninstall", "codex").returncode == 0
    assert homes["codex_toml"].read_text() == CODEX_TOML
    assert homes["codex_hooks"].read_text() == hooks_text


def test_codex_fresh_home_and_conflicts(homes: dict[str, Path], tmp_path: Path) -> None:
    assert lcm("install", "codex").returncode == 0
    assert tomllib.loads(homes["codex_toml"].read_text())["mcp_servers"]["lcm"]
    assert lcm("uninstall", "codex").returncode == 0
    assert not homes["codex_toml"].exists() and not homes["codex_hooks"].exists()

    homes["codex_toml"].write_text('[mcp_servers.lcm]\ncommand = "something-else"\n')
    clash = lcm("install", "codex")
    assert clash.returncode == 1 and "outside lossless's block" in clash.stderr
    homes["codex_toml"].write_text("model = \n")
    bad = lcm("install", "codex")
    assert bad.returncode == 1 and "not valid TOML" in bad.stderr

    homes["codex_toml"].write_text("[features]\nhooks = false\n")
    off = lcm("install", "codex")
    assert off.returncode == 0 and "switched off" in off.stderr

    project = tmp_path / "repo"
    project.mkdir()
    assert lcm("install", "codex", "--scope", "project", cwd=project).returncode == 0
    assert (project / ".codex" / "hooks.json").exists()
    assert "[mcp_servers.lcm]" in (project / ".codex" / "config.toml").read_text()


def test_hooks_run_the_virtualenvs_python_not_the_interpreter_it_links_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m lossless install`` from a virtualenv: its python is a symlink to
    the base interpreter, which lacks lossless; the hooks must name the link."""
    from lossless.integrations.commands import lcm_argv

    link = tmp_path / "venv" / "bin" / "python"
    link.parent.mkdir(parents=True)
    link.symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(link))
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "lossless" / "__main__.py")])
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert lcm_argv() == [str(link), "-m", "lossless"]
