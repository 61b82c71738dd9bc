"""The contract every transcript parser follows.

A parser turns a client's native file into a stream of events and knows nothing
about storage. It reads the file as bytes, line by line (never the whole file in
memory), starting at an optional byte offset so an appended transcript is read
incrementally.

Events, in file order:
- ``SessionInfo``: who/where the transcript belongs to (emitted once, before the
  first message, as soon as it is known; may be emitted with partial data when a
  parse resumes mid-file).
- ``NewMessage``: one conversational message with its parts; its
  ``native_records`` are the lines it was built from.
- ``NewNativeRecord``: a line that is kept for provenance but is not a message
  (progress, snapshots, token counts...).
- ``ParseProblem``: a line that could not be used, with file, line and the raw
  bytes so it can be quarantined.

``ParseResult.end_offset``/``end_line`` say how far the parser consumed; an
incomplete trailing line (no newline, not valid JSON: a transcript still being
written) is *not* consumed and is not a problem, so the next read retries it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from lossless.models import NewMessage, NewNativeRecord

SourceKind = Literal["claude-code", "codex", "generic"]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    client: SourceKind
    session_id: str
    project: str | None = None
    parent_session_id: str | None = None
    agent_id: str | None = None
    started_at: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ParseProblem:
    source_path: str
    line_no: int
    byte_offset: int
    error: str
    raw: bytes

    def describe(self) -> str:
        return f"{self.source_path}:{self.line_no}: {self.error}"


ParseEvent = SessionInfo | NewMessage | NewNativeRecord | ParseProblem


@dataclass(slots=True)
class ParseProgress:
    """Mutable tally a parser updates as it goes (read it after iterating)."""

    end_offset: int = 0
    end_line: int = 0
    pending_tail: bool = False
    last_key: str | None = None
    last_sha256: str | None = None


@dataclass(frozen=True, slots=True)
class RawLine:
    line_no: int
    byte_offset: int
    data: bytes
    complete: bool


class Parser(Protocol):
    kind: SourceKind

    def parse(
        self, path: Path, *, start_offset: int = 0, start_line: int = 0, final: bool = True
    ) -> tuple[Iterator[ParseEvent], ParseProgress]:
        """Return the event stream and a progress object filled in while iterating.

        ``final=False`` means the file may still be growing: a trailing message
        that could still gain records is held back (not emitted, not consumed).
        """
        ...


MAX_LINE_BYTES = 64 * 1024 * 1024


def iter_lines(path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[RawLine]:
    """Yield the lines of ``path`` as bytes, with 1-based line numbers and offsets.

    Streams with a bounded buffer. ``complete`` is False only for a trailing
    line without its newline.
    """
    with path.open("rb") as fh:
        fh.seek(start_offset)
        offset = start_offset
        line_no = start_line
        while True:
            data = fh.readline(MAX_LINE_BYTES)
            if not data:
                return
            line_no += 1
            complete = data.endswith(b"\n")
            yield RawLine(line_no, offset, data[:-1] if complete else data, complete)
            offset += len(data)


def line_key(line_no: int, data: bytes) -> str:
    """Native key for a record without its own id: position plus content hash."""
    return f"L{line_no}:{hashlib.sha256(data).hexdigest()[:16]}"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class LineError(ValueError):
    """A line that cannot be used; the message names what is wrong with it."""


def decode_json_line(raw: RawLine) -> dict[str, Any]:
    """Decode one JSONL line into an object, or raise LineError saying why not."""
    if b"\x00" in raw.data:
        # JSON forbids raw NUL; escaped \u0000 inside strings is decoded and kept.
        raise LineError("line contains raw NUL bytes (binary data, not JSON)")
    try:
        text = raw.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LineError(f"line is not valid UTF-8 (byte {exc.start})") from None
    # A UTF-8 byte order mark (an editor's, at the start of the file) is not content.
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise LineError("blank line")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LineError(f"malformed JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise LineError("JSON nested too deeply to decode") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise LineError(f"JSON value cannot be decoded: {str(exc).split(';')[0]}") from None
    if not isinstance(value, dict):
        raise LineError(f"expected a JSON object, got {type(value).__name__}")
    return value
