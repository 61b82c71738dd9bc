"""Long texts become several chunks, each within the model's input window.

A chunk ends at a paragraph, line or sentence break when one falls in its
last quarter, so a chunk rarely starts mid-thought. Messages keep at most
``MESSAGE_CHUNKS`` chunks of their own words, and of the tool calls and
tool output in them only the chunk where those start (``prose_end``): a
tool output of a megabyte is not worth a thousand vectors, its start says
what it is, and full-text search still finds every word of the rest.
Measured on the real transcripts (docs/benchmarks.md, "Embedding
throughput (third session)"): tool calls and output are 96 % of the tokens
a message holds, and their later chunks 43 %. Large files, whose content
is the point, keep up to ``FILE_CHUNKS``.
"""

from __future__ import annotations

MESSAGE_CHUNKS = 4
FILE_CHUNKS = 64
_BREAKS = ("\n\n", "\n", ". ", " ")
# How ``sources.parts.render_part`` starts a tool part in a message's content
# (parts are joined by blank lines).
_TOOL_MARKS = ("[tool_use ", "[tool_result]")


def prose_end(content: str) -> int:
    """Where a message's first tool part starts (its length if it has none)."""
    end = len(content)
    for mark in _TOOL_MARKS:
        if content.startswith(mark):
            return 0
        found = content.find("\n\n" + mark)
        if found != -1 and found < end:
            end = found
    return end


def chunk_text(
    text: str, max_chars: int, max_chunks: int, *, until: int | None = None
) -> list[str]:
    """``text`` cut into at most ``max_chunks`` pieces of at most ``max_chars``; [] if blank.

    With ``until``, no piece but the first starts at or after that offset
    (so a text that is not blank always gives at least one).
    """
    if max_chars <= 0 or max_chunks <= 0:
        raise ValueError("max_chars and max_chunks must be positive")
    chunks: list[str] = []
    start = 0
    while start < len(text) and len(chunks) < max_chunks:
        if until is not None and chunks and start >= until:
            break
        end = min(len(text), start + max_chars)
        if end < len(text):
            floor = start + (max_chars * 3) // 4
            for mark in _BREAKS:
                cut = text.rfind(mark, floor, end)
                if cut != -1:
                    end = cut + len(mark)
                    break
        piece = text[start:end].strip()
        if piece:
            chunks.append(piece)
        start = end
    return chunks
