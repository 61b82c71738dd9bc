"""Generate ``docs/cli.md`` from the commands themselves, so the reference cannot drift.

    python -m lossless.cli.reference > docs/cli.md

A test compares the file with this output.
"""

from __future__ import annotations

import click

from lossless.cli import cli
from lossless.cli.app import load_all_commands


def _commands(group: click.Group, path: list[str]) -> list[tuple[list[str], click.Command]]:
    found: list[tuple[list[str], click.Command]] = []
    for name in sorted(group.commands):
        command = group.commands[name]
        found.append(([*path, name], command))
        if isinstance(command, click.Group):
            found.extend(_commands(command, [*path, name]))
    return found


def render_reference() -> str:
    load_all_commands()
    root = cli
    assert isinstance(root, click.Group)
    lines = [
        "# `lcm` command reference",
        "",
        "Generated from the code by `python -m lossless.cli.reference > docs/cli.md`;",
        "`lcm COMMAND --help` prints the same text.",
        "",
    ]
    for path, command in _commands(root, []):
        name = " ".join(path)
        context = click.Context(
            command,
            info_name=f"lcm {name}",
            terminal_width=100,
            help_option_names=["-h", "--help"],
        )
        lines += [f"## lcm {name}", "", "```", command.get_help(context).rstrip(), "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(render_reference(), end="")
