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

__all__ = ["PostgresStore", "migrate_postgres", "open_postgres", "postgres_schema_status"]

INSTALL_HINT = "install it with: pip install 'lossless-context[postgres]'"


def open_postgres(config: Config) -> PostgresStore:
    """Open the PostgreSQL store the configuration names. Never falls back to SQLite."""
    if not config.postgres_url:
        raise ConfigError(
            "storage.backend is postgresql but postgres.url is empty: set LCM_POSTGRES_URL "
            "(postgresql://user:password@host:5432/database) or postgres.url in config.toml"
        )
    store_class = _store_class()
    return store_class(
        _url(config, None), ca_file=_ca_file(config), connect_timeout_s=_connect_timeout(config)
    )


def migrate_postgres(config: Config, url: str | None = None) -> dict[str, Any]:
    """Apply pending migrations to the configured (or given) database; see ``admin``."""
    try:
        from lossless.store.postgres.admin import run_migrations
    except ImportError as exc:
        raise _missing_driver(exc) from None
    return run_migrations(
        _url(config, url), ca_file=_ca_file(config), connect_timeout_s=_connect_timeout(config)
    )


def postgres_schema_status(config: Config, url: str | None = None) -> dict[str, Any]:
    """The configured (or given) database's migration state, read only."""
    try:
        from lossless.store.postgres.admin import schema_status
    except ImportError as exc:
        raise _missing_driver(exc) from None
    return schema_status(
        _url(config, url), ca_file=_ca_file(config), connect_timeout_s=_connect_timeout(config)
    )


def _url(config: Config, url: str | None) -> str:
    chosen = url or config.postgres_url
    if not chosen:
        raise ConfigError(
            "postgres.url is empty: set LCM_POSTGRES_URL "
            "(postgresql://user:password@host:5432/database), postgres.url in config.toml, "
            "or pass --url"
        )
    return chosen


def _ca_file(config: Config) -> str | None:
    return config.postgres_ca_file or None


def _connect_timeout(config: Config) -> float:
    return config.postgres_connect_timeout_s


def _missing_driver(exc: ImportError) -> ConfigError:
    return ConfigError(f"the PostgreSQL driver is not installed ({exc}); " + INSTALL_HINT)


def _store_class() -> type[PostgresStore]:
    try:
        from lossless.store.postgres.store import PostgresStore
    except ImportError as exc:
        raise _missing_driver(exc) from None
    return PostgresStore


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        return _store_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
