"""The Claude Code plugin layout at the repository root matches what `lcm install` writes."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import lossless
from lossless.integrations import claude_code
from lossless.integrations.commands import is_lcm_mcp_entry

ROOT = Path(__file__).resolve().parents[2]


def test_manifest_names_the_package_and_leaves_defaults_to_convention() -> None:
    manifest = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "lossless"
    assert manifest["version"] == lossless.__version__
    assert manifest["description"]
    # hooks/hooks.json and .mcp.json are loaded by convention; naming them in
    # the manifest makes Claude Code reject them as duplicates.
    assert "hooks" not in manifest and "mcpServers" not in manifest


def test_plugin_hooks_match_the_installer() -> None:
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]
    assert list(hooks) == [spec.event for spec in claude_code.HOOKS]
    for spec in claude_code.HOOKS:
        (group,) = hooks[spec.event]
        assert group.get("matcher") == spec.matcher
        (handler,) = group["hooks"]
        assert handler["type"] == "command" and handler["timeout"] == spec.timeout_s
        # Guarded so a machine without lcm on PATH sees no hook error.
        guard, run = handler["command"].split(" && ")
        assert guard == "command -v lcm >/dev/null 2>&1"
        assert shlex.split(run) == [
            "lcm",
            "hook",
            spec.event,
            "--client",
            "claude-code",
            "||",
            "true",
        ]


def test_plugin_hook_command_is_harmless_without_lcm_on_path() -> None:
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]
    command = hooks["Stop"][0]["hooks"][0]["command"]
    done = subprocess.run(
        command,
        shell=True,
        input="{}",
        capture_output=True,
        text=True,
        env={"PATH": "/nonexistent"},
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_plugin_mcp_server_runs_lcm_mcp() -> None:
    servers = json.loads((ROOT / ".mcp.json").read_text())["mcpServers"]
    assert list(servers) == ["lcm"]
    assert is_lcm_mcp_entry(servers["lcm"]) and servers["lcm"]["command"] == "lcm"
