"""Installers that wire lossless into agent clients (Claude Code, Codex).

An installer computes the new text of every file it touches, merges with what
the user already has, and only then writes: each file atomically (temp file
and rename, same permissions), never a file it cannot parse. ``dry_run``
returns the same plan with diffs and writes nothing. Uninstall removes exactly
the entries lossless recognises as its own (commands that run ``lcm hook`` /
``lcm mcp``, TOML between lossless's markers) and leaves everything else as it
was.

Shared here: finding the ``lcm`` command to register, recognising lossless's
own hook commands, the JSON hooks-file merge both clients use, and applying a
plan.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lossless.errors import ConfigError

if TYPE_CHECKING:
    from lossless.config import Config

Scope = Literal["user", "project"]
SCOPES: tuple[Scope, ...] = ("user", "project")
HOOK_TIMEOUT_S = 30
MCP_NAME = "lcm"


# --------------------------------------------------------------------------- commands


def lcm_argv() -> list[str]:
    """How to run this very installation of lcm, as absolute paths.

    Hooks run from the client's environment, where the virtualenv that holds
    lossless is usually not on PATH: the path of the running ``lcm`` script
    works there; failing that, this interpreter with ``-m lossless``.
    """
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name.startswith("lcm") and argv0.suffix in ("", ".exe"):
        candidate = argv0 if argv0.is_absolute() else Path.cwd() / argv0
        if candidate.is_file():
            return [str(candidate.resolve())]
    found = shutil.which("lcm")
    if found and Path(sys.executable).parent == Path(found).resolve().parent:
        return [str(Path(found).resolve())]
    return [str(Path(sys.executable).resolve()), "-m", "lossless"]


def home_args(config: Config) -> list[str]:
    """``--home DIR`` when the data folder is not the default one.

    Clients start hooks and MCP servers with their own environment, so a home
    chosen by ``LCM_HOME`` or ``--home`` at install time is written into the
    commands rather than left to the environment.
    """
    if config.origins.get("home", "default") == "default":
        return []
    return ["--home", str(config.home)]


def join_command(argv: Sequence[str]) -> str:
    return shlex.join(argv)


def split_command(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def lcm_subcommand(argv: Sequence[str]) -> tuple[int, str] | None:
    """``(index, name)`` of the lcm subcommand in ``argv`` if it runs lossless's CLI.

    Recognised: ``.../lcm [--home X] SUB ...`` and ``python -m lossless [--home X] SUB ...``.
    """
    if not argv:
        return None
    start: int | None = None
    if Path(argv[0]).name in ("lcm", "lcm.exe"):
        start = 1
    elif len(argv) >= 3 and argv[1] == "-m" and argv[2] == "lossless":
        start = 3
    if start is None:
        return None
    index = start
    while index < len(argv) and argv[index].startswith("-"):
        index += 2 if argv[index] == "--home" else 1
    if index >= len(argv):
        return None
    return index, argv[index]


def is_lcm_hook(command: object) -> bool:
    """Whether a hook command string is one lossless installed (``lcm hook EVENT``)."""
    if not isinstance(command, str):
        return False
    found = lcm_subcommand(split_command(command))
    return found is not None and found[1] == "hook"


def command_executable(command: str) -> str | None:
    argv = split_command(command)
    return argv[0] if argv else None


# --------------------------------------------------------------------------- files


@dataclass(slots=True)
class FileChange:
    """One file an installer writes: its text before (None: absent) and after (None: delete)."""

    path: Path
    before: str | None
    after: str | None
    summary: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                (self.before or "").splitlines(keepends=True),
                (self.after or "").splitlines(keepends=True),
                fromfile=str(self.path) if self.before is not None else "/dev/null",
                tofile=str(self.path) if self.after is not None else "/dev/null",
            )
        )


@dataclass(slots=True)
class Plan:
    """What an install or uninstall does; ``apply`` writes it."""

    action: Literal["install", "uninstall"]
    client: str
    scope: Scope
    changes: list[FileChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> list[FileChange]:
        return [c for c in self.changes if c.changed]

    def apply(self) -> None:
        for change in self.changed:
            if change.after is None:
                change.path.unlink(missing_ok=True)
            else:
                write_atomic(change.path, change.after)


def read_text(path: Path) -> str | None:
    try:
        return path.read_text("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def load_json_object(path: Path, text: str | None) -> dict[str, Any]:
    """The JSON object in ``text`` (``{}`` for a missing or empty file)."""
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(
            f"{path} is not valid JSON ({exc}); lossless will not rewrite a file it cannot "
            "read: fix it, or move it aside and run the command again"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object, not {type(data).__name__}")
    return data


def dump_json(data: Mapping[str, Any], like: str | None) -> str:
    """JSON text in the file's existing indentation (2 spaces by default)."""
    indent: int | str = 2
    if like:
        for line in like.splitlines()[1:]:
            stripped = line.lstrip(" \t")
            if stripped and len(stripped) < len(line):
                lead = line[: len(line) - len(stripped)]
                indent = lead if "\t" in lead else len(lead)
                break
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one rename, keeping its permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".lcm-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- hooks json


@dataclass(frozen=True, slots=True)
class HookSpec:
    """One event lossless hooks, with the matcher its group uses (None: no matcher)."""

    event: str
    matcher: str | None = None
    timeout_s: int = HOOK_TIMEOUT_S


def merge_hooks(settings: dict[str, Any], specs: Sequence[HookSpec], command_for: Any) -> list[str]:
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


def is_lcm_mcp_entry(entry: object) -> bool:
    """Whether an ``mcpServers``/``mcp_servers`` entry runs ``lcm mcp``."""
    if not isinstance(entry, Mapping):
        return False
    command = entry.get("command")
    args = entry.get("args") or []
    if not isinstance(command, str) or not isinstance(args, list):
        return False
    found = lcm_subcommand([command, *[str(a) for a in args]])
    return found is not None and found[1] == "mcp"


def mcp_argv(config: Config) -> list[str]:
    return [*lcm_argv(), *home_args(config), "mcp"]


def hook_argv(config: Config, event: str, client: str) -> list[str]:
    return [*lcm_argv(), *home_args(config), "hook", event, "--client", client]


def resolve_project(project_dir: Path | None) -> Path:
    return (project_dir or Path.cwd()).resolve()
