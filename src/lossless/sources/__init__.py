"""Transcript sources: parsers for Claude Code, Codex CLI and generic message files.

This package's public face. What every parser shares lives in named modules,
so the three formats behave the same way:

- ``lines``: ``scan_lines`` (file -> decoded lines or ``ParseProblem``s, with the
  pending-tail rule and over-long line handling) and the record/progress helpers;
- ``parts``: ``block_to_part`` (one Anthropic / OpenAI / Codex content block ->
  ``NewPart``) and ``render_content``, the single rule that turns parts into a
  message's plain text;
- ``pairing``: ``tool_pairing``, tool calls against their results;
- ``kinds``: ``detect_kind`` and ``parser_for``.

What every parser guarantees (tested in tests/sources):

- ``parse()`` raises the OSError itself when the file cannot be opened; the
  event stream then never fails on I/O of the file's lines.
- Exactly one ``SessionInfo``, first, derived from the head of the file (so a
  resumed parse reports the same session); empty files fall back to the name.
- Every line becomes exactly one record (inside a message or standalone) or one
  ``ParseProblem``, or is the pending tail; nothing raises out of the iterator.
- While iterating, ``progress`` covers exactly the lines of the events yielded
  so far; on resume (``start_offset > 0``) ``last_key``/``last_sha256`` start
  as the anchor of the line before the offset.
- Parsing in pieces (``final=False`` while the file grows, then resuming at
  ``end_offset``/``end_line``) yields the same events as one parse.
"""

from __future__ import annotations

from lossless.sources.kinds import detect_kind, parser_for
from lossless.sources.lines import (
    ScannedLine,
    check_readable,
    head_records,
    line_before,
    mark_consumed,
    native_record,
    scan_lines,
    start_progress,
    str_field,
)
from lossless.sources.pairing import ToolPairing, tool_pairing
from lossless.sources.parts import block_to_part, flatten_tool_result, render_content, render_part

__all__ = [
    "ScannedLine",
    "ToolPairing",
    "block_to_part",
    "check_readable",
    "detect_kind",
    "flatten_tool_result",
    "head_records",
    "line_before",
    "mark_consumed",
    "native_record",
    "parser_for",
    "render_content",
    "render_part",
    "scan_lines",
    "start_progress",
    "str_field",
    "tool_pairing",
]
