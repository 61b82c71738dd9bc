"""Long texts become several chunks, each within the model's input window.

A chunk ends at a paragraph, line or sentence break when one falls in its
last quarter, so a chunk rarely starts mid-thought. Messages keep at most
``MESSAGE_CHUNKS`` chunks (a tool output of a megabyte is not worth a
thousand vectors: its start says what it is); large files, whose content is
the point, keep up to ``FILE_CHUNKS``.
"""

from __future__ import annotations

MESSAGE_CHUNKS = 4
FILE_CHUNKS = 64
_BREAKS = ("\n\n", "\n", ". ", " ")


def chunk_text(text: str, max_chars: int, max_chunks: int) -> list[str]:
    """``text`` cut into at most ``max_chunks`` pieces of at most ``max_chars``; [] if blank."""
    if max_chars <= 0 or max_chunks <= 0:
        raise ValueError("max_chars and max_chunks must be positive")
    chunks: list[str] = []
    start = 0
    while start < len(text) and len(chunks) < max_chunks:
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
