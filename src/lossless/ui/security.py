"""Who may talk to the UI server: loopback binds, a per-launch token, our own Host.

Every URL the server answers lives under ``/<token>/``. A request without the
token, with a wrong one, or addressed to a Host other than the one we bound
(a DNS-rebinding page) gets 403 and an empty body, static files included:
another local user or a web page in the browser cannot read the store.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from lossless.errors import InputError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Headers on every answer: nothing cached, nothing loaded from elsewhere, the
# token never sent on in a Referer.
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"cache-control", b"no-store"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; style-src 'self'; "
        b"script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
)


def new_token() -> str:
    """A fresh secret for one launch (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """True when every address ``host`` names is a loopback address."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def check_bind(host: str, *, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless the user asked for it explicitly."""
    if is_loopback(host) or allow_remote:
        return
    raise InputError(
        f"refusing to serve on {host!r}: the UI shows every stored message, so it binds to "
        "loopback only (127.0.0.1). Pass --allow-remote to serve on another address "
        "(anyone who can reach it and has the URL can read the store)."
    )


class TokenGate:
    """ASGI middleware: strips ``/<token>`` from the path or answers 403."""

    def __init__(self, app: ASGIApp, token: str, allowed_hosts: set[str] | None = None) -> None:
        self.app = app
        self.token = token
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope.get("path", "")
        host = _header(scope, b"host")
        if self.allowed_hosts is not None and host not in self.allowed_hosts:
            await _forbidden(send)
            return
        segment, _, _rest = path[1:].partition("/")
        if not secrets.compare_digest(segment.encode(), self.token.encode()):
            await _forbidden(send)
            return
        # ASGI's own way of mounting an app under a prefix: routes see the rest.
        inner = dict(scope)
        inner["root_path"] = scope.get("root_path", "") + "/" + segment

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(inner, receive, send_with_headers)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


async def _forbidden(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-length", b"0"), *SECURITY_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": b""})
