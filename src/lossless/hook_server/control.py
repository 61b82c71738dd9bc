"""Start, find, describe and stop a home's hook server.

Used by hooks (start one after an inline run), ``lcm hook-server``,
``lcm doctor``/``lcm status`` and ``lcm uninstall``. The server writes
``run/hook-server.json`` (pid, start time, idle timeout, version) once its
socket listens and removes it when it exits; ``ping`` over the socket says
whether it really answers.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lossless.hook_server import wire
from lossless.process import alive, proc_stat

if TYPE_CHECKING:
    from lossless.config import Config

# How long ``stop`` waits for the server to finish the request it is serving.
STOP_WAIT_S = 10.0


@dataclass(frozen=True, slots=True)
class ServerState:
    """What ``lcm hook-server status``, ``doctor`` and ``status`` show about a home's server."""

    running: bool
    pid: int | None = None
    idle_timeout_s: int | None = None
    started_at: float | None = None
    requests: int | None = None
    version: str | None = None
    socket: str = ""
    # Running but did not answer a ping in time (serving a long request).
    busy: bool = False

    def describe(self) -> str:
        if not self.running:
            return "not running"
        text = f"running (pid {self.pid}, exits after {self.idle_timeout_s} s idle"
        if self.requests is not None:
            text += f", {self.requests} hook(s) served"
        if self.busy:
            text += ", busy"
        return text + ")"


def info_path(home: Path) -> Path:
    return Path(wire.run_dir(str(home))) / wire.INFO_NAME


def read_info(home: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(info_path(home).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _live_pid(home: Path) -> int | None:
    info = read_info(home)
    pid = info.get("pid") if info else None
    if isinstance(pid, int) and pid > 0 and alive(pid) and not _is_zombie(pid):
        return pid
    return None


def _talk(home: Path, kind: bytes, timeout_s: float) -> bytes | None:
    """Send a ``kind`` hello; the server's one-frame answer, or None."""
    import socket

    path = wire.socket_path(str(home))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        try:
            wire.connect(sock, path)
            sock.sendall(wire.frames(wire.PROTOCOL, kind))
            return wire.Reader(sock).read(65536)
        except (OSError, wire.Closed):
            return None


def state(home: Path, *, timeout_s: float = 1.0) -> ServerState:
    """Whether ``home`` has a hook server, and what it says about itself."""
    socket_file = wire.socket_path(str(home))
    pid = _live_pid(home)
    if pid is None:
        return ServerState(running=False, socket=socket_file)
    answer = _talk(home, b"ping", timeout_s)
    info = read_info(home) or {}
    if answer is not None:
        with contextlib.suppress(ValueError):
            info = {**info, **json.loads(answer)}
    return ServerState(
        running=True,
        pid=pid,
        idle_timeout_s=info.get("idle_timeout_s"),
        started_at=info.get("started_at"),
        requests=info.get("requests"),
        version=info.get("version"),
        socket=socket_file,
        busy=answer is None,
    )


def stop(home: Path, *, wait_s: float = STOP_WAIT_S) -> int | None:
    """Stop ``home``'s hook server (after the request it serves); its pid, None if none ran."""
    import signal

    pid = _live_pid(home)
    if pid is None:
        return None
    if _talk(home, b"stop", wait_s) != b"bye":
        # Not answering (hung, or its socket gone): the signal ends it cleanly.
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while alive(pid) and not _is_zombie(pid):
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    return pid


def _is_zombie(pid: int) -> bool:
    """True for a dead child not yet reaped (it still answers ``kill 0``)."""
    stat = proc_stat(pid)
    return stat is not None and stat.state == "Z"


def server_command(home: Path, *, after: int | None = None) -> list[str]:
    argv = [sys.executable, "-m", "lossless.hook_server", "--home", str(home)]
    return argv + (["--after", str(after)] if after is not None else [])


def start_detached(config: Config) -> int | None:
    """Start ``config``'s home's hook server in its own session; its pid (None if one runs).

    Never waits for it: the server takes its lock, warms up and only then
    listens, while this hook returns. Two hooks racing here start two
    processes; the second finds the lock taken and exits at once.
    """
    home = config.home
    if not hasattr(os, "fork") or _live_pid(home) is not None:
        return None  # no fork: no Unix sockets either (the client never asks)
    config.log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    log = str(config.log_dir / wire.LOG_NAME)
    # The server warms up once this hook has returned, not against it.
    return _fork_exec(server_command(home, after=os.getpid()), log)


def _fork_exec(argv: list[str], log: str) -> int:
    """``argv`` in a new session, stdin/stdout on /dev/null, stderr to ``log``; its pid.

    Not ``subprocess`` (a hook does not import it) nor ``posix_spawn``
    (which, vfork-like, holds the hook until the child has exec'd: 8-25 ms
    on a loaded machine against ~0.5 ms for a fork of a hook process). The
    child's stdout must not be the client's pipe, or the client would wait
    for the server to exit.
    """
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: nothing of the hook's Python state runs past exec
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        err = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(err, 2)
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
