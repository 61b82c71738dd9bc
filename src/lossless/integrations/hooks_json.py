"""The hooks document both clients read: event -> matcher groups -> command handlers.

Claude Code keeps it under ``hooks`` in settings.json, Codex in hooks.json, in
the same shape. Lossless adds one group per event it hooks and recognises its
own handlers by their command (``lcm hook EVENT``), so other groups and
handlers stay exactly as they were.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lossless.errors import ConfigError
from lossless.integrations.commands import is_lcm_hook

HOOK_TIMEOUT_S = 30


@dataclass(frozen=True, slots=True)
class HookSpec:
    """One event lossless hooks, with the matcher its group uses (None: no matcher)."""

    event: str
    matcher: str | None = None
    timeout_s: int = HOOK_TIMEOUT_S


def merge_hooks(
    settings: dict[str, Any], specs: Sequence[HookSpec], command_for: Callable[[str], str]
) -> list[str]:
    """Put lossless's hook groups into ``settings["hooks"]``; returns what changed.

    Any earlier lossless handler is taken out of whatever group holds it (a
    group it leaves empty goes too) and one group per event is appended, so a
    re-install with the same command produces the same file. Other groups and
    handlers are untouched.
    """
    notes = remove_hooks(settings, quiet=True)
    hooks = settings.get("hooks")
    if hooks is None:
        hooks = settings["hooks"] = {}
    if not isinstance(hooks, dict):
        raise ConfigError("the 'hooks' setting is not an object; fix it by hand first")
    added: list[str] = []
    for spec in specs:
        groups = hooks.setdefault(spec.event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"hooks.{spec.event} is not a list; fix it by hand first")
        group: dict[str, Any] = {}
        if spec.matcher is not None:
            group["matcher"] = spec.matcher
        group["hooks"] = [
            {"type": "command", "command": command_for(spec.event), "timeout": spec.timeout_s}
        ]
        groups.append(group)
        added.append(spec.event)
    return [*notes, f"hooks: {', '.join(added)}"]


def remove_hooks(settings: dict[str, Any], *, quiet: bool = False) -> list[str]:
    """Take every lossless hook handler out of ``settings``; empty containers it
    leaves behind go too (containers that were empty already stay)."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return []
    removed: list[str] = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups: list[Any] = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept_groups.append(group)
                continue
            kept = [
                h for h in handlers if not (isinstance(h, dict) and is_lcm_hook(h.get("command")))
            ]
            if len(kept) == len(handlers):
                kept_groups.append(group)
                continue
            removed.append(event)
            if kept:
                kept_groups.append({**group, "hooks": kept})
        if removed and removed[-1] == event:
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if removed and not hooks:
        del settings["hooks"]
    if quiet or not removed:
        return []
    return [f"removed hooks: {', '.join(dict.fromkeys(removed))}"]


def installed_hooks(settings: Mapping[str, Any]) -> dict[str, list[str]]:
    """Event -> lossless hook commands found in a settings/hooks document."""
    found: dict[str, list[str]] = {}
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else []:
                if isinstance(handler, dict) and is_lcm_hook(handler.get("command")):
                    found.setdefault(event, []).append(str(handler["command"]))
    return found
