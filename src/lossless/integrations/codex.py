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
events differ: no ``compact`` start source, ``PostCompact`` exists;
``SessionEnd`` (with ``reason``) and ``SubagentStop`` exist since 0.171. Hooks
are on by default in current Codex; a ``[features] hooks = false`` (or
``codex_hooks = false``) in config.toml turns them off, which ``lcm doctor``
reports; the installer leaves feature flags alone.

Codex runs a hook only when the *user's* config.toml records it as trusted
(``codex_trust``), whatever the scope of the hooks.json: the installer writes
those records for exactly the hooks it wrote, so a project-scope install
touches the user's config.toml too (trust tables only).

config.toml is edited as text (``toml_block``): lossless's tables sit in a
marked block, each tagged, and uninstall takes out exactly those tables.
"""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lossless.errors import ConfigError
from lossless.integrations import codex_trust, toml_block
from lossless.integrations.commands import (
    MCP_NAME,
    hook_argv,
    is_lcm_hook,
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
    HookSpec("SubagentStop"),
    HookSpec("PreCompact"),
    HookSpec("PostCompact"),
    # Codex clamps a SessionEnd hook's timeout to 3 s (and hashes the clamped
    # value for trust): ask for no more, so the recorded trust matches.
    HookSpec("SessionEnd", timeout_s=3),
)

BEGIN = "# >>> lossless: added by `lcm install codex`; `lcm uninstall codex` removes it >>>"
END = toml_block.END
MCP_PATH = ("mcp_servers", MCP_NAME)


def trust_begin(hooks_file: Path) -> str:
    """The marker of the trust block a project-scope install adds to the user's config.toml."""
    return (
        f"# >>> lossless: trust for the hooks in {hooks_file}; "
        "`lcm uninstall codex --scope project` removes it >>>"
    )


@dataclass(frozen=True, slots=True)
class CodexPaths:
    config: Path
    hooks: Path
    # Where Codex reads hook trust: always the user's config.toml.
    trust_config: Path


def paths(config: Config, scope: Scope, project_dir: Path | None = None) -> CodexPaths:
    user = config.codex_dir
    base = user if scope == "user" else resolve_project(project_dir) / ".codex"
    return CodexPaths(base / "config.toml", base / "hooks.json", user / "config.toml")


def _toml_str(value: str) -> str:
    # JSON string escapes are valid TOML basic-string escapes.
    return json.dumps(value, ensure_ascii=False)


def mcp_table(config: Config) -> toml_block.Table:
    argv = mcp_argv(config)
    args = ", ".join(_toml_str(a) for a in argv[1:])
    return toml_block.Table(MCP_PATH, [f"command = {_toml_str(argv[0])}", f"args = [{args}]"])


def trust_tables(
    hooks: Sequence[codex_trust.HookTrust], hashes: Mapping[str, str] | None = None
) -> list[toml_block.Table]:
    """One ``[hooks.state."<key>"]`` per hook; ``hashes`` overrides (what Codex reported)."""
    return [
        toml_block.Table(
            ("hooks", "state", hook.key),
            [f"trusted_hash = {_toml_str((hashes or {}).get(hook.key, hook.current_hash))}"],
        )
        for hook in hooks
    ]


def _owns(
    hooks_file: Path, *, mcp: bool, replace_keys: frozenset[str] = frozenset()
) -> toml_block.Owns:
    """Which tables of a config.toml are lossless's, for one scope's hooks file.

    Tagged MCP and trust tables of that scope; an untagged ``[mcp_servers.lcm]``
    that runs lossless (older installs, and Codex's own writer drops the tag
    when it rewrites the table); when installing, also an untagged trust
    table for a key lossless is about to write (one Codex recorded when the
    user trusted lossless's hook by hand), which would otherwise be defined twice.
    """
    prefix = f"{hooks_file}:"

    def owns(path: toml_block.TablePath, tagged: bool, in_block: bool, value: Any) -> bool:
        if mcp and path == MCP_PATH:
            return tagged or in_block or is_lcm_mcp_entry(value)
        if mcp and path[:2] == MCP_PATH:
            return tagged
        if len(path) == 3 and path[:2] == ("hooks", "state") and path[2].startswith(prefix):
            return tagged or path[2] in replace_keys
        return False

    return owns


def _mcp_taken(config_path: Path) -> Any:
    def taken(path: toml_block.TablePath, existing: Any) -> str:
        if path[:2] == MCP_PATH:
            return (
                f"{config_path} already defines [mcp_servers.{MCP_NAME}] outside lossless's "
                f"block ({existing!r}); remove or rename it, then install again"
            )
        return f"{config_path} already defines [{'.'.join(path)}]; remove it, then install again"

    return taken


def _toml_change(
    path: Path, begin: str, owns: toml_block.Owns, tables: Sequence[toml_block.Table]
) -> FileChange:
    before = read_text(path)
    text = before or ""
    after = toml_block.edit(path, text, begin, owns, tables=tables, taken=_mcp_taken(path))
    if after == text:
        return FileChange(path, before, before, [])
    summary: list[str] = []
    if any(t.path[:2] == MCP_PATH for t in tables):
        summary.append(f"MCP server {MCP_NAME!r}")
    trusted = sum(1 for t in tables if t.path[:2] == ("hooks", "state"))
    if trusted:
        summary.append(f"Codex trust for {trusted} lossless hooks")
    if not tables:
        summary.append("removed lossless's tables")
    return FileChange(path, before, after if after.strip() else None, summary)


def _hooks_change(path: Path, config: Config | None) -> tuple[FileChange, dict[str, Any]]:
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
        return FileChange(path, before, before, []), data
    return FileChange(path, before, dump_json(data, before) if data else None, summary), data


def plan_install(
    config: Config,
    scope: Scope = "user",
    project_dir: Path | None = None,
    *,
    trusted_hashes: Mapping[str, str] | None = None,
) -> Plan:
    """Hooks, the MCP server, and Codex trust for exactly the hooks written.

    ``trusted_hashes`` (key -> hash) replaces computed hashes with the ones
    Codex itself reported.
    """
    where = paths(config, scope, project_dir)
    plan = Plan("install", CLIENT, scope)
    hooks_change, hooks_doc = _hooks_change(where.hooks, config)
    plan.changes.append(hooks_change)
    trust = codex_trust.lcm_hooks(hooks_doc, where.hooks)
    keys = frozenset(h.key for h in trust)
    tables = trust_tables(trust, trusted_hashes)
    if scope == "user":
        owns = _owns(where.hooks, mcp=True, replace_keys=keys)
        plan.changes.append(_toml_change(where.config, BEGIN, owns, [mcp_table(config), *tables]))
    else:
        plan.changes.append(
            _toml_change(where.config, BEGIN, _owns(where.hooks, mcp=True), [mcp_table(config)])
        )
        owns = _owns(where.hooks, mcp=False, replace_keys=keys)
        plan.changes.append(
            _toml_change(where.trust_config, trust_begin(where.hooks), owns, tables)
        )
    if features_disabled(where.config):
        plan.notes.append(
            f"hooks are switched off in {where.config} ([features] hooks = false): lossless "
            "will only see sessions through `lcm import` until you turn them on"
        )
    return plan


def plan_uninstall(config: Config, scope: Scope = "user", project_dir: Path | None = None) -> Plan:
    where = paths(config, scope, project_dir)
    plan = Plan("uninstall", CLIENT, scope)
    plan.changes.append(_hooks_change(where.hooks, None)[0])
    if scope == "user":
        plan.changes.append(_toml_change(where.config, BEGIN, _owns(where.hooks, mcp=True), []))
    else:
        plan.changes.append(_toml_change(where.config, BEGIN, _owns(where.hooks, mcp=True), []))
        plan.changes.append(
            _toml_change(
                where.trust_config, trust_begin(where.hooks), _owns(where.hooks, mcp=False), []
            )
        )
    return plan


def _parse_toml(path: Path, text: str) -> dict[str, Any]:
    return toml_block.parse(path, text)


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


@dataclass(frozen=True, slots=True)
class TrustProblem:
    """A lossless hook Codex will skip: no trust recorded, or recorded for another version."""

    key: str
    event: str
    status: str  # "untrusted" | "modified"


@dataclass(slots=True)
class Installed:
    scope: Scope
    config: Path
    hooks_file: Path
    hooks: dict[str, list[str]]
    missing_events: list[str]
    mcp: Mapping[str, Any] | None
    hooks_disabled: bool
    untrusted: list[TrustProblem]
    error: str | None = None

    @property
    def present(self) -> bool:
        return bool(self.hooks) or self.mcp is not None


def inspect(config: Config, scope: Scope, project_dir: Path | None = None) -> Installed:
    where = paths(config, scope, project_dir)
    try:
        hooks_doc = load_json_object(where.hooks, read_text(where.hooks))
        toml = _parse_toml(where.config, read_text(where.config) or "")
        trust_toml = (
            toml
            if where.trust_config == where.config
            else _parse_toml(where.trust_config, read_text(where.trust_config) or "")
        )
    except ConfigError as exc:
        return Installed(scope, where.config, where.hooks, {}, [], None, False, [], str(exc))
    hooks = installed_hooks(hooks_doc)
    servers = toml.get("mcp_servers")
    entry = servers.get(MCP_NAME) if isinstance(servers, Mapping) else None
    recorded = codex_trust.trust_states(trust_toml)
    untrusted = [
        TrustProblem(h.key, h.event, "modified" if h.key in recorded else "untrusted")
        for h in codex_trust.lcm_hooks(hooks_doc, where.hooks)
        if recorded.get(h.key) != h.current_hash
    ]
    return Installed(
        scope,
        where.config,
        where.hooks,
        hooks,
        [h.event for h in HOOKS if h.event not in hooks],
        entry if is_lcm_mcp_entry(entry) else None,
        features_disabled(where.config),
        untrusted,
    )


def confirm_trust(
    config: Config, scope: Scope, project_dir: Path | None = None
) -> tuple[str, dict[str, str]]:
    """Ask the installed Codex whether it trusts lossless's hooks now.

    Returns a sentence for the user and, for hooks Codex does not trust, the
    key -> hash Codex reports (to record instead of the computed ones).
    """
    where = paths(config, scope, project_dir)
    codex = codex_trust.find_codex()
    if codex is None:
        return (
            "hook trust recorded with hashes computed as Codex 0.171 computes them "
            "(no `codex` on PATH to confirm; `lcm doctor` checks again later)",
            {},
        )
    cwd = resolve_project(project_dir)
    listed = codex_trust.codex_hooks_list(codex, cwd, {"CODEX_HOME": str(config.codex_dir)})
    if isinstance(listed, str):
        return f"hook trust recorded as computed; could not confirm with Codex: {listed}", {}
    prefix = f"{where.hooks}:"
    ours = [h for h in listed if h.key.startswith(prefix) and is_lcm_hook(h.command)]
    wrong = {h.key: h.current_hash for h in ours if h.trust_status != "trusted"}
    if not ours:
        return f"Codex ({codex}) does not list lossless's hooks from {where.hooks}", {}
    if wrong:
        return f"Codex reports other hashes for {len(wrong)} hook(s); recording Codex's", wrong
    return f"Codex ({codex}) confirms all {len(ours)} lossless hooks are trusted", {}
