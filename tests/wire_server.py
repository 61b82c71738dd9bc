"""A stdlib HTTP server on 127.0.0.1 that plays back scripted replies and keeps
every request (path, headers, JSON body): the off-machine LLM APIs, on the wire.

It answers the Anthropic Messages and OpenAI Chat Completions paths; tests
script the bodies in each provider's format, or set ``responder`` to answer
each request from what it asked (``tests/summarize/model_server.py``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class WireServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[Reply] = []
        self.received: list[Received] = []
        self.lock = threading.Lock()
        self.release = threading.Event()  # set at teardown to free delayed handlers
        # When set, answers every request the script does not (a model whose
        # reply depends on the prompt).
        self.responder: Callable[[Received], Reply] | None = None

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def play(self, *replies: Reply) -> None:
        with self.lock:
            self.script.extend(replies)


class _Handler(BaseHTTPRequestHandler):
    server: WireServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        headers = {k.lower(): v for k, v in self.headers.items()}
        with self.server.lock:
            self.server.received.append(Received(self.path, headers, body))
            known = self.path in ("/v1/messages", "/v1/chat/completions")
            if not known:
                reply = Reply(404, {"error": {"message": f"no route {self.path}"}})
            elif self.server.script:
                reply = self.server.script.pop(0)
            elif self.server.responder is not None:
                reply = self.server.responder(self.server.received[-1])
            else:
                reply = Reply(500, {"error": {"message": "unscripted request"}})
        if reply.delay_s:
            self.server.release.wait(reply.delay_s)
        payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
        try:
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout tests)


@contextmanager
def running_wire_server() -> Iterator[WireServer]:
    """A started server, shut down (and its delayed handlers freed) on exit."""
    srv = WireServer()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield srv
    finally:
        srv.release.set()
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)
