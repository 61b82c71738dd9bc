"""Installer plans and the file handling they share.

An installer computes the new text of every file it touches, merges with what
the user already has, and only then writes: each file atomically (temp file
and rename, same permissions), never a file it cannot parse. ``dry_run``
returns the same plan with diffs and writes nothing.
"""

from __future__ import annotations

import difflib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lossless.errors import ConfigError

Scope = Literal["user", "project"]
SCOPES: tuple[Scope, ...] = ("user", "project")


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


def resolve_project(project_dir: Path | None) -> Path:
    return (project_dir or Path.cwd()).resolve()
