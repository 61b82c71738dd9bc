"""Builders shared by the compaction, assembly and invariant tests.

Conversations are written straight through the storage contract (no importer),
in the shapes real transcripts have: a user prompt, assistant turns with text
and tool_use parts, role ``tool`` messages carrying the matching tool_result
parts, and a final assistant answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lossless.config import Config, load_config
from lossless.models import Message, NewMessage, NewPart
from lossless.sources import render_content
from lossless.store.contract import Store
from lossless.store.sqlite.store import SQLiteStore
from lossless.summarize import SummaryRequest, SummaryResponse

WORDS = [
    "migration",
    "schema",
    "index",
    "query",
    "cache",
    "worker",
    "deploy",
    "config",
    "parser",
    "token",
    "budget",
    "summary",
    "context",
    "retry",
    "timeout",
    "lease",
    "fence",
    "commit",
    "branch",
    "module",
    "function",
    "error",
]


def make_config(home: Path, **overrides: Any) -> Config:
    return load_config(home, env={}, overrides=overrides)


def open_store(config: Config) -> Store:
    return SQLiteStore(config.db_path)


def text_message(role: str, text: str, at: str, key: str | None = None) -> NewMessage:
    parts = (NewPart("text", text=text),)
    return NewMessage(role=role, content=text, parts=parts, created_at=at, ingest_key=key)  # type: ignore[arg-type]


def tool_use_message(
    text: str, calls: Sequence[tuple[str, str, dict[str, Any]]], at: str
) -> NewMessage:
    parts = [NewPart("text", text=text)] if text else []
    parts += [
        NewPart("tool_use", text=json.dumps(args), tool_name=name, tool_call_id=call_id)
        for call_id, name, args in calls
    ]
    return NewMessage(
        role="assistant", content=render_content(parts), parts=tuple(parts), created_at=at
    )


def tool_result_message(
    results: Sequence[tuple[str, str]], at: str, *, is_error: bool = False
) -> NewMessage:
    parts = tuple(
        NewPart(
            "tool_result",
            text=output,
            tool_call_id=call_id,
            metadata={"is_error": True} if is_error else None,
        )
        for call_id, output in results
    )
    return NewMessage(role="tool", content=render_content(parts), parts=parts, created_at=at)


def ts(n: int) -> str:
    return f"2026-02-12T{10 + n // 3600:02d}:{(n // 60) % 60:02d}:{n % 60:02d}.000Z"


def prose(seed: int, words: int) -> str:
    return " ".join(
        WORDS[(seed * 7 + i * 3) % len(WORDS)] + ("." if i % 12 == 11 else "") for i in range(words)
    )


@dataclass
class Clock:
    n: int = 0

    def tick(self) -> str:
        self.n += 7
        return ts(self.n)


def agent_turn(
    clock: Clock, turn: int, tool_calls: int, *, words: int = 60, final: bool = True
) -> list[NewMessage]:
    """One user turn: prompt, tool_calls x (assistant tool_use, tool result), answer."""
    out = [
        text_message(
            "user",
            f"Turn {turn}: please look at src/app_{turn}.py. {prose(turn, words)}",
            clock.tick(),
        )
    ]
    for i in range(tool_calls):
        call_id = f"toolu_{turn:04d}_{i:02d}"
        out.append(
            tool_use_message(
                f"Checking step {i}.",
                [(call_id, "Bash", {"command": f"pytest tests/test_{turn}_{i}.py"})],
                clock.tick(),
            )
        )
        out.append(
            tool_result_message([(call_id, f"{i} passed; " + prose(turn + i, words))], clock.tick())
        )
    if final:
        out.append(
            text_message(
                "assistant", f"Done with turn {turn}. {prose(turn * 3, words)}", clock.tick()
            )
        )
    return out


def ingest(store: Store, conversation_id: int, messages: Iterable[NewMessage]) -> list[Message]:
    with store.transaction() as tx:
        appended = tx.messages.append(conversation_id, list(messages))
        tx.context.append_messages(conversation_id, appended.inserted)
    return appended.inserted


def new_conversation(store: Store, session: str = "s1") -> int:
    return store.conversations.get_or_create(project="p", session_id=session, client="api").id


def expand_items(store: Store, conversation_id: int) -> list[int]:
    """Message ids reached by expanding every context item recursively, in order."""
    out: list[int] = []

    def expand_summary(summary_id: str) -> None:
        parents = store.summaries.source_summary_ids(summary_id)
        if parents:
            for parent in parents:
                expand_summary(parent)
        else:
            out.extend(store.summaries.source_message_ids(summary_id))

    for item in store.context.list(conversation_id):
        if item.message_id is not None:
            out.append(item.message_id)
        else:
            assert item.summary_id is not None
            expand_summary(item.summary_id)
    return out


class CountingSummarizer:
    """A fast deterministic summarizer: the first few words of the input."""

    name = "counting"

    def __init__(self, words: int = 12) -> None:
        self.words = words
        self.calls: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.calls.append(request)
        text = " ".join(request.text.split()[: self.words])
        return SummaryResponse(
            text=f"depth {request.depth}: {text}", input_tokens=1, output_tokens=1
        )


# ----------------------------------------------------------------------- API shape checks


def check_anthropic(request: dict[str, Any]) -> None:
    """Assert ``request`` is a valid Anthropic Messages API payload (structure only)."""
    messages = request["messages"]
    assert isinstance(messages, list) and messages, "no messages"
    if "system" in request:
        assert isinstance(request["system"], str) and request["system"]
    assert messages[0]["role"] == "user", "must open with a user message"
    seen_uses: set[str] = set()
    for index, message in enumerate(messages):
        assert set(message) == {"role", "content"}, message.keys()
        assert message["role"] in ("user", "assistant")
        if index:
            assert message["role"] != messages[index - 1]["role"], "roles must alternate"
        blocks = message["content"]
        assert isinstance(blocks, list) and blocks, "empty content"
        results = [b for b in blocks if b["type"] == "tool_result"]
        if results:
            assert message["role"] == "user"
            assert blocks[: len(results)] == results, "tool_results must come first"
            previous = messages[index - 1]
            assert previous["role"] == "assistant"
            uses = {b["id"] for b in previous["content"] if b["type"] == "tool_use"}
            answered = [b["tool_use_id"] for b in results]
            assert len(answered) == len(set(answered)), "a tool_use answered twice"
            assert set(answered) == uses, (answered, uses)
        for block in blocks:
            assert not any(k.startswith("_") for k in block), block
            kind = block["type"]
            assert kind in ("text", "tool_use", "tool_result", "image"), kind
            if kind == "text":
                assert isinstance(block["text"], str) and block["text"].strip()
            elif kind == "tool_use":
                assert message["role"] == "assistant"
                assert block["id"] not in seen_uses, "duplicate tool_use id"
                seen_uses.add(block["id"])
                assert isinstance(block["input"], dict) and isinstance(block["name"], str)
                following = messages[index + 1] if index + 1 < len(messages) else None
                assert following is not None, "tool_use without a following message"
                assert block["id"] in {
                    b.get("tool_use_id") for b in following["content"] if b["type"] == "tool_result"
                }, "tool_use not answered by the next message"


def check_openai(messages: list[dict[str, Any]]) -> None:
    """Assert ``messages`` is a valid OpenAI Chat Completions message list (structure only)."""
    assert isinstance(messages, list) and messages
    pending: set[str] = set()
    started = False
    for message in messages:
        role = message["role"]
        assert role in ("system", "user", "assistant", "tool"), role
        if role == "system":
            assert not started, "system messages only at the start"
            assert isinstance(message["content"], str)
            continue
        started = True
        if role == "tool":
            assert message["tool_call_id"] in pending, "tool message without its call"
            pending.discard(message["tool_call_id"])
            assert isinstance(message["content"], str)
            continue
        assert not pending, f"calls left unanswered: {pending}"
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if calls:
                assert message["content"] is None or isinstance(message["content"], str)
            else:
                assert isinstance(message["content"], str)
            for call in calls:
                assert call["type"] == "function"
                json.loads(call["function"]["arguments"])
                pending.add(call["id"])
            assert len(pending) == len(calls), "duplicate tool_call ids"
        else:
            content = message["content"]
            assert isinstance(content, str | list)
            if isinstance(content, str):
                assert content.strip()
    assert not pending, f"calls left unanswered at the end: {pending}"
