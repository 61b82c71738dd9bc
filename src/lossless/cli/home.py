"""The data folder a command is about to use: creatable, and new or not.

A mistyped ``--home`` or ``LCM_HOME`` would otherwise silently open an empty
store, and every search would find nothing; one that cannot be created would
end in a traceback from deep inside the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lossless.errors import ConfigError

if TYPE_CHECKING:
    from lossless.config import Config


def _origin(config: Config) -> str:
    origin = config.origins.get("home", "default")
    return {"argument": "from --home", "default": "the default"}.get(origin, f"from {origin}")


def prepare_home(config: Config) -> bool:
    """Create the data folder if needed; return True when a new SQLite store
    is about to be created in it. A folder that cannot be created (or is not
    a folder) is a ``ConfigError`` naming it and where it was set."""
    home = config.home
    origin = _origin(config)
    if home.exists() and not home.is_dir():
        raise ConfigError(f"the data folder {home} ({origin}) is not a folder")
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ConfigError(
            f"cannot create the data folder {home} ({origin}): {exc.strerror or exc}; "
            "pass --home with a folder you can write, or set LCM_HOME"
        ) from None
    return config.storage_backend == "sqlite" and not config.db_path.exists()


def announce_new_store(config: Config) -> None:
    """Say on stderr that the store is new, so a mistyped home is noticed.

    Only to a person (stderr a terminal): scripts and tools read the first
    lines of stderr of `lcm map` and others."""
    import sys

    if not sys.stderr.isatty():
        return
    import click

    origin = _origin(config)
    click.echo(
        f"lcm: note: no store was at {config.home} ({origin}): created a new, empty one. "
        "If you expected your history there, check --home / LCM_HOME.",
        err=True,
    )
