"""What a command shares while it runs: the data folder, its settings, the open engine.

Apart from ``cli/app.py`` (which builds the click group) so that the commands
run without click (``cli/fast_path.py``) hold the same state.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from lossless.cli import resume_gc

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.engine.engine import Engine


@dataclasses.dataclass
class CliState:
    """A command's data folder (None: the default), its settings and engine, loaded when first asked for."""

    home: Path | None
    _config: Config | None = None
    _engine: Engine | None = None

    def config(self, *, lenient: bool = False) -> Config:
        """The configuration; a problem in it (a bad line of config.toml, a bad
        LCM_* value) is an error naming it, unless ``lenient`` (``lcm status``,
        ``doctor``, ``config show`` and ``mcp`` run on the valid settings and
        report the problems)."""
        config = self._settings(lenient)
        # A command that needs no engine has started once it has its settings.
        resume_gc()
        return config

    def _settings(self, lenient: bool) -> Config:
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

            config = self._settings(lenient)
            new_store = prepare_home(config)
            self._engine = Engine.open(config=config)
            # Start-up ends with the engine and its store's modules loaded.
            resume_gc()
            if new_store:
                announce_new_store(config)
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None
