"""Storage: the contract (``contract``) and its backends (``sqlite``, ``postgres``)."""

from __future__ import annotations

from lossless.config import Config
from lossless.errors import ConfigError
from lossless.store.contract import Store


def open_store(config: Config) -> Store:
    """Open the backend the configuration selects. Never falls back to another one."""
    backend = config.get("storage.backend")
    if backend == "sqlite":
        from lossless.store.sqlite import SQLiteStore

        return SQLiteStore(config.db_path)
    if backend == "postgresql":
        try:
            from lossless.store.postgres import open_postgres  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:
            raise ConfigError(
                "storage.backend is postgresql but the PostgreSQL backend is not available: "
                f"{exc}; install it with: pip install 'lossless-context[postgres]'"
            ) from None
        store: Store = open_postgres(config)
        return store
    raise ConfigError(f"unknown storage.backend {backend!r}")
