"""A local HTTP server that speaks the Anthropic Messages and OpenAI Chat
Completions wire formats and answers every request from a Python callable.

Used where a test or benchmark needs a model that writes a chosen summary for
the prompt it is sent (an injected one, say): the requests go through the real
SDKs and providers, only the model is replaced, on the wire.

    with ModelServer(lambda prompt: "summary text") as server:
        build_summarizer("openai", base_url=server.openai_url, ...)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

MODEL = "scripted-model"
API_KEY = "sk-scripted-test-key"

Responder = Callable[[str], str]
"""The user prompt in (system prompt excluded), the model's text out."""


def _user_prompt(path: str, body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    texts: list[str] = []
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(b.get("text", "") for b in content if isinstance(b, dict))
    return "\n".join(texts)


def _anthropic(text: str, prompt: str) -> dict[str, Any]:
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": max(1, len(prompt) // 4),
            "output_tokens": max(1, len(text) // 4),
        },
    }


def _openai(text: str, prompt: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1_771_000_000,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": max(1, len(prompt) // 4),
            "completion_tokens": max(1, len(text) // 4),
            "total_tokens": max(2, (len(prompt) + len(text)) // 4),
        },
    }


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, responder: Responder) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.responder = responder
        self.prompts: list[str] = []
        self.lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def url_for(self, provider: str) -> str:
        return self.anthropic_url if provider == "anthropic" else self.openai_url

    def __enter__(self) -> ModelServer:
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    server: ModelServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        prompt = _user_prompt(self.path, body)
        with self.server.lock:
            self.server.prompts.append(prompt)
        if self.path == "/v1/messages":
            payload = _anthropic(self.server.responder(prompt), prompt)
        elif self.path == "/v1/chat/completions":
            payload = _openai(self.server.responder(prompt), prompt)
        else:
            self.send_error(404)
            return
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
