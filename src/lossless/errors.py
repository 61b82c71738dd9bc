"""Errors a user or embedder can see. Each names what went wrong and where."""

from __future__ import annotations


class LosslessError(Exception):
    """Base class for every error lossless raises on purpose."""


class ConfigError(LosslessError):
    """A configuration value is missing, malformed or contradictory."""


class NotFoundError(LosslessError):
    """An id (conversation, message, summary, file) does not exist."""


class InputError(LosslessError):
    """Input that cannot be stored as given (wrong type, U+0000 in text, ...)."""


class StoreError(LosslessError):
    """The store cannot do what was asked (unreachable, corrupt, closed)."""


class MigrationError(StoreError):
    """The database schema history does not match this version of lossless."""


class NestedTransactionError(StoreError):
    """A transaction was opened inside another one on the same store."""


class StoreClosedError(StoreError):
    """The store was used after ``close()``."""


class LeaseLostError(StoreError):
    """A write was fenced off: another worker took the conversation's lease."""
