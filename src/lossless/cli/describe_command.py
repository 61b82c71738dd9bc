"""What ``lcm describe`` does for a message, summary or large file, without click.

The click command (``cli/history.py``, which also answers ``job_…`` refs) and
the click-free start (``cli/fast_path.py``) both run ``run_describe`` with
``cli.lines.PrintedLines``. The stored text itself is printed exactly through
a pipe and made inert on a terminal (``cli.shown``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from lossless.errors import InputError

if TYPE_CHECKING:
    from lossless.cli.lines import Lines
    from lossless.engine import retrieval
    from lossless.engine.engine import Engine

DESCRIBE_WINDOW_CHARS = 4000


def run_describe(
    engine: Engine,
    ref: str,
    *,
    offset: int | None,
    chars: int | None,
    as_json: bool,
    out: Lines,
) -> None:
    from lossless.engine import retrieval

    found = engine.describe(ref)
    if offset is not None or chars is not None:
        found = _windowed(found, offset or 0, chars or DESCRIBE_WINDOW_CHARS)
    if as_json:
        out.emit(found)
        return
    if isinstance(found, retrieval.MessageDescription):
        m = found.message
        conv = found.conversation
        out.wrapped(
            f"message {m.id}  seq {m.seq}  {m.role}  {m.created_at}  {m.token_count} tokens"
        )
        if conv:
            out.wrapped(
                f"conversation {conv.id}  session {conv.session_id}  project {conv.project}"
            )
        if found.covering_summary_id:
            out.line(f"covered by {found.covering_summary_id}")
        kinds = ", ".join(
            f"{p.kind}" + (f"({p.tool_name})" if p.tool_name else "") for p in found.parts
        )
        out.wrapped(f"parts: {kinds or 'none'}   native records: {found.native_record_count}")
        out.line("")
        out.line(m.content)
    elif isinstance(found, retrieval.SummaryDescription):
        s = found.summary
        out.line(
            f"summary {s.id}  {s.kind} depth {s.depth}  {s.token_count} tokens  "
            f"{s.earliest_at} .. {s.latest_at}"
        )
        if found.source_summary_ids:
            out.wrapped(f"built from summaries: {' '.join(found.source_summary_ids)}")
        if found.source_message_ids:
            ids = found.source_message_ids
            out.line(f"built from {len(ids)} messages: {ids[0]}..{ids[-1]}")
        if found.condensed_into:
            out.line(f"condensed into {found.condensed_into}")
        out.line("")
        out.line(s.content)
    else:
        f = found.file
        out.wrapped(f"file {f.id}  {f.original_name or ''}  {f.media_type}  {f.byte_size} bytes")
        out.wrapped(f"stored at {f.path}")
        out.wrapped(f"summary: {f.exploration_summary}")
        out.line("")
        if found.error:
            raise InputError(found.error)
        out.line(found.content or "")


def _windowed(found: retrieval.Description, offset: int, chars: int) -> retrieval.Description:
    """``found`` with only ``chars`` characters of its content from ``offset`` on,
    and a line saying which part is shown and how to read on."""
    from lossless.engine import retrieval

    if isinstance(found, retrieval.MessageDescription):
        whole, ref = found.message.content, str(found.message.id)
    elif isinstance(found, retrieval.SummaryDescription):
        whole, ref = found.summary.content, found.summary.id
    else:
        if found.content is None:
            return found
        whole, ref = found.content, found.file.id
    if offset > len(whole):
        raise InputError(f"offset {offset} is past the end of {ref} ({len(whole)} characters)")
    end = min(len(whole), offset + chars)
    note = f"[characters {offset}..{end} of {len(whole)}"
    note += f"; next: lcm describe {ref} --offset {end}]" if end < len(whole) else "]"
    piece = f"{note}\n{whole[offset:end]}"
    if isinstance(found, retrieval.MessageDescription):
        return dataclasses.replace(found, message=dataclasses.replace(found.message, content=piece))
    if isinstance(found, retrieval.SummaryDescription):
        return dataclasses.replace(found, summary=dataclasses.replace(found.summary, content=piece))
    return dataclasses.replace(found, content=piece)
