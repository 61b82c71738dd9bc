"""Where the PostgreSQL backend connects, and what its failures mean to a user.

Every driver error leaves the backend as a ``StoreError`` (or a subclass) whose
message names the server as ``host:port/database`` and never carries the
password: libpq messages are scrubbed of it, URLs are shown through
``mask_url``. A server that could not be reached (refused, unreachable, timed
out, connection lost) is a ``StoreUnavailableError``; an error the live server
answered with carries its SQLSTATE in ``code`` and says in ``transient``
whether retrying later can cure it (hooks log the two differently, see
``lossless.hooks.dispatch``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg_pool
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo, timeout_from_conninfo

from lossless.config import SETTINGS, mask_url
from lossless.errors import ConfigError, StoreError, StoreUnavailableError

# The schema every lossless object lives in; ``public`` follows it so
# extensions an administrator installed there before us are still found.
SEARCH_PATH = "lcm,public"
DEFAULT_CONNECT_TIMEOUT_S: int = next(
    s.default for s in SETTINGS if s.name == "postgres.connect_timeout_s"
)
# libpq (and psycopg, which enforces the timeout itself) waits whole seconds,
# never less than 2, and treats 0 as "forever".
MIN_CONNECT_TIMEOUT_S = 2


@dataclass(frozen=True, slots=True)
class Target:
    """The parts of a connection string that are safe to print."""

    host: str
    port: str
    database: str
    user: str
    password: str | None
    url: str
    connect_timeout_s: int = DEFAULT_CONNECT_TIMEOUT_S

    @property
    def where(self) -> str:
        return f"PostgreSQL at {self.host}:{self.port}/{self.database}"

    def scrub(self, text: str) -> str:
        """``text`` without the password, however a driver message quoted it."""
        if self.password:
            text = text.replace(self.password, "****")
        return text.replace(self.url, mask_url(self.url))


def build_conninfo(
    url: str,
    *,
    ca_file: str | None = None,
    statement_timeout_ms: int | None = None,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    application_name: str = "lossless",
) -> tuple[str, Target]:
    """The libpq connection string for ``url`` plus what lossless needs of every session.

    ``connect_timeout_s`` (the ``postgres.connect_timeout_s`` setting) becomes
    libpq's ``connect_timeout``, rounded up to whole seconds and at least 2; a
    ``connect_timeout`` already in the URL wins.
    """
    if connect_timeout_s <= 0:
        raise ConfigError(
            f"postgres.connect_timeout_s must be a positive number of seconds, "
            f"got {connect_timeout_s!r}"
        )
    try:
        params: dict[str, Any] = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(
            f"postgres.url {mask_url(url)} is not a valid PostgreSQL URL: "
            f"{_scrub_password(str(exc), url)}"
        ) from None
    host = str(params.get("host") or params.get("hostaddr") or "localhost")
    params.setdefault("connect_timeout", max(MIN_CONNECT_TIMEOUT_S, math.ceil(connect_timeout_s)))
    try:
        effective_timeout = timeout_from_conninfo(params)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"postgres.url {mask_url(url)}: {exc}") from None
    target = Target(
        host=host,
        port=str(params.get("port") or "5432"),
        database=str(params.get("dbname") or params.get("user") or "postgres"),
        user=str(params.get("user") or ""),
        password=str(params["password"]) if params.get("password") else None,
        url=url,
        connect_timeout_s=effective_timeout,
    )
    # Session settings ride in the startup packet, so they hold from the first
    # statement and survive RESET ALL; user-supplied options are kept.
    options = [str(params.get("options") or "").strip(), f"-c search_path={SEARCH_PATH}"]
    if statement_timeout_ms is not None:
        options.append(f"-c statement_timeout={int(statement_timeout_ms)}")
    params["options"] = " ".join(o for o in options if o)
    params.setdefault("application_name", application_name)
    if ca_file:
        params["sslrootcert"] = ca_file
        params.setdefault("sslmode", "verify-full")
    return make_conninfo("", **params), target


def _scrub_password(text: str, url: str) -> str:
    try:
        password = conninfo_to_dict(url).get("password")
    except psycopg.ProgrammingError:
        password = None
    return text.replace(str(password), "****") if password else text


# A connection the server answered and refused for a reason that waiting
# cannot cure: these are configuration problems, not an unavailable server.
_REFUSED_FOR_GOOD = (
    "no pg_hba.conf entry",
    "does not exist",  # the database or the role
    "permission denied",
    "certificate verify failed",
)


def describe_connect_error(exc: BaseException, target: Target) -> StoreError:
    """A clear error for a connection that could not be made.

    ``StoreUnavailableError`` unless the server answered and refused this user
    or database for good (authentication, pg_hba.conf, a missing database).
    """
    reason = target.scrub(str(exc)).strip()
    if "password authentication failed" in reason or "authentication failed" in reason:
        return StoreError(
            f"{target.where}: authentication failed for user {target.user!r}: check the "
            "user and password in postgres.url (LCM_POSTGRES_URL)",
            code="authentication failed",
        )
    if any(marker in reason for marker in _REFUSED_FOR_GOOD):
        return StoreError(
            f"{target.where} refused the connection: {_first_lines(reason)}; check "
            "postgres.url (LCM_POSTGRES_URL) and the server's pg_hba.conf and grants",
            # libpq gives a refused login no SQLSTATE.
            code=_sqlstate(exc) or "login refused",
        )
    if isinstance(exc, psycopg_pool.PoolTimeout):
        reason = "no connection could be made in time"
    elif isinstance(exc, pg_errors.ConnectionTimeout):
        reason = (
            f"no answer within {target.connect_timeout_s} s (postgres.connect_timeout_s, "
            "LCM_POSTGRES_CONNECT_TIMEOUT_S, or connect_timeout in the URL)"
        )
    return StoreUnavailableError(
        f"cannot connect to {target.where}: {_first_lines(reason)}; check that the server is "
        "running and reachable, and postgres.url (LCM_POSTGRES_URL). lossless never falls "
        "back to another backend"
    )


def _sqlstate(exc: BaseException) -> str | None:
    """``exc``'s SQLSTATE and condition class, as a log line shows them (or None)."""
    state = getattr(exc, "sqlstate", None)
    if not isinstance(state, str) or not state:
        return None
    name = type(exc).__name__
    return state if name in ("Error", "DatabaseError", "OperationalError") else f"{state} {name}"


def describe_error(exc: psycopg.Error, target: Target, *, in_transaction: bool) -> StoreError:
    """A clear error for a statement or commit that failed."""
    undone = (
        "the transaction was rolled back: nothing in it was committed"
        if in_transaction
        else "nothing was changed"
    )
    code = _sqlstate(exc)
    if isinstance(exc, pg_errors.QueryCanceled):
        return StoreError(
            f"{target.where}: a statement was cancelled (statement_timeout reached or "
            f"cancelled by an administrator); {undone}",
            code=code,
            transient=True,
        )
    if isinstance(exc, pg_errors.LockNotAvailable):
        return StoreError(
            f"{target.where}: a lock could not be taken in time; {undone}",
            code=code,
            transient=True,
        )
    if isinstance(exc, pg_errors.SerializationFailure | pg_errors.DeadlockDetected):
        return StoreError(
            f"{target.where}: concurrent writers conflicted; {undone}; retry",
            code=code,
            transient=True,
        )
    if isinstance(exc, pg_errors.UndefinedTable):
        return StoreError(
            f"{target.where}: the lossless schema is missing or incomplete "
            f"({_first_lines(target.scrub(str(exc)))}); run `lcm postgres migrate`",
            code=code,
        )
    if is_disconnect(exc) or (
        # A server's error that merely rides an OperationalError class (a
        # full disk, too many connections) has a SQLSTATE; a dead socket has none.
        isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError) and not exc.sqlstate
    ):
        return StoreUnavailableError(
            f"the connection to {target.where} was lost "
            f"({_first_lines(target.scrub(str(exc)))}); {undone}; the next operation "
            "reconnects once the server is back"
        )
    return StoreError(f"{target.where}: {_first_lines(target.scrub(str(exc)))}", code=code)


def is_disconnect(exc: psycopg.Error) -> bool:
    """The server ended the session (shutdown, crash, terminated, idle timeout)."""
    return isinstance(
        exc,
        pg_errors.AdminShutdown
        | pg_errors.CrashShutdown
        | pg_errors.CannotConnectNow
        | pg_errors.IdleSessionTimeout,
    )


def _first_lines(text: str, limit: int = 2) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines[:limit]) or "unknown error"


@contextmanager
def translated(target: Target, *, in_transaction: bool) -> Iterator[None]:
    """Turn driver errors raised in the block into ``StoreError``."""
    try:
        yield
    except psycopg_pool.PoolTimeout as exc:
        raise describe_connect_error(exc, target) from None
    except psycopg.Error as exc:
        raise describe_error(exc, target, in_transaction=in_transaction) from exc
