"""Storage: the contract (``contract``) and its backends (``sqlite``, ``postgres``)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from lossless.config import Config
from lossless.errors import ConfigError
from lossless.store.contract import Store

if TYPE_CHECKING:
    from lossless.store.sqlite.keeper import WalKeeper

# Backends that many machines share through a server: their stores have
# ``coordination`` (a job queue, outbox receipts), and a hook that cannot reach
# the server captures offline. Known from the configuration alone, for the
# moment when the store could not be opened.
SHARED_BACKENDS = frozenset({"postgresql"})


def is_shared(config: Config) -> bool:
    """Whether the configured backend is a shared server (see ``SHARED_BACKENDS``)."""
    return config.storage_backend in SHARED_BACKENDS


def open_store(config: Config) -> Store:
    """Open the backend the configuration selects. Never falls back to another one."""
    backend = config.storage_backend
    if backend == "sqlite":
        from lossless.store.sqlite import SQLiteStore

        return SQLiteStore(config.db_path)
    if backend == "postgresql":
        # Imported by name: the PostgreSQL driver is an optional extra and
        # must not load unless this backend is selected.
        try:
            postgres = importlib.import_module("lossless.store.postgres")
        except ImportError as exc:
            raise ConfigError(
                "storage.backend is postgresql but the PostgreSQL backend is not available: "
                f"{exc}; install it with: pip install 'lossless-context[postgres]'"
            ) from None
        store: Store = postgres.open_postgres(config)
        return store
    raise ConfigError(f"unknown storage.backend {backend!r}")


def idle_keeper(config: Config) -> WalKeeper | None:
    """For a long-lived process that opens many short stores (the hook server): an idle
    connection that spares each of their closes the SQLite log checkpoint; None for a
    backend that needs none. Call ``refresh()`` between stores, ``close()`` at the end."""
    if config.storage_backend != "sqlite":
        return None
    from lossless.store.sqlite.keeper import WalKeeper

    return WalKeeper(config.db_path)
