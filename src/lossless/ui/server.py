"""Bind, print the URL, serve until interrupted.

The socket is bound before the URL is printed, so the URL always works (port
0 picks a free port) and a port in use is a clear error, not a traceback.
"""

from __future__ import annotations

import socket
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass

from lossless.config import Config
from lossless.errors import InputError
from lossless.ui.security import check_bind, is_loopback, new_token


@dataclass(frozen=True, slots=True)
class Launch:
    host: str
    port: int
    token: str

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/{self.token}/"


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


def _allowed_hosts(host: str, port: int) -> set[str] | None:
    """Host headers we answer: our own address (a DNS-rebinding page sends its own
    name). On a remote bind the user chose which names reach us: any is allowed."""
    if not is_loopback(host):
        return None
    names = {host, "localhost", "127.0.0.1", "[::1]"}
    return {f"{n}:{port}" for n in names} | names


def serve(
    config: Config,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    allow_remote: bool = False,
    open_browser: bool = False,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve the UI for ``config``'s store until Ctrl-C."""
    import uvicorn

    from lossless.ui.app import create_app
    from lossless.ui.engine_pool import EnginePool
    from lossless.ui.library import store_label

    check_bind(host, allow_remote=allow_remote)
    pool = EnginePool(config)
    try:
        label = pool.call(store_label)  # open the store now: errors before the URL
        pool.open_all()
        sock = bind(host, port)
        launch = Launch(host, sock.getsockname()[1], new_token())
        app = create_app(pool, launch.token, allowed_hosts=_allowed_hosts(host, launch.port))
        announce(f"lcm ui: showing the {label['backend']} store at {label['where']}")
        announce(f"lcm ui: open {launch.url}")
        announce("lcm ui: read-only; the address holds a secret for this launch. Ctrl-C stops it.")
        if open_browser:
            webbrowser.open(launch.url)
        server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        )
        server.run(sockets=[sock])
    finally:
        pool.close()
