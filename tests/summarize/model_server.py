"""A model on the wire that writes the reply a Python callable chooses for each prompt.

Built on ``tests/wire_server.py``: the requests go through the real SDKs and
providers, only the model is replaced, on the wire. Used where a test or a
benchmark needs a model that answers what it was asked with a chosen summary
(an injected one, say).

    with model_server(lambda prompt: "summary text") as server:
        build_summarizer("openai", base_url=openai_url(server), ...)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.wire_server import Received, Reply, WireServer, running_wire_server

MODEL = "scripted-model"
API_KEY = "sk-scripted-test-key"

Responder = Callable[[str], str]
"""The user prompt in (system prompt excluded), the model's text out."""


def user_prompt(body: dict[str, Any]) -> str:
    texts: list[str] = []
    for message in body.get("messages") or []:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(b.get("text", "") for b in content if isinstance(b, dict))
    return "\n".join(texts)


def anthropic_body(text: str) -> dict[str, Any]:
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": max(1, len(text) // 4)},
    }


def openai_body(text: str) -> dict[str, Any]:
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
        "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107},
    }


def base_url(server: WireServer, provider: str) -> str:
    """What the provider's SDK is pointed at (it appends its own path)."""
    root = f"http://127.0.0.1:{server.port}"
    return root if provider == "anthropic" else f"{root}/v1"


@contextmanager
def model_server(responder: Responder) -> Iterator[WireServer]:
    def answer(request: Received) -> Reply:
        text = responder(user_prompt(request.body))
        body = anthropic_body(text) if request.path == "/v1/messages" else openai_body(text)
        return Reply(200, body)

    with running_wire_server() as server:
        server.responder = answer
        yield server
