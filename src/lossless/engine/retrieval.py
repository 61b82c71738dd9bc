"""Find and recover anything: grep, describe and expand.

These are the engine functions behind ``lcm grep/describe/expand`` and the MCP
tools. Results are plain dataclasses with ids an agent can follow. Expansion
(paged, focusable) lives in ``engine/expansion.py`` and grep in
``engine/grep.py`` (``lcm grep`` loads only that one); both are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lossless.engine.expansion import ExpandedNode, Expansion, expand
from lossless.engine.grep import grep
from lossless.errors import InputError, NotFoundError
from lossless.models import (
    Conversation,
    LargeFile,
    Message,
    Part,
    Summary,
)
from lossless.store.contract import Repositories

__all__ = [
    "Description",
    "ExpandedNode",
    "Expansion",
    "FileDescription",
    "MessageDescription",
    "SummaryDescription",
    "describe",
    "expand",
    "grep",
    "parse_message_id",
]


@dataclass(frozen=True, slots=True)
class MessageDescription:
    """``describe`` of a message: it, its parts, its conversation and what covers it."""

    kind: Literal["message"]
    message: Message
    parts: list[Part]
    conversation: Conversation | None
    covering_summary_id: str | None
    native_record_count: int


@dataclass(frozen=True, slots=True)
class SummaryDescription:
    """``describe`` of a summary: it, what it was built from and what it was condensed into."""

    kind: Literal["summary"]
    summary: Summary
    source_message_ids: list[int]
    source_summary_ids: list[str]
    condensed_into: str | None
    conversation: Conversation | None


@dataclass(frozen=True, slots=True)
class FileDescription:
    """``describe`` of a large file: its record and its text (or why it cannot be read)."""

    kind: Literal["file"]
    file: LargeFile
    content: str | None
    error: str | None = None


Description = MessageDescription | SummaryDescription | FileDescription


def parse_message_id(ref: str) -> int | None:
    text = ref.strip()
    if text.startswith("msg_"):
        text = text[4:]
    # Beyond SQLite's 64-bit integers no message can have the id.
    return int(text) if text.isdigit() and len(text) <= 18 else None


def describe(repos: Repositories, ref: str, *, include_file_content: bool = True) -> Description:
    """Metadata and content of a message (``123`` or ``msg_123``), summary or large file."""
    ref = ref.strip()
    if ref.startswith("sum_"):
        summary = repos.summaries.get(ref)
        if summary is None:
            raise NotFoundError(f"no summary {ref}")
        return SummaryDescription(
            kind="summary",
            summary=summary,
            source_message_ids=repos.summaries.source_message_ids(ref),
            source_summary_ids=repos.summaries.source_summary_ids(ref),
            condensed_into=repos.summaries.condensed_into(ref),
            conversation=repos.conversations.get(summary.conversation_id),
        )
    if ref.startswith("file_"):
        large = repos.files.get(ref)
        if large is None:
            raise NotFoundError(f"no large file {ref}")
        content: str | None = None
        error: str | None = None
        if include_file_content:
            try:
                content = Path(large.path).read_text("utf-8", errors="replace")
            except OSError as exc:
                error = f"content file {large.path} cannot be read: {exc.strerror or exc}"
        return FileDescription(kind="file", file=large, content=content, error=error)
    message_id = parse_message_id(ref)
    if message_id is None and ref.removeprefix("msg_").isdigit():
        raise NotFoundError(f"no message {ref}")
    if message_id is None:
        raise InputError(
            f"{ref!r} is not an id: use a message id (123 or msg_123), a summary id "
            "(sum_...) or a file id (file_...)"
        )
    message = repos.messages.get(message_id)
    if message is None:
        raise NotFoundError(f"no message {message_id}")
    return MessageDescription(
        kind="message",
        message=message,
        parts=repos.messages.parts([message_id])[message_id],
        conversation=repos.conversations.get(message.conversation_id),
        covering_summary_id=repos.summaries.covering([message_id]).get(message_id),
        native_record_count=len(
            repos.messages.native_records(message.conversation_id, message_id=message_id)
        ),
    )
