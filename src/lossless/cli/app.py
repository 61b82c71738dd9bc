"""The ``lcm`` click group and the few helpers every command module shares.

Commands live in one module per area (``cli/history.py``, ``cli/compaction.py``
...) and register themselves on ``cli`` when that module is imported. The
group imports only the module of the command being run (``COMMANDS`` maps
each name to its module and its one-line help, so ``lcm --help`` lists them
all without importing any): ``lcm grep`` does not pay for the map operators,
the summarizers or the web UI. Surfaces stay thin: parse arguments, call the
engine, format the result. ``--json`` output is exactly one JSON document on
stdout; errors go to stderr with a non-zero exit code.
"""

from __future__ import annotations

import importlib
import json
import sys
from gettext import gettext
from pathlib import Path
from typing import Any

import click

from lossless import __version__
from lossless.cli.state import CliState
from lossless.errors import LosslessError
from lossless.jsonable import to_jsonable

__all__ = ["COMMANDS", "CliState", "cli", "emit_json", "json_option", "state_of"]


# Every top-level command: the module that defines it, and its one-line help
# as `lcm --help` lists it (the first sentence of its docstring). A test checks
# this table against the commands themselves and prints the entry a new
# command needs.
COMMANDS: dict[str, tuple[str, str]] = {
    "agentic-map": (
        "map",
        "Give every item of a JSONL file its own tool-using sub-agent (agentic_map).",
    ),
    "checkpoint": (
        "memory",
        "Write .lcm-checkpoint.md: goal, decisions, open threads, files, summaries to expand.",
    ),
    "compact": (
        "compaction",
        "Compact conversations: summarize old messages into the summary DAG.",
    ),
    "config": ("history", "Inspect and change configuration ($LCM_HOME/config.toml)."),
    "context": (
        "compaction",
        "Show the context the model would get now: messages and a token breakdown.",
    ),
    "conversations": ("history", "List conversations, most recently active first."),
    "dag": ("compaction", "Show a conversation's summary DAG as a tree."),
    "describe": (
        "history",
        "Show a message (123), summary (sum_...), large file (file_...) or map job (job_...).",
    ),
    "doctor": (
        "integration",
        "Check that lossless is installed, working and keeping up; say how to fix what is not.",
    ),
    "embed": ("semantic", "Compute embedding vectors for everything stored without one, now."),
    "expand": (
        "history",
        "Expand SUMMARY_ID into the summaries and messages it was built from, a page at a time.",
    ),
    "export": (
        "portable",
        "Write every conversation, message, summary, large file and memory as JSONL.",
    ),
    "forget": ("memory", "Archive a memory: it stops appearing in listings, search and recall."),
    "gc": ("history", "Give back space: store old rows' repeated text once, compact the file."),
    "grep": ("history", "Search every stored message and summary for PATTERN."),
    "hook": (
        "integration",
        "Handle one Claude Code / Codex hook EVENT, reading its JSON from stdin.",
    ),
    "hook-server": (
        "hook_server",
        "Show, stop or run the resident hook server of this data folder.",
    ),
    "import": (
        "history",
        "Import transcripts; with no PATH, all Claude Code and Codex history on this machine.",
    ),
    "install": (
        "integration",
        "Wire lossless into CLIENT: capture hooks and the `lcm` MCP server.",
    ),
    "map": ("map", "Run one model call per item of a JSONL file (llm_map)."),
    "mcp": (
        "integration",
        "Serve lossless to an agent over MCP (stdio): grep, search, describe, expand, store.",
    ),
    "memories": ("memory", "List the memories of the project (oldest first)."),
    "messages": (
        "history",
        "List the messages of CONVERSATION (id, session id or unique prefix), in order.",
    ),
    "postgres": ("postgres", "The PostgreSQL backend: migrate and inspect the shared database."),
    "remember": (
        "memory",
        "Keep TEXT as a durable memory of the project (a decision, fix or convention).",
    ),
    "resume": (
        "memory",
        "Rebuild working state from .lcm-checkpoint.md and the store, as markdown.",
    ),
    "revive": ("memory", "Bring back a memory archived with `lcm forget`."),
    "search": (
        "memory",
        "Search memories and history (messages, summaries, large files) ranked together.",
    ),
    "sensitive": (
        "sensitive",
        "Manage secret redaction: built-in detectors plus your own patterns.",
    ),
    "status": (
        "history",
        "Show what is stored: conversations, messages, summaries, tokens, backend, and whether "
        "compaction keeps up (pending requests, errors, the worker).",
    ),
    "ui": (
        "ui",
        "Serve a read-only web page over the store: what the agent sees, and where the rest went.",
    ),
    "uninstall": (
        "integration",
        "Remove what `lcm install CLIENT` added: lossless's hooks and MCP entry.",
    ),
    "verify": ("history", "Prove the stored history is whole, or say exactly what is wrong where."),
    "worker": ("integration", "Compact conversations in the background, as hooks request it."),
}


def command_modules() -> list[str]:
    """The modules that define ``lcm``'s commands, each once."""
    return [f"lossless.cli.{name}" for name in dict.fromkeys(m for m, _ in COMMANDS.values())]


def load_all_commands() -> None:
    """Import every command module (the reference docs and shell completion list all)."""
    for module in command_modules():
        importlib.import_module(module)


class _Group(click.Group):
    """Loads a command's module when it is first asked for; turns expected
    errors into one clear line on stderr instead of a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            entry = COMMANDS.get(cmd_name)
            if entry is not None:
                importlib.import_module(f"lossless.cli.{entry[0]}")
            else:
                # A command missing from COMMANDS (its test says so) still runs.
                load_all_commands()
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own listing, with the one-line help of a command not loaded
        # yet taken from COMMANDS instead of importing its module.
        commands: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            command = self.commands.get(name)
            if command is None:
                command = click.Command(name, help=COMMANDS[name][1])
            if not command.hidden:
                commands.append((name, command))
        if commands:
            limit = formatter.width - 6 - max(len(name) for name, _ in commands)
            rows = [(name, command.get_short_help_str(limit)) for name, command in commands]
            with formatter.section(gettext("Commands")):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LosslessError as exc:
            click.echo(f"lcm: error: {exc}", err=True)
            ctx.exit(1)
        except BrokenPipeError:  # `lcm grep ... | head`
            sys.stderr.close()
            ctx.exit(0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Data folder (default: $LCM_HOME or ~/.lcm).",
)
@click.version_option(__version__, prog_name="lcm")
@click.pass_context
def cli(ctx: click.Context, home: Path | None) -> None:
    """lossless: keep every message of your agent sessions, compact the rest, find anything.

    \b
    Start here:
      lcm import            import all Claude Code and Codex history on this machine
      lcm status            what is stored
      lcm grep PATTERN      search every message and summary
      lcm expand SUM_ID     drill from a summary back to its sources
    """
    state = CliState(home)
    ctx.obj = state
    ctx.call_on_close(state.close)


def state_of(ctx: click.Context) -> CliState:
    obj = ctx.find_object(CliState)
    if obj is None:  # pragma: no cover - only when a command is invoked outside `cli`
        raise click.UsageError("internal: no CLI state")
    return obj


def emit_json(value: Any) -> None:
    """Print one JSON document on stdout."""
    click.echo(json.dumps(to_jsonable(value), ensure_ascii=False, indent=2))


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
