"""The ``lcm`` command line. Each area's commands live in their own module.

``main`` answers ``lcm hook ...``, ``lcm mcp`` and ``lcm --version`` without
loading click or any command module: hooks run on every agent turn, a client
waits for the MCP server's first answer. Any other command loads click and
only its own module (``lossless.cli.app.COMMANDS``).
"""

from __future__ import annotations

import gc
import sys

# Not `typing.TYPE_CHECKING`: every hook imports this module, and typing
# costs a few ms of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    import click

    from lossless.config import Config


def _load() -> click.Group:
    # The group imports a command's module (which registers it) when asked for it.
    from lossless.cli.app import cli

    return cli


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        from lossless import __version__

        print(f"lcm, version {__version__}")  # what click's version option prints
        return
    code = _fast_hook(args)
    if code is not None:
        sys.exit(code)
    if _fast_mcp(args):
        return
    _pause_gc()
    from lossless import deferred_modules

    # `dataclasses` imports `inspect`, `urllib.parse` `ipaddress`: the usual
    # grep, describe and status never use them (lossless/deferred_modules.py).
    deferred_modules.defer()
    from lossless import dataclass_cache, regex_cache

    # A command imports much of what a hook does: reuse what hooks keep.
    regex_cache.install()
    dataclass_cache.install()
    try:
        from lossless.cli import fast_path

        # The usual `lcm grep` and `lcm status` run without click (see cli/fast_path.py).
        code = fast_path.run(args)
        if code is None:
            deferred_modules.load()
            _load()(args=args, prog_name="lcm")
        elif code:
            sys.exit(code)
    finally:
        regex_cache.keep()
        dataclass_cache.keep()


# Allocations between two runs of the cyclic collector while a command starts:
# more than start-up makes (~40,000 objects for `lcm status`), so it never runs
# then, yet a command that never reaches ``resume_gc`` is still collected.
_STARTUP_GC_THRESHOLD = 200_000
_gc_thresholds: tuple[int, int, int] | None = None


def _pause_gc() -> None:
    """Hold the cyclic collector back while the command starts (see ``resume_gc``)."""
    global _gc_thresholds
    if _gc_thresholds is None:
        _gc_thresholds = gc.get_threshold()
        gc.set_threshold(_STARTUP_GC_THRESHOLD, *_gc_thresholds[1:])


def resume_gc() -> None:
    """Start-up is over (the command has its configuration or its open engine): the
    collector as it was.

    What start-up allocates (modules, classes, functions: tens of thousands of
    objects) lives until exit; the collector would traverse it some 40 times
    meanwhile and free nothing, about a tenth of a short command's CPU (`lcm
    grep`, `status`). Frozen, those objects stay out of its way for the rest of
    the run, and the command itself runs with the usual collector, however long
    it runs (`lcm import`, `ui`, `worker`).
    """
    global _gc_thresholds
    if _gc_thresholds is not None:
        gc.freeze()
        gc.set_threshold(*_gc_thresholds)
        _gc_thresholds = None


def _fast_hook(args: list[str]) -> int | None:
    """Run a hook (see ``hook_args``) without click: on the home's server, else inline.

    Returns None for anything that is not a hook.
    """
    from lossless.hook_server.invocation import hook_args, run_hook

    parsed = hook_args(args)
    if parsed is None:
        return None
    home, background = parsed[0], parsed[4]
    start_server = False
    stdin: bytes | None = None
    if not background:
        # A background import holds a lock passed by descriptor: it stays here.
        from lossless.hook_server import client as server_client

        served = server_client.serve(args, home)
        if not isinstance(served, server_client.Fallback):
            return served
        start_server, stdin = served.start, served.stdin
        # A hook process lives for one turn's delta, and most of what it
        # allocates is the modules it imports, which stay alive: the cyclic
        # collector would run ~40 times (a few ms) to free almost nothing.
        # A background import may read a backlog of any size, so it keeps it.
        import gc

        gc.disable()
    from lossless import dataclass_cache, regex_cache

    # What the hook path's modules compile at import (regular expressions,
    # the methods of its records), kept from the last hook.
    regex_cache.install()
    dataclass_cache.install()
    code = run_hook(parsed, stdin=stdin, start_server=start_server)
    regex_cache.keep()
    dataclass_cache.keep()
    return code


def _fast_mcp(args: list[str]) -> bool:
    """Run ``[--home H] mcp [--project P] [--all-projects]`` without click.

    A client waits for ``initialize`` from the moment it spawns the server;
    loading click and every command module first would delay it. Returns
    False for anything else (help, unknown options), which click handles.
    """
    home: str | None = None
    if args[:1] == ["--home"] and len(args) >= 3:
        home, args = args[1], args[2:]
    elif args[:1] and args[0].startswith("--home="):
        home, args = args[0].split("=", 1)[1], args[1:]
    if args[:1] != ["mcp"]:
        return False
    rest = args[1:]
    project: str | None = None
    all_projects = False
    while rest:
        option = rest.pop(0)
        if option == "--project" and rest:
            project = rest.pop(0)
        elif option.startswith("--project="):
            project = option.split("=", 1)[1]
        elif option == "--all-projects":
            all_projects = True
        else:
            return False
    from pathlib import Path

    from lossless import mcp_stdio
    from lossless.errors import LosslessError

    where = Path(home).expanduser() if home else None

    def load_config() -> Config:
        from lossless.config import load_config

        # Lenient: a typo in config.toml must not take the tools away; the
        # server starts with the valid settings and says what is wrong.
        config = load_config(where, lenient=True)
        for problem in config.problems:
            print(f"lcm mcp: config: {problem.describe()}", file=sys.stderr)
        return config

    try:
        mcp_stdio.main(load_config, home=where, project=project, all_projects=all_projects)
    except LosslessError as exc:
        print(f"lcm: {exc}", file=sys.stderr)
        sys.exit(2)
    return True


def __getattr__(name: str) -> object:
    if name == "cli":
        return _load()
    raise AttributeError(name)


__all__ = ["cli", "main"]
