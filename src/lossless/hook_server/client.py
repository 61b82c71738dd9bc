"""What ``lcm hook EVENT`` runs first: hand the hook to the home's server.

Every hook pays for what this module imports, so it is the standard
library's ``_socket`` (not ``socket``, which imports ``enum`` and
``selectors``), ``os`` and ``sys``, and this package's ``wire``.

``serve`` answers with the hook's exit code when the server ran it, or with a
``Fallback`` saying why not; the caller then runs the hook inline, as without
a server, and starts one for the next hook when ``Fallback.start`` says so.
"""

from __future__ import annotations

import _socket
import os
import sys

from lossless.hook_server import wire

# A busy server (another session's hook, a large ingest) answers the next
# client when it is done; a client waits this long for its turn and then runs
# inline, as hooks of several sessions did before there was a server.
READY_WAIT_S = 0.5
# Once committed, how long a client waits for the hook's answer. A server
# that dies closes the connection at once; this bounds a server that hangs.
ANSWER_WAIT_S = 120.0
# `hooks.server`'s environment variable, read here without loading the
# configuration (the values the configuration's booleans read as false).
SERVER_ENV = "LCM_HOOKS_SERVER"
OFF_VALUES = ("0", "false", "no", "off", "")


class Fallback:
    """Why the server did not run the hook; ``start``: start one for the next hook."""

    __slots__ = ("reason", "start", "stdin")

    def __init__(self, reason: str, *, start: bool, stdin: bytes | None = None) -> None:
        self.reason = reason
        self.start = start
        # The event JSON when it was already read from stdin (the server died
        # after the client sent it): the inline run must get it again.
        self.stdin = stdin

    def __repr__(self) -> str:
        return f"Fallback({self.reason!r}, start={self.start})"


def home_of(home: str | None, environ: dict[str, str] | os._Environ[str]) -> str:
    """The data home a hook uses: ``--home``, else ``LCM_HOME``, else ``~/.lcm`` (as config does)."""
    return os.path.expanduser(home or environ.get("LCM_HOME") or "~/.lcm")


def serve(args: list[str], home: str | None) -> int | Fallback:
    """Run ``lcm`` ``args`` (a hook) on the home's server; its exit code, or why not."""
    if not hasattr(_socket, "AF_UNIX") or not hasattr(os, "getuid"):
        return Fallback("no Unix sockets here", start=False)
    value = os.environ.get(SERVER_ENV)
    if value is not None and value.strip().lower() in OFF_VALUES:
        return Fallback(f"{SERVER_ENV}={value}", start=False)
    if sys.stdin.isatty():
        # Run by hand: the inline path says what it expects on stdin.
        return Fallback("stdin is a terminal", start=False)
    where = home_of(home, os.environ)
    try:
        folder = os.stat(wire.run_dir(where))
    except OSError:
        return Fallback("no server", start=True)
    if folder.st_uid != os.getuid() or folder.st_mode & 0o077:
        # Someone else could have put a socket there: never talk to it.
        return Fallback("run folder not private", start=False)
    try:
        cwd = os.getcwd()
    except OSError:
        return Fallback("no current directory", start=False)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        return _converse(sock, args, where, cwd)
    finally:
        sock.close()


def _converse(sock: _socket.socket, args: list[str], home: str, cwd: str) -> int | Fallback:
    from lossless import __file__ as package_init
    from lossless import __version__

    sock.settimeout(READY_WAIT_S)
    try:
        wire.connect(sock, wire.socket_path(home))
    except FileNotFoundError:
        return Fallback("no server", start=True)
    except ConnectionRefusedError:
        return Fallback("server gone (connection refused)", start=True)
    except OSError as exc:
        return Fallback(f"cannot connect: {exc}", start=False)
    if hasattr(_socket, "SO_PEERCRED"):
        creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
        if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():
            return Fallback("server of another user", start=False)
    umask = os.umask(0o077)
    os.umask(umask)
    hello = wire.frames(
        wire.PROTOCOL,
        b"hook",
        __version__.encode(),
        os.fsencode(os.path.dirname(os.path.abspath(package_init))),
        os.fsencode(sys.executable),
        b"\0".join(os.fsencode(arg) for arg in args),
        os.fsencode(cwd),
        wire.encode_env(dict(os.environb)),
        str(umask).encode(),
    )
    reader = wire.Reader(sock)
    try:
        sock.sendall(hello)
        answer = reader.read(4096)
    except TimeoutError:
        return Fallback("server busy", start=False)
    except (OSError, wire.Closed):
        return Fallback("server closed the connection", start=True)
    if answer != b"ready":
        reason = answer.decode("utf-8", "replace")
        # A server on old code has exited; the next hook wants one on the new.
        return Fallback(f"server: {reason}", start=reason.startswith("decline stale"))
    stdin = sys.stdin.buffer.read()
    sock.settimeout(ANSWER_WAIT_S)
    try:
        sock.sendall(wire.frame(stdin))
        status = reader.read(64)
        code = int(reader.read(64))
        out = reader.read().decode("utf-8", wire.ERRORS)
        err = reader.read().decode("utf-8", wire.ERRORS)
    except (OSError, ValueError, wire.Closed):
        # Killed mid-request: what it stored stays stored, and the inline
        # run adds nothing twice (ingest is idempotent).
        return Fallback("server died mid-request", start=True, stdin=stdin)
    if status != b"done":
        return Fallback("server: bad answer", start=True, stdin=stdin)
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()
    if err:
        sys.stderr.write(err)
        sys.stderr.flush()
    return code
