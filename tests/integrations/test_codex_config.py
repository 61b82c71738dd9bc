"""Codex's config.toml and hook trust: lossless owns exactly the tables it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from lossless.integrations import codex, codex_trust, toml_block
from lossless.integrations.files import write_atomic

USER_TOML = '# mine\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
PROJECT_TRUST = '[projects."/home/me/repo"]\ntrust_level = "trusted"\n'


def lcm(
    *args: str, cwd: Path | None = None, code: str = "pass"
) -> subprocess.CompletedProcess[str]:
    prelude = f"import sys; {code}; from lossless.cli import main; sys.argv = ['lcm', *sys.argv[1:]]; main()"
    return subprocess.run(
        [sys.executable, "-c", prelude, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PATH": "/usr/bin:/bin"},  # no codex on PATH: computed trust
        check=False,
    )


@pytest.fixture
def codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user" / ".codex"
    home.mkdir(parents=True)
    monkeypatch.setenv("LCM_CODEX_HOME", str(home))
    return home


def test_hash_identity_follows_codex_normalization() -> None:
    handler = {"type": "command", "command": "/opt/lcm hook Stop --client codex", "timeout": 30}
    base = codex_trust.hook_hash("Stop", None, handler)
    assert base.startswith("sha256:") and len(base) == len("sha256:") + 64
    # Codex fills in defaults before hashing: async false, timeout 600.
    assert codex_trust.hook_hash("Stop", None, {**handler, "async": False}) == base
    no_timeout = {k: v for k, v in handler.items() if k != "timeout"}
    assert codex_trust.hook_hash("Stop", None, no_timeout) == codex_trust.hook_hash(
        "Stop", None, {**handler, "timeout": 600}
    )
    # Anything Codex would run differently is another hash.
    assert codex_trust.hook_hash("Stop", "x", handler) != base
    assert codex_trust.hook_hash("SessionEnd", None, handler) != base
    assert codex_trust.hook_hash("Stop", None, {**handler, "command": "/opt/lcm2"}) != base
    assert codex_trust.event_label("UserPromptSubmit") == "user_prompt_submit"
    key = codex_trust.hook_key(Path("/h/.codex/hooks.json"), "PostToolUse", 2, 0)
    assert key == "/h/.codex/hooks.json:post_tool_use:2:0"


def test_install_records_trust_for_exactly_its_hooks(codex_home: Path) -> None:
    (codex_home / "config.toml").write_text(USER_TOML)
    user_hook = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "afplay a.wav"}]}]}}
    (codex_home / "hooks.json").write_text(json.dumps(user_hook))
    done = lcm("install", "codex")
    assert done.returncode == 0, done.stderr
    assert "hashes computed as Codex 0.171 computes them" in done.stderr
    hooks_doc = json.loads((codex_home / "hooks.json").read_text())
    ours = codex_trust.lcm_hooks(hooks_doc, codex_home / "hooks.json")
    assert {h.event for h in ours} == {s.event for s in codex.HOOKS}
    # The user's own Stop hook keeps index 0; lossless's group comes after it.
    assert f"{codex_home / 'hooks.json'}:stop:1:0" in {h.key for h in ours}
    recorded = codex_trust.trust_states(tomllib.loads((codex_home / "config.toml").read_text()))
    assert recorded == {h.key: h.current_hash for h in ours}

    # A changed command (lcm moved) is no longer trusted: doctor says so and how to fix it.
    hooks_doc["hooks"]["Stop"][1]["hooks"][0]["command"] += " --moved"
    write_atomic(codex_home / "hooks.json", json.dumps(hooks_doc))
    report = json.loads(lcm("doctor", "--json").stdout)
    trust = next(c for c in report["checks"] if c["name"] == "user: hook trust")
    assert trust["status"] == "problem" and "modified" in trust["detail"]
    assert trust["fix"] == "lcm install codex"


def test_uninstall_keeps_a_table_written_inside_the_block(codex_home: Path) -> None:
    """Codex's writer appends a new table before the file's trailing comments, so
    after `codex exec --trust` the end marker follows the user's new table."""
    config = codex_home / "config.toml"
    config.write_text(USER_TOML)
    assert lcm("install", "codex").returncode == 0
    text = config.read_text()
    assert text.rstrip().endswith(toml_block.END)
    head, _ = text.rsplit(toml_block.END, 1)
    config.write_text(f"{head}\n{PROJECT_TRUST}{toml_block.END}\n")
    # ... and Codex's `mcp add` rewrites [mcp_servers.*], dropping comments and tags.
    rewritten = (
        config.read_text()
        .replace(codex.BEGIN + "\n", "")
        .replace("[mcp_servers.lcm]  # lossless", "[mcp_servers.lcm]")
    )
    config.write_text(rewritten)

    done = lcm("uninstall", "codex")
    assert done.returncode == 0, done.stderr
    after = config.read_text()
    assert "lossless" not in after
    parsed = tomllib.loads(after)
    assert parsed["projects"] == {"/home/me/repo": {"trust_level": "trusted"}}
    assert parsed["mcp_servers"] == {"docs": {"command": "docs-mcp"}} and "hooks" not in parsed
    assert after.startswith(USER_TOML)


def test_project_scope_records_trust_in_the_user_config(codex_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    (codex_home / "config.toml").write_text(USER_TOML)
    assert lcm("install", "codex", "--scope", "project", cwd=project).returncode == 0
    user = tomllib.loads((codex_home / "config.toml").read_text())
    keys = set(user["hooks"]["state"])
    assert keys and all(k.startswith(f"{project / '.codex' / 'hooks.json'}:") for k in keys)
    assert "lcm" in tomllib.loads((project / ".codex" / "config.toml").read_text())["mcp_servers"]
    assert lcm("install", "codex").returncode == 0  # the user scope beside it
    assert lcm("uninstall", "codex", "--scope", "project", cwd=project).returncode == 0
    user = tomllib.loads((codex_home / "config.toml").read_text())
    assert all(not k.startswith(str(project)) for k in user["hooks"]["state"])
    assert user["mcp_servers"]["lcm"]  # the user-scope install is untouched
    assert lcm("uninstall", "codex").returncode == 0
    assert (codex_home / "config.toml").read_text() == USER_TOML


def test_install_without_the_mcp_extra_refuses_and_says_how(codex_home: Path) -> None:
    done = lcm("install", "codex", code="sys.modules['mcp'] = None")
    assert done.returncode == 1
    for how in ("-m pip install 'lossless-context[mcp]'", "pipx", "uv tool install"):
        assert how in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (codex_home / "hooks.json").exists()
