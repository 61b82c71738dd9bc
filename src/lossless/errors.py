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
    """The store cannot do what was asked (unreachable, corrupt, closed).

    ``code`` names the cause in a few words for a log line: the SQLSTATE and
    its condition on PostgreSQL (``57014 QueryCanceled``), else None (the
    class name says it). ``transient``: the same request can succeed later
    without anyone acting (a statement or lock timeout, a conflict with a
    concurrent writer); False means someone has to fix something first (a
    schema from a newer lossless, a missing privilege, a damaged file).
    """

    code: str | None = None
    transient: bool = False

    def __init__(
        self, message: str = "", *, code: str | None = None, transient: bool | None = None
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if transient is not None:
            self.transient = transient

    @property
    def label(self) -> str:
        """``code`` if known, else the class name: what a log line calls the error."""
        return self.code or type(self).__name__


class StoreUnavailableError(StoreError):
    """The server could not be reached: the connection was refused, failed, timed
    out, or was lost. A live server that answered with an error is a plain
    ``StoreError``."""

    transient = True


class MigrationError(StoreError):
    """The database schema history does not match this version of lossless."""


class NestedTransactionError(StoreError):
    """A transaction was opened inside another one on the same store."""


class StoreClosedError(StoreError):
    """The store was used after ``close()``."""


class LeaseLostError(StoreError):
    """A write was fenced off: another worker took the conversation's lease."""
