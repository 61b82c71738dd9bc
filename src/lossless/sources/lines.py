"""Reading transcript files line by line, the way every parser does.

``scan_lines`` turns a file into decoded lines or ``ParseProblem``s, with the
pending-tail rule (an incomplete last line that is not JSON yet is left for
the next parse) and over-long line handling; the small helpers beside it
build the records, keys and progress every parser reports the same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lossless.models import NewNativeRecord
from lossless.sources import base
from lossless.sources.base import (
    LineError,
    ParseProblem,
    ParseProgress,
    RawLine,
    decode_json_line,
    iter_lines,
)

# Bytes of an over-long line kept in its ParseProblem; the rest is unusable anyway.
PROBLEM_SAMPLE_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ScannedLine:
    """One line of a transcript: either decoded (``data``/``text``) or a ``problem``."""

    raw: RawLine
    end_offset: int
    sha256: str
    data: dict[str, Any] | None = None
    text: str | None = None
    problem: ParseProblem | None = None

    @property
    def line_key(self) -> str:
        # Same value as base.line_key(line_no, data), but also right for over-long
        # lines whose ``raw.data`` is only a sample.
        return f"L{self.raw.line_no}:{self.sha256[:16]}"


def check_readable(path: Path) -> None:
    """Open and close ``path`` so an unreadable file fails at ``parse()`` time.

    The OSError (PermissionError, FileNotFoundError, IsADirectoryError) names the
    file; raising it up front keeps it out of the event stream, where the caller
    would otherwise have to tell an I/O failure from a bad line.
    """
    with path.open("rb"):
        pass


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return True


def scan_lines(
    path: Path,
    start_offset: int = 0,
    start_line: int = 0,
    progress: ParseProgress | None = None,
) -> Iterator[ScannedLine]:
    """Yield every line from ``start_offset`` decoded, or with its ParseProblem.

    Stops before an incomplete trailing line that is not valid JSON (the writer
    is still busy) and sets ``progress.pending_tail``. A line longer than
    ``base.MAX_LINE_BYTES`` arrives from ``iter_lines`` in several chunks; it is
    reassembled into one problem (with a sample of its bytes) so later line
    numbers stay right.
    """
    source = str(path)
    if start_offset > 0:
        with path.open("rb") as fh:
            fh.seek(start_offset - 1)
            around = fh.read(2)
        if around[:1] != b"\n" and around[1:] == b"\n":
            # The last read consumed a JSON line whose newline had not been
            # written yet; that newline ends the old line, it is not a blank one.
            start_offset += 1
            if progress is not None:
                progress.end_offset = start_offset
    lines = iter_lines(path, start_offset, start_line)
    shift = 0  # extra chunks of over-long lines seen so far
    current = next(lines, None)
    while current is not None:
        following = next(lines, None)
        line_no = current.line_no - shift
        if not current.complete and following is not None:
            digest = hashlib.sha256(current.data)
            total = len(current.data)
            chunk = following
            while True:
                shift += 1
                digest.update(chunk.data)
                total += len(chunk.data)
                after = next(lines, None)
                if chunk.complete or after is None:
                    break
                chunk = after
            following = after
            if not chunk.complete:
                # Unterminated at EOF: still being written, like any pending tail.
                if progress is not None:
                    progress.pending_tail = True
                return
            sample = current.data[:PROBLEM_SAMPLE_BYTES]
            raw = RawLine(line_no, current.byte_offset, sample, True)
            problem = ParseProblem(
                source,
                line_no,
                current.byte_offset,
                f"line is {total} bytes, longer than the {base.MAX_LINE_BYTES}-byte limit;"
                f" the first {len(sample)} bytes are kept",
                sample,
            )
            end = current.byte_offset + total + 1
            yield ScannedLine(raw, end, digest.hexdigest(), problem=problem)
            current = following
            continue
        raw = (
            current
            if shift == 0
            else RawLine(line_no, current.byte_offset, current.data, current.complete)
        )
        end = raw.byte_offset + len(raw.data) + (1 if raw.complete else 0)
        digest_hex = hashlib.sha256(raw.data).hexdigest()
        try:
            data = decode_json_line(raw)
        except LineError as exc:
            if not raw.complete and not _is_json(raw.data):
                if progress is not None:
                    progress.pending_tail = True
                return
            problem = ParseProblem(source, raw.line_no, raw.byte_offset, str(exc), raw.data)
            yield ScannedLine(raw, end, digest_hex, problem=problem)
        else:
            yield ScannedLine(raw, end, digest_hex, data=data, text=raw.data.decode("utf-8"))
        current = following


def line_before(path: Path, offset: int, limit: int = 16 * 1024 * 1024) -> bytes | None:
    """The complete line ending just before ``offset`` (without its newline).

    Used on resume to recover the anchor and any one-line context; None at the
    start of the file or when the line is longer than ``limit``.
    """
    if offset <= 0:
        return None
    with path.open("rb") as fh:
        fh.seek(offset - 1)
        # A line consumed before its newline was written ends right at offset.
        end = pos = offset - 1 if fh.read(1) == b"\n" else offset
        chunks: list[bytes] = []
        while pos > 0:
            step = min(64 * 1024, pos)
            pos -= step
            fh.seek(pos)
            chunk = fh.read(step)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                chunks.append(chunk[newline + 1 :])
                break
            chunks.append(chunk)
            if end - pos > limit:
                return None
        return b"".join(reversed(chunks))


def start_progress(
    path: Path, start_offset: int, start_line: int, key_of: Callable[[RawLine], str]
) -> tuple[ParseProgress, bytes | None]:
    """Progress for a parse starting at ``start_offset``, and the line before it.

    When resuming, ``last_key``/``last_sha256`` already describe the line just
    before the start, so a parse that finds nothing new still reports the
    cursor's anchor instead of None.
    """
    progress = ParseProgress(end_offset=start_offset, end_line=start_line)
    before = line_before(path, start_offset)
    if before is not None:
        progress.last_key = key_of(RawLine(start_line, 0, before, True))
        progress.last_sha256 = hashlib.sha256(before).hexdigest()
    return progress, before


def head_records(path: Path, limit: int = 64) -> Iterator[dict[str, Any]]:
    """The decoded objects among the first ``limit`` lines (for session metadata)."""
    for count, line in enumerate(scan_lines(path), start=1):
        if line.data is not None:
            yield line.data
        if count >= limit:
            return


def mark_consumed(progress: ParseProgress, line: ScannedLine, key: str) -> None:
    """Advance ``progress`` to include ``line`` (whose native key is ``key``)."""
    progress.end_offset = line.end_offset
    progress.end_line = line.raw.line_no
    progress.last_key = key
    progress.last_sha256 = line.sha256


def native_record(
    line: ScannedLine, key: str, record_type: object, source_path: str
) -> NewNativeRecord:
    assert line.text is not None
    return NewNativeRecord(
        native_key=key,
        record_type=record_type if isinstance(record_type, str) and record_type else "unknown",
        raw=line.text,
        source_path=source_path,
        line_no=line.raw.line_no,
        byte_offset=line.raw.byte_offset,
    )


def str_field(data: dict[str, Any], key: str, coerced: list[str], name: str = "") -> str | None:
    """``data[key]`` when it is a string; None when absent/null; otherwise None and
    the field name appended to ``coerced`` so the message says what was ignored."""
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    coerced.append(f"{name or key}: expected a string, got {type(value).__name__}")
    return None
