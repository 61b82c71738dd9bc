"""Find the Claude Code and Codex transcripts on this machine.

Homes are passed in (the resolved Config knows them); nothing here reads the
environment. The order matters to the importer: a parent session comes before
its sub-agents, so the parent conversation exists when a sub-agent links to it.
"""

from __future__ import annotations

import os
from pathlib import Path

from lossless.sources.base import SourceKind

__all__ = ["discover_claude", "discover_codex", "discover_transcripts"]


def _files(pattern_root: Path, pattern: str) -> list[Path]:
    if not pattern_root.is_dir():
        return []
    return [p for p in pattern_root.glob(pattern) if p.is_file()]


def discover_claude(claude_home: Path) -> list[Path]:
    """Sessions under ``projects/``, each followed by its sub-agent transcripts.

    Sub-agents live in ``<session>/subagents/*.jsonl``; older Claude Code wrote
    them beside the sessions as ``agent-*.jsonl``, whose parent is only known
    from their records, so those come after every session of their project.
    """
    projects = claude_home / "projects"
    sessions = _files(projects, "*/*.jsonl")
    subagents = _files(projects, "*/*/subagents/*.jsonl")

    def order(path: Path) -> tuple[str, int, str, int, str]:
        if path.parent.name == "subagents":
            session_dir = path.parent.parent
            return (session_dir.parent.name, 0, session_dir.name, 1, path.name)
        if path.name.startswith("agent-"):
            return (path.parent.name, 1, path.stem, 0, path.name)
        return (path.parent.name, 0, path.stem, 0, path.name)

    return sorted([*sessions, *subagents], key=order)


def _walk_rollouts(root: Path) -> list[Path]:
    """``rollout-*.jsonl`` anywhere below ``root``, following symlinked folders
    (``Path.glob("**")`` does not before Python 3.13) without looping."""
    found: list[Path] = []
    seen: set[str] = set()
    for folder, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            dirs.clear()
            continue
        seen.add(real)
        dirs.sort()
        found.extend(
            Path(folder) / name
            for name in files
            if name.startswith("rollout-") and name.endswith(".jsonl")
        )
    return sorted(p for p in found if p.is_file())


def discover_codex(codex_home: Path) -> list[Path]:
    """Rollouts under ``sessions/`` and ``archived_sessions/``, oldest path first."""
    found: list[Path] = []
    for folder in ("sessions", "archived_sessions"):
        found.extend(_walk_rollouts(codex_home / folder))
    return found


def discover_transcripts(claude_home: Path, codex_home: Path) -> list[tuple[SourceKind, Path]]:
    """Every transcript under the two homes, with the parser kind that reads it."""
    claude: list[tuple[SourceKind, Path]] = [
        ("claude-code", p) for p in discover_claude(claude_home)
    ]
    codex: list[tuple[SourceKind, Path]] = [("codex", p) for p in discover_codex(codex_home)]
    return claude + codex
