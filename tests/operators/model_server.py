"""A model server on 127.0.0.1 that answers by what it is asked, for the map operators.

Map jobs call the model concurrently and out of order, so a script of replies
in arrival order does not fit: a ``responder`` looks at each request (the
item inside ``<item>…</item>``, the attempt's feedback) and returns the reply.
It speaks OpenAI Chat Completions (``/v1/chat/completions``) and Anthropic
Messages (``/v1/messages``); the real SDKs of both are the clients.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ITEM = re.compile(r"<item>\n(.*?)\n</item>", re.DOTALL)


@dataclass
class Reply:
    text: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    input_tokens: int = 10
    output_tokens: int = 5


@dataclass
class Request:
    path: str
    body: dict[str, Any]

    @property
    def prompt(self) -> str:
        """The user prompt (last user message) as text."""
        messages = self.body.get("messages") or []
        for message in reversed(messages):
            if message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str):
                    return content
                return "".join(
                    block.get("text", "") for block in content or [] if isinstance(block, dict)
                )
        return str(self.body.get("input", ""))

    @property
    def item(self) -> str | None:
        found = _ITEM.search(self.prompt)
        return found.group(1) if found else None

    @property
    def retry(self) -> bool:
        return "It was rejected:" in self.prompt


Responder = Callable[[Request], Reply]


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, responder: Responder) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.responder = responder
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak_in_flight = 0

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def items_asked(self) -> list[str]:
        with self.lock:
            return [r.item for r in self.requests if r.item is not None]


def _openai_body(reply: Reply, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
        },
    }


def _anthropic_body(reply: Reply, model: str) -> dict[str, Any]:
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": reply.text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
    }


class _Handler(BaseHTTPRequestHandler):
    server: ModelServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, the client's
    # delayed ACK adds ~40 ms to every call, which is the server's, not ours.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        request = Request(self.path, body)
        with self.server.lock:
            self.server.requests.append(request)
            self.server.in_flight += 1
            self.server.peak_in_flight = max(self.server.peak_in_flight, self.server.in_flight)
        try:
            reply = self.server.responder(request)
            if reply.delay_s:
                time.sleep(reply.delay_s)
        finally:
            with self.server.lock:
                self.server.in_flight -= 1
        model = str(body.get("model") or "test-model")
        if reply.status != 200:
            payload = json.dumps(
                {"error": {"type": "error", "message": f"scripted HTTP {reply.status}"}}
            ).encode()
        elif self.path.endswith("/chat/completions"):
            payload = json.dumps(_openai_body(reply, model)).encode()
        elif self.path.endswith("/messages"):
            payload = json.dumps(_anthropic_body(reply, model)).encode()
        else:
            reply = Reply(status=404)
            payload = b'{"error": {"message": "no route"}}'
        try:
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass


@contextmanager
def serving(responder: Responder) -> Iterator[ModelServer]:
    server = ModelServer(responder)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
