"""The ``lcm`` command line. Each area's commands live in their own module."""

from __future__ import annotations

# Importing a command module registers its commands on ``cli``.
from lossless.cli import compaction as _compaction  # noqa: F401
from lossless.cli import history as _history  # noqa: F401
from lossless.cli import integration as _integration  # noqa: F401
from lossless.cli import memory as _memory  # noqa: F401
from lossless.cli import postgres as _postgres  # noqa: F401
from lossless.cli import sensitive as _sensitive  # noqa: F401
from lossless.cli.app import cli


def main() -> None:
    cli(prog_name="lcm")


__all__ = ["cli", "main"]
