"""Which files a hook may read: a payload is input, not an instruction.

A hook event names its transcript (``transcript_path``, relative to ``cwd``
when not absolute). Read as given, a payload pointing at ``/etc/shadow`` or
``../../etc/passwd`` would copy that file's lines into the store. A hook reads
a path only if, with symbolic links and ``..`` resolved, it is a ``*.jsonl``
file under the clients' own transcript folders (Claude Code's ``projects/``,
Codex's ``sessions/`` and ``archived_sessions/``) or a folder the user listed
in the ``transcript_dirs`` setting.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from lossless.hooks.events import HookInputError

if TYPE_CHECKING:
    from lossless.config import Config


def transcript_roots(config: Config) -> list[Path]:
    """Folders a hook may read transcripts from."""
    roots = [
        config.claude_dir / "projects",
        config.codex_dir / "sessions",
        config.codex_dir / "archived_sessions",
    ]
    extra = config.transcript_dirs
    roots.extend(Path(p).expanduser() for p in extra.split(os.pathsep) if p.strip())
    return roots


def confine_transcript(path: Path, config: Config, key: str) -> Path:
    """``path`` if it is a transcript under an allowed folder, else ``HookInputError``."""
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop before Python 3.13
        raise HookInputError(f"{key} {path} cannot be resolved (a symbolic link loop?)") from None
    if resolved.suffix != ".jsonl":
        raise HookInputError(f"{key} {path} is not a transcript (*.jsonl); not read")
    roots = transcript_roots(config)
    for root in roots:
        try:
            if resolved.is_relative_to(root.resolve()):
                return path
        except (OSError, RuntimeError):
            continue
    where = ", ".join(str(r) for r in roots)
    raise HookInputError(
        f"{key} {path} is outside the folders transcripts are read from ({where}); "
        "add its folder to the transcript_dirs setting (LCM_TRANSCRIPT_DIRS) to allow it"
    )
