"""Install lossless into the Codex CLI: hooks in hooks.json, the MCP server in config.toml.

========  ==================================  =========================================
scope     hooks                               MCP server ``lcm``
========  ==================================  =========================================
user      ``<codex_home>/hooks.json``         ``<codex_home>/config.toml``
project   ``<project>/.codex/hooks.json``     ``<project>/.codex/config.toml``
========  ==================================  =========================================

Codex reads ``hooks.json`` next to each config layer, in the same shape as
Claude Code's settings (event -> matcher groups -> ``{"type": "command", ...}``
handlers), and sends the same kind of event JSON on stdin (``session_id``,
``transcript_path`` = the rollout file, ``cwd``, ``hook_event_name``). Its
events differ: no ``SessionEnd`` and no ``compact`` start source (the rollout
parser holds nothing back, so the last hook of a turn already stored
everything), ``PostCompact`` exists. Hooks are on by default in current Codex;
a ``[features] hooks = false`` (or ``codex_hooks = false``) in config.toml turns
them off, which ``lcm doctor`` reports; the installer leaves feature flags alone.

``config.toml`` is edited as text so the user's comments and layout survive:
lossless's table sits between two marker comments and uninstall removes
exactly that block.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lossless.errors import ConfigError
from lossless.integrations.commands import (
    MCP_NAME,
    hook_argv,
    is_lcm_mcp_entry,
    join_command,
    mcp_argv,
)
from lossless.integrations.files import (
    FileChange,
    Plan,
    Scope,
    dump_json,
    load_json_object,
    read_text,
    resolve_project,
)
from lossless.integrations.hooks_json import HookSpec, installed_hooks, merge_hooks, remove_hooks

if TYPE_CHECKING:
    from lossless.config import Config

CLIENT = "codex"

HOOKS: tuple[HookSpec, ...] = (
    HookSpec("SessionStart", "resume"),
    HookSpec("UserPromptSubmit"),
    HookSpec("PostToolUse"),
    HookSpec("Stop"),
    HookSpec("PreCompact"),
    HookSpec("PostCompact"),
)

BEGIN = "# >>> lossless: added by `lcm install codex`; `lcm uninstall codex` removes it >>>"
END = "# <<< lossless <<<"
# The block, with the blank line the installer put before it (a newline that
# follows another newline), so uninstall restores the file byte for byte.
_BLOCK_RE = re.compile(
    r"(?:(?<=\n)\n)?" + re.escape(BEGIN.split(":")[0]) + r"[^\n]*\n.*?" + re.escape(END) + r"\n?",
    re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class CodexPaths:
    config: Path
    hooks: Path


def paths(config: Config, scope: Scope, project_dir: Path | None = None) -> CodexPaths:
    base = config.path("codex_home") if scope == "user" else resolve_project(project_dir) / ".codex"
    return CodexPaths(base / "config.toml", base / "hooks.json")


def _toml_str(value: str) -> str:
    # JSON string escapes are valid TOML basic-string escapes.
    return json.dumps(value, ensure_ascii=False)


def mcp_block(config: Config) -> str:
    argv = mcp_argv(config)
    args = ", ".join(_toml_str(a) for a in argv[1:])
    return (
        f"{BEGIN}\n[mcp_servers.{MCP_NAME}]\ncommand = {_toml_str(argv[0])}\n"
        f"args = [{args}]\n{END}\n"
    )


def _parse_toml(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid TOML ({exc}); lossless will not rewrite a file it cannot "
            "read: fix it, then run the command again"
        ) from None


def _without_block(text: str) -> str:
    return _BLOCK_RE.sub("", text, count=1)


def _edit_toml(path: Path, install: Config | None) -> FileChange:
    before = read_text(path)
    text = before or ""
    _parse_toml(path, text)
    stripped = _without_block(text)
    if install is None:
        if stripped == text:
            return FileChange(path, before, before, [])
        after = stripped if stripped.strip() else None
        return FileChange(path, before, after, [f"removed MCP server {MCP_NAME!r}"])
    servers = _parse_toml(path, stripped).get("mcp_servers")
    if isinstance(servers, Mapping) and MCP_NAME in servers:
        raise ConfigError(
            f"{path} already defines [mcp_servers.{MCP_NAME}] outside lossless's block "
            f"({servers[MCP_NAME]!r}); remove or rename it, then install again"
        )
    if stripped and not stripped.endswith("\n"):
        stripped += "\n"
    after = stripped + ("\n" if stripped else "") + mcp_block(install)
    parsed = _parse_toml(path, after)
    if not is_lcm_mcp_entry(parsed.get("mcp_servers", {}).get(MCP_NAME)):
        raise ConfigError(f"internal: the [mcp_servers.{MCP_NAME}] written to {path} is wrong")
    return FileChange(path, before, after, [f"MCP server {MCP_NAME!r}"])


def _edit_hooks(path: Path, config: Config | None) -> FileChange:
    before = read_text(path)
    data = load_json_object(path, before)
    original = copy.deepcopy(data)
    if config is None:
        summary = remove_hooks(data)
    else:
        summary = merge_hooks(
            data, HOOKS, lambda event: join_command(hook_argv(config, event, CLIENT))
        )
    if data == original:
        return FileChange(path, before, before, [])
    return FileChange(path, before, dump_json(data, before) if data else None, summary)


def plan_install(config: Config, scope: Scope = "user", project_dir: Path | None = None) -> Plan:
    where = paths(config, scope, project_dir)
    plan = Plan("install", CLIENT, scope)
    plan.changes.append(_edit_hooks(where.hooks, config))
    plan.changes.append(_edit_toml(where.config, config))
    if features_disabled(where.config):
        plan.notes.append(
            f"hooks are switched off in {where.config} ([features] hooks = false): lossless "
            "will only see sessions through `lcm import` until you turn them on"
        )
    return plan


def plan_uninstall(config: Config, scope: Scope = "user", project_dir: Path | None = None) -> Plan:
    where = paths(config, scope, project_dir)
    plan = Plan("uninstall", CLIENT, scope)
    plan.changes.append(_edit_hooks(where.hooks, None))
    plan.changes.append(_edit_toml(where.config, None))
    return plan


def features_disabled(config_toml: Path) -> bool:
    """Whether config.toml turns Codex hooks off."""
    try:
        text = read_text(config_toml)
        data = tomllib.loads(text or "")
    except (ConfigError, tomllib.TOMLDecodeError):
        return False
    features = data.get("features")
    if not isinstance(features, Mapping):
        return False
    return features.get("hooks") is False or features.get("codex_hooks") is False


@dataclass(slots=True)
class Installed:
    scope: Scope
    config: Path
    hooks_file: Path
    hooks: dict[str, list[str]]
    missing_events: list[str]
    mcp: Mapping[str, Any] | None
    hooks_disabled: bool
    error: str | None = None

    @property
    def present(self) -> bool:
        return bool(self.hooks) or self.mcp is not None


def inspect(config: Config, scope: Scope, project_dir: Path | None = None) -> Installed:
    where = paths(config, scope, project_dir)
    try:
        hooks_doc = load_json_object(where.hooks, read_text(where.hooks))
        toml = _parse_toml(where.config, read_text(where.config) or "")
    except ConfigError as exc:
        return Installed(scope, where.config, where.hooks, {}, [], None, False, str(exc))
    hooks = installed_hooks(hooks_doc)
    servers = toml.get("mcp_servers")
    entry = servers.get(MCP_NAME) if isinstance(servers, Mapping) else None
    return Installed(
        scope,
        where.config,
        where.hooks,
        hooks,
        [h.event for h in HOOKS if h.event not in hooks],
        entry if is_lcm_mcp_entry(entry) else None,
        features_disabled(where.config),
    )
