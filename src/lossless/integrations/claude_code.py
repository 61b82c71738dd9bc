"""Install lossless into Claude Code: hooks in settings.json, the MCP server entry.

Where things go, by scope (the same places ``claude mcp add -s <scope>`` uses):

========  =================================  ==========================================
scope     hooks                              MCP server ``lcm``
========  =================================  ==========================================
user      ``<claude_home>/settings.json``    ``~/.claude.json`` -> ``mcpServers``
project   ``<project>/.claude/settings.json``  ``<project>/.mcp.json`` -> ``mcpServers``
========  =================================  ==========================================

``claude_home`` comes from the configuration (default ``~/.claude``). Claude
Code keeps its global state file ``.claude.json`` beside that folder, or inside
it when the folder is not called ``.claude`` (``CLAUDE_CONFIG_DIR``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
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

CLIENT = "claude-code"

# SessionStart only for the sources where context was lost and the DAG view
# helps; PostToolUse (and PostToolUseFailure) for every tool. Events without matchers take no matcher.
HOOKS: tuple[HookSpec, ...] = (
    HookSpec("SessionStart", "compact|resume"),
    HookSpec("UserPromptSubmit"),
    HookSpec("PostToolUse", "*"),
    # A failed tool call fires this, not PostToolUse.
    HookSpec("PostToolUseFailure", "*"),
    HookSpec("Stop"),
    HookSpec("SubagentStop"),
    HookSpec("PreCompact"),
    HookSpec("SessionEnd"),
)


# lossless's MCP tools that only read, pre-approved in ``permissions.allow``
# (``claude -p`` denies every tool not approved; ``lcm_store`` writes, so it
# keeps asking).
READ_ONLY_TOOLS: tuple[str, ...] = tuple(
    f"mcp__{MCP_NAME}__{name}"
    for name in (
        "lcm_grep",
        "lcm_search",
        "lcm_describe",
        "lcm_expand",
        "lcm_expand_query",
        "lcm_status",
    )
)


def allow_tools(settings: dict[str, Any]) -> list[str]:
    """Add the read-only tools to ``permissions.allow`` (once each, after the user's)."""
    permissions = settings.setdefault("permissions", {})
    if not isinstance(permissions, dict):
        raise ConfigError("the 'permissions' setting is not an object; fix it by hand first")
    allowed = permissions.setdefault("allow", [])
    if not isinstance(allowed, list):
        raise ConfigError("permissions.allow is not a list; fix it by hand first")
    missing = [tool for tool in READ_ONLY_TOOLS if tool not in allowed]
    allowed.extend(missing)
    return [f"allowed {len(READ_ONLY_TOOLS)} read-only lcm tools"] if missing else []


def disallow_tools(settings: dict[str, Any]) -> list[str]:
    """Take exactly lossless's entries out of ``permissions.allow``; containers left empty go."""
    permissions = settings.get("permissions")
    allowed = permissions.get("allow") if isinstance(permissions, dict) else None
    if not isinstance(permissions, dict) or not isinstance(allowed, list):
        return []
    kept = [entry for entry in allowed if entry not in READ_ONLY_TOOLS]
    if len(kept) == len(allowed):
        return []
    if kept:
        permissions["allow"] = kept
    else:
        del permissions["allow"]
        if not permissions:
            del settings["permissions"]
    return ["removed the lcm tool permissions"]


@dataclass(frozen=True, slots=True)
class ClaudePaths:
    settings: Path
    mcp_file: Path
    # The user-scope state file holds far more than MCP servers: never delete it.
    mcp_file_disposable: bool


def claude_json_path(claude_home: Path) -> Path:
    if claude_home.name == ".claude":
        return claude_home.parent / ".claude.json"
    return claude_home / ".claude.json"


def paths(config: Config, scope: Scope, project_dir: Path | None = None) -> ClaudePaths:
    if scope == "user":
        home = config.claude_dir
        return ClaudePaths(home / "settings.json", claude_json_path(home), False)
    project = resolve_project(project_dir)
    return ClaudePaths(project / ".claude" / "settings.json", project / ".mcp.json", True)


def mcp_entry(config: Config) -> dict[str, Any]:
    """The entry ``claude mcp add lcm -- <lcm> mcp`` would write."""
    argv = mcp_argv(config)
    return {"type": "stdio", "command": argv[0], "args": argv[1:], "env": {}}


def _edit_json(
    path: Path,
    edit: Callable[[dict[str, Any]], list[str]],
    *,
    disposable: bool = True,
) -> FileChange:
    """Apply ``edit`` to the JSON object in ``path``; unchanged data keeps the text as is.

    An object left empty is deleted when ``disposable`` (a file lossless created).
    """
    before = read_text(path)
    data = load_json_object(path, before)
    original = copy.deepcopy(data)
    summary = edit(data)
    if data == original:
        return FileChange(path, before, before, [])
    after: str | None = dump_json(data, before)
    if not data and disposable:
        after = None
    return FileChange(path, before, after, summary)


def plan_install(
    config: Config,
    scope: Scope = "user",
    project_dir: Path | None = None,
    *,
    allow_read_only_tools: bool = True,
) -> Plan:
    """Hooks and the MCP server; unless ``allow_read_only_tools`` is false, the
    read-only lcm tools pre-approved in ``permissions.allow``."""
    where = paths(config, scope, project_dir)
    plan = Plan("install", CLIENT, scope)

    def add_hooks(settings: dict[str, Any]) -> list[str]:
        notes = merge_hooks(
            settings, HOOKS, lambda event: join_command(hook_argv(config, event, CLIENT))
        )
        if allow_read_only_tools:
            notes.extend(allow_tools(settings))
        else:
            notes.extend(disallow_tools(settings))
        return notes

    def add_server(data: dict[str, Any]) -> list[str]:
        servers = data.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise ConfigError(f"{where.mcp_file}: 'mcpServers' is not an object")
        existing = servers.get(MCP_NAME)
        if existing is not None and not is_lcm_mcp_entry(existing):
            raise ConfigError(
                f"{where.mcp_file} already has an MCP server named {MCP_NAME!r} that is not "
                f"lossless ({existing!r}); remove or rename it, then install again"
            )
        servers[MCP_NAME] = mcp_entry(config)
        return [f"MCP server {MCP_NAME!r}"]

    plan.changes.append(_edit_json(where.settings, add_hooks))
    plan.changes.append(_edit_json(where.mcp_file, add_server))
    if scope == "project":
        plan.notes.append(
            "project scope: the commands hold absolute paths on this machine; teammates "
            "need lossless installed at the same path, or their own `lcm install`"
        )
        plan.notes.append("Claude Code asks once before it uses a project's .mcp.json servers")
    return plan


def plan_uninstall(config: Config, scope: Scope = "user", project_dir: Path | None = None) -> Plan:
    where = paths(config, scope, project_dir)
    plan = Plan("uninstall", CLIENT, scope)

    def drop_server(data: dict[str, Any]) -> list[str]:
        servers = data.get("mcpServers")
        if not isinstance(servers, dict) or not is_lcm_mcp_entry(servers.get(MCP_NAME)):
            return []
        del servers[MCP_NAME]
        if not servers:
            del data["mcpServers"]
        return [f"removed MCP server {MCP_NAME!r}"]

    def drop_settings(settings: dict[str, Any]) -> list[str]:
        return [*remove_hooks(settings), *disallow_tools(settings)]

    plan.changes.append(_edit_json(where.settings, drop_settings))
    plan.changes.append(
        _edit_json(where.mcp_file, drop_server, disposable=where.mcp_file_disposable)
    )
    return plan


@dataclass(slots=True)
class Installed:
    """What of lossless is present in one scope (for ``lcm doctor``)."""

    scope: Scope
    settings: Path
    mcp_file: Path
    hooks: dict[str, list[str]]
    missing_events: list[str]
    mcp: Mapping[str, Any] | None
    error: str | None = None

    @property
    def present(self) -> bool:
        return bool(self.hooks) or self.mcp is not None


def inspect(config: Config, scope: Scope, project_dir: Path | None = None) -> Installed:
    where = paths(config, scope, project_dir)
    try:
        settings = load_json_object(where.settings, read_text(where.settings))
        state = load_json_object(where.mcp_file, read_text(where.mcp_file))
    except ConfigError as exc:
        return Installed(scope, where.settings, where.mcp_file, {}, [], None, str(exc))
    hooks = installed_hooks(settings)
    servers = state.get("mcpServers")
    entry = servers.get(MCP_NAME) if isinstance(servers, dict) else None
    return Installed(
        scope,
        where.settings,
        where.mcp_file,
        hooks,
        [h.event for h in HOOKS if h.event not in hooks],
        entry if is_lcm_mcp_entry(entry) else None,
    )
