"""The ``lcm`` click group and the few helpers every command module shares.

Commands live in one module per area (``cli/history.py``, ``cli/compaction.py``
...) and register themselves on ``cli``. Surfaces stay thin: parse arguments,
call the engine, format the result. ``--json`` output is exactly one JSON
document on stdout; errors go to stderr with a non-zero exit code.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from lossless.errors import LosslessError
from lossless.jsonable import to_jsonable

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.engine.engine import Engine


class _Group(click.Group):
    """Turns expected errors into one clear line on stderr instead of a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LosslessError as exc:
            click.echo(f"lcm: error: {exc}", err=True)
            ctx.exit(1)
        except BrokenPipeError:  # `lcm grep ... | head`
            sys.stderr.close()
            ctx.exit(0)


@dataclasses.dataclass
class CliState:
    home: Path | None
    _config: Config | None = None
    _engine: Engine | None = None

    def config(self, *, lenient: bool = False) -> Config:
        """The configuration; a problem in it (a bad line of config.toml, a bad
        LCM_* value) is an error naming it, unless ``lenient`` (``lcm status``,
        ``doctor``, ``config show`` and ``mcp`` run on the valid settings and
        report the problems)."""
        if self._config is None:
            from lossless.config import load_config

            self._config = load_config(self.home, lenient=True)
        if self._config.problems and not lenient:
            from lossless.errors import ConfigError

            first = self._config.problems[0]
            more = len(self._config.problems) - 1
            raise ConfigError(
                f"{first.describe()}"
                + (f" (and {more} more problem(s))" if more else "")
                + "; `lcm config show` and `lcm doctor` still run and list them"
            )
        return self._config

    def engine(self, *, lenient: bool = False) -> Engine:
        if self._engine is None:
            from lossless.cli.home import announce_new_store, prepare_home
            from lossless.engine.engine import Engine

            config = self.config(lenient=lenient)
            new_store = prepare_home(config)
            self._engine = Engine.open(config=config)
            if new_store:
                announce_new_store(config)
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Data folder (default: $LCM_HOME or ~/.lcm).",
)
@click.version_option(package_name="lossless-context", prog_name="lcm")
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
