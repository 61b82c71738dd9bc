"""Running the real Claude Code and Codex CLI in a temporary HOME against the scripted server.

The clients come from ``.ci/install-clients`` (pinned versions from the npm
registry, in the git-ignored ``.clients/`` folder of the checkout). Every run is
offline: the only server they talk to is the scripted one on 127.0.0.1, and
their own update checks, telemetry and error reporting are switched off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import SUITE_ENV
from tests.real_clients.model_server import ModelServer

REPO_ROOT = Path(__file__).resolve().parents[2]
CLIENTS_BIN = REPO_ROOT / ".clients" / "node_modules" / ".bin"
INSTALL_SCRIPT = REPO_ROOT / ".ci" / "install-clients"
REGISTRY_UNREACHABLE = 3


def ensure_clients() -> Path:
    """The folder holding ``claude`` and ``codex``, installing them first when needed.

    Skips the calling test only when the npm registry cannot be reached; any
    other failure to install is a test failure.
    """
    try:
        done = subprocess.run(
            ["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=600
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{INSTALL_SCRIPT} did not finish in 600 s")
    if done.returncode == REGISTRY_UNREACHABLE:
        pytest.skip(
            "real-client tests need Claude Code and Codex from the npm registry, which "
            f"cannot be reached: {done.stderr.strip()[-300:]}"
        )
    if done.returncode != 0:
        pytest.fail(f"{INSTALL_SCRIPT} failed ({done.returncode}): {done.stderr[-2000:]}")
    return CLIENTS_BIN


def lcm_script() -> str:
    script = Path(sys.executable).parent / "lcm"
    assert script.is_file(), f"no lcm script beside {sys.executable}"
    return str(script)


@dataclass
class Sandbox:
    """A temporary HOME with its own lcm home, and the commands to run in it."""

    root: Path
    bin_dir: Path
    server: ModelServer
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.home / "project"

    @property
    def lcm_home(self) -> Path:
        return self.home / ".lcm"

    @property
    def env(self) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "LCM_HOME": str(self.lcm_home),
            # Hooks run on the home's hook server, as a user's do; should a
            # test end without stopping it, it goes by itself soon.
            "LCM_HOOKS_SERVER_IDLE_S": "120",
            # A worker a hook or an import starts goes a second after its work
            # (not the default minute), so none outlives the test; and it has
            # no embedding backlog to work through (the suite's setting: the
            # extra is installed here, and embedding a session costs CPU
            # minutes that no client test looks at).
            "LCM_WORKER_IDLE_S": "1",
            "LCM_SEMANTIC_ENABLED": SUITE_ENV["LCM_SEMANTIC_ENABLED"],
            # Claude Code
            "ANTHROPIC_BASE_URL": self.server.url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            # Codex
            "CODEX_HOME": str(self.home / ".codex"),
            "SCRIPTED_API_KEY": "sk-scripted",
        }
        env.update(self.extra_env)
        return env

    def run(
        self, argv: list[str], *, timeout: float = 120, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            argv,
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"{argv} exited {done.returncode}\nstdout: {done.stdout[-3000:]}\n"
                f"stderr: {done.stderr[-3000:]}"
            )
        return done

    def lcm(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run([lcm_script(), *args], check=check)

    def claude(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run([str(self.bin_dir / "claude"), *args], check=check)

    def codex(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run([str(self.bin_dir / "codex"), *args], check=check)

    def write_lcm_config(self, settings: Mapping[str, Any]) -> None:
        """Small compaction sizes, so the few messages of a scripted session get summarized."""
        self.lcm_home.mkdir(parents=True, exist_ok=True)
        lines = [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
        (self.lcm_home / "config.toml").write_text("\n".join(lines) + "\n")

    def hook_log(self) -> list[str]:
        path = self.lcm_home / "logs" / "hooks.log"
        if not path.exists():
            return []
        return [line for line in path.read_text().splitlines() if line[:4].isdigit()]


def hook_runs(log: list[str]) -> list[tuple[str, str]]:
    """(event, outcome) per hook run in the log, outcome ``ok``/``error``/..."""
    runs: list[tuple[str, str]] = []
    for line in log:
        fields = line.split()
        if len(fields) < 3:
            continue
        outcome = next((f for f in fields[2:] if f in ("ok", "error", "skipped", "deferred")), "?")
        runs.append((fields[1], outcome))
    return runs


def stored_messages(lcm_home: Path) -> list[tuple[str, str]]:
    """(role, content) of every stored message, in conversation and sequence order."""
    from lossless.config import load_config
    from lossless.engine.engine import Engine

    with Engine.open(config=load_config(lcm_home)) as engine:
        store = engine.store
        out: list[tuple[str, str]] = []
        for conversation in sorted(store.conversations.list(), key=lambda c: c.id):
            out.extend((m.role, m.content) for m in store.messages.iter_all(conversation.id))
        return out
