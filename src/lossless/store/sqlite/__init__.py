"""The SQLite backend (default)."""

from lossless.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
