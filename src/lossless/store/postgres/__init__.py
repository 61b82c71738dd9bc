"""The PostgreSQL backend (optional extra: ``pip install 'lossless-context[postgres]'``).

Importing this package needs nothing beyond lossless itself; psycopg is
imported only when a store is opened, so the SQLite-only install and the
backend-selection code can import it freely.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lossless.config import Config
from lossless.errors import ConfigError

if TYPE_CHECKING:
    from lossless.store.postgres.store import PostgresStore

__all__ = ["PostgresStore", "open_postgres"]

INSTALL_HINT = "install it with: pip install 'lossless-context[postgres]'"


def open_postgres(config: Config) -> PostgresStore:
    """Open the PostgreSQL store the configuration names. Never falls back to SQLite."""
    url = str(config.get("postgres.url") or "")
    if not url:
        raise ConfigError(
            "storage.backend is postgresql but postgres.url is empty: set LCM_POSTGRES_URL "
            "(postgresql://user:password@host:5432/database) or postgres.url in config.toml"
        )
    store_class = _store_class()
    return store_class(url, ca_file=str(config.get("postgres.ca_file") or "") or None)


def _store_class() -> type[PostgresStore]:
    try:
        from lossless.store.postgres.store import PostgresStore
    except ImportError as exc:
        raise ConfigError(
            f"storage.backend is postgresql but its driver is not installed ({exc}); "
            + INSTALL_HINT
        ) from None
    return PostgresStore


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        return _store_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
