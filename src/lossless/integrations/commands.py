"""The commands lossless registers with clients, and recognising them again.

Hooks and MCP servers run from the client's environment, so they are written
as absolute paths of this very installation (with ``--home`` when the data
folder is not the default). Uninstall and ``lcm doctor`` recognise lossless's
own entries by parsing those commands back.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lossless.config import Config

MCP_NAME = "lcm"


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
    # Absolute, but not resolved: a virtualenv's python is a symlink to the base
    # interpreter, and only the link finds the virtualenv's site-packages.
    return [os.path.abspath(sys.executable), "-m", "lossless"]


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
