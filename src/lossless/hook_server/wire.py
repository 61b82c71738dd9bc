"""The hook server's socket location and framing, shared by client and server.

Imported by the client on every hook: the standard library's ``os`` only
(sockets are passed in). A message is a sequence of frames, each a 4-byte
big-endian length and that many bytes.

The conversation, client (C) and server (S):

1. C: ``hello`` frames: ``PROTOCOL``, the kind (``hook``, ``stop``, ``ping``),
   the client's lossless version, its package folder, its interpreter.
2. S: one frame: ``ready``, or ``decline <reason>`` (stale code, a foreign
   install, turned off, busy...), or the answer to ``stop``/``ping``. The
   server sends ``ready`` only when it starts on this request: it serves one
   request at a time, and a client tired of waiting for it runs inline.
3. C: the request (argv, cwd, environment, umask, stdin). Sending it commits
   the client: a client that gave up before ``ready`` never sends it, so a
   request is either served or run inline, never both.
4. S: ``done``, the exit code, stdout and stderr.

A connection that ends anywhere else (the server killed mid-request) makes the
client run the hook inline; ingest is idempotent, so nothing is stored twice.
"""

from __future__ import annotations

import os

# Not `typing.TYPE_CHECKING`: importing typing costs every hook a few ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Protocol

    class Socket(Protocol):
        def recv(self, size: int, /) -> bytes: ...
        def connect(self, address: str, /) -> None: ...
        def bind(self, address: str, /) -> None: ...


PROTOCOL = b"lcm-hook-server/1"
RUN_DIR = "run"
SOCKET_NAME = "hook-server.sock"
LOCK_NAME = "hook-server.lock"
INFO_NAME = "hook-server.json"
LOG_NAME = "hook-server.log"
# The longest socket path bind/connect take everywhere (sun_path is 104 bytes
# on macOS, 108 on Linux, with the terminating NUL).
MAX_SOCKET_PATH = 100
# Text crosses as UTF-8; surrogateescape keeps undecodable bytes as they were.
ERRORS = "surrogateescape"


def run_dir(home: str) -> str:
    return os.path.join(home, RUN_DIR)


def socket_path(home: str) -> str:
    return os.path.join(home, RUN_DIR, SOCKET_NAME)


def frame(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def frames(*items: bytes) -> bytes:
    return b"".join(frame(item) for item in items)


class Closed(Exception):
    """The other side closed the connection before a whole frame arrived."""


class Reader:
    """Reads frames from a socket-like object with ``recv``."""

    def __init__(self, sock: Socket) -> None:
        self._recv = sock.recv
        self._buffer = bytearray()

    def _fill(self, size: int) -> None:
        while len(self._buffer) < size:
            chunk = self._recv(max(65536, size - len(self._buffer)))
            if not chunk:
                raise Closed()
            self._buffer += chunk

    def read(self, limit: int = 1 << 30) -> bytes:
        self._fill(4)
        size = int.from_bytes(self._buffer[:4], "big")
        if size > limit:
            raise Closed()
        self._fill(4 + size)
        data = bytes(self._buffer[4 : 4 + size])
        del self._buffer[: 4 + size]
        return data


def encode_env(environ: dict[bytes, bytes]) -> bytes:
    return b"\0".join(key + b"=" + value for key, value in environ.items())


def decode_env(data: bytes) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in data.split(b"\0") if data else ():
        key, _, value = item.partition(b"=")
        env[os.fsdecode(key)] = os.fsdecode(value)
    return env


def connect(sock: Socket, path: str) -> None:
    """``sock.connect(path)``; a path too long for ``sun_path`` is reached from its folder."""
    _at(sock.connect, path)


def bind(sock: Socket, path: str) -> None:
    """``sock.bind(path)``, reaching a long path from its folder as ``connect`` does."""
    _at(sock.bind, path)


def _at(method: Callable[[str], None], path: str) -> None:
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        method(path)
        return
    with _inside(os.path.dirname(path)):
        method(os.path.basename(path))


class _inside:
    """Change into ``folder`` for a moment and back (by descriptor: cwd may be gone)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.back = -1

    def __enter__(self) -> None:
        self.back = os.open(".", os.O_RDONLY)
        try:
            os.chdir(self.folder)
        except BaseException:
            os.close(self.back)
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            os.fchdir(self.back)
        finally:
            os.close(self.back)
