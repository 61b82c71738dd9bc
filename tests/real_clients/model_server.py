"""A scripted model server on 127.0.0.1 speaking the two wire protocols the real clients use.

Claude Code talks to the Anthropic Messages API (``POST /v1/messages``, SSE when
``stream`` is true) at ``ANTHROPIC_BASE_URL``; Codex talks to the OpenAI
Responses API (``POST /v1/responses``, SSE) through a ``model_providers`` entry
whose ``base_url`` points here. Each request body is kept, in order, for the
tests to assert on; what the "model" answers is decided by a ``script``
callable that sees the request and returns a :class:`Reply`.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    # Responses API: the tool's namespace (Codex groups an MCP server's tools
    # under one, e.g. ``mcp__lcm``).
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """What the model says: some text, then optionally one tool call."""

    text: str = ""
    tool_call: ToolCall | None = None


@dataclass(slots=True)
class Request:
    path: str
    body: dict[str, Any]


Script = Callable[[Request], Reply]


@dataclass
class ModelServer:
    script: Script
    requests: list[Request] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ModelServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send_json(404, {"error": {"type": "not_found", "message": self.path}})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                path = self.path.split("?", 1)[0]
                request = Request(path, body)
                with owner._lock:
                    owner.requests.append(request)
                if path.endswith("/messages/count_tokens"):
                    self._send_json(200, {"input_tokens": 100})
                elif path.endswith("/messages"):
                    reply = owner.script(request)
                    if body.get("stream"):
                        self._send_sse(anthropic_events(reply))
                    else:
                        self._send_json(200, anthropic_message(reply))
                elif path.endswith("/responses"):
                    self._send_sse(responses_events(owner.script(request)))
                else:
                    self._send_json(404, {"error": {"type": "not_found", "message": path}})

            def _send_json(self, status: int, data: dict[str, Any]) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _send_sse(self, events: Iterator[tuple[str, dict[str, Any]]]) -> None:
                chunks = b"".join(
                    f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(chunks)))
                self.end_headers()
                self.wfile.write(chunks)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


# --------------------------------------------------------------------- Anthropic


def _usage() -> dict[str, int]:
    return {"input_tokens": 100, "output_tokens": 20}


def anthropic_content(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    if reply.tool_call is not None:
        blocks.append(
            {
                "type": "tool_use",
                "id": f"toolu_{uuid.uuid4().hex[:20]}",
                "name": reply.tool_call.name,
                "input": reply.tool_call.arguments,
            }
        )
    return blocks


def anthropic_message(reply: Reply) -> dict[str, Any]:
    return {
        "id": f"msg_{uuid.uuid4().hex[:20]}",
        "type": "message",
        "role": "assistant",
        "model": "claude-scripted",
        "content": anthropic_content(reply),
        "stop_reason": "tool_use" if reply.tool_call else "end_turn",
        "stop_sequence": None,
        "usage": _usage(),
    }


def anthropic_events(reply: Reply) -> Iterator[tuple[str, dict[str, Any]]]:
    message = anthropic_message(reply)
    content = message.pop("content")
    yield "message_start", {"type": "message_start", "message": {**message, "content": []}}
    for index, block in enumerate(content):
        if block["type"] == "text":
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": block["text"]},
                },
            )
        else:
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {**block, "input": {}},
                },
            )
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(block["input"]),
                    },
                },
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 20},
        },
    )
    yield "message_stop", {"type": "message_stop"}


# --------------------------------------------------------------------- OpenAI Responses


def responses_events(reply: Reply) -> Iterator[tuple[str, dict[str, Any]]]:
    response_id = f"resp_{uuid.uuid4().hex[:20]}"
    items: list[dict[str, Any]] = []
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": f"msg_{uuid.uuid4().hex[:16]}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    if reply.tool_call is not None:
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{uuid.uuid4().hex[:16]}",
                "call_id": f"call_{uuid.uuid4().hex[:16]}",
                "name": reply.tool_call.name,
                **({"namespace": reply.tool_call.namespace} if reply.tool_call.namespace else {}),
                "arguments": json.dumps(reply.tool_call.arguments),
                "status": "completed",
            }
        )
    base = {"id": response_id, "object": "response", "model": "gpt-scripted"}
    yield (
        "response.created",
        {
            "type": "response.created",
            "response": {**base, "status": "in_progress", "output": []},
        },
    )
    for index, item in enumerate(items):
        yield (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": item,
            },
        )
        yield (
            "response.output_item.done",
            {
                "type": "response.output_item.done",
                "output_index": index,
                "item": item,
            },
        )
    yield (
        "response.completed",
        {
            "type": "response.completed",
            "response": {
                **base,
                "status": "completed",
                "output": items,
                "usage": {
                    "input_tokens": 100,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 20,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 120,
                },
            },
        },
    )
