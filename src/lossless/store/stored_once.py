"""Text stored once: parts and raw lines that repeat their message's text refer to it.

A message's content, its parts and its raw transcript line often hold the same
bytes: a plain message's only part is its content, a tool result's part is a
piece of the content ``render_content`` built, and the raw JSONL line carries
the content and every part text again, JSON-escaped (a Claude Code tool
result twice: ``content`` and ``toolUseResult``). Stored as they are, the
generated 100,000-message set took 5x its input.

So both backends store:

* a part whose text occurs in its message's content as the offset and length
  of that occurrence (``text_start``, ``text_len``; ``text`` is then NULL),
  read back with ``substr``;
* a raw line that holds the content or a part text as a JSON string body as a
  template: each such occurrence replaced by a marker naming the text and its
  escaping (``raw_template`` set), rebuilt on reading from the stored texts.

Both are byte-exact by construction: a template is only kept if rebuilding it
gives the original line back, and an offset only if the content holds the text
there. A rewrite of a message (redaction) stores its parts and lines verbatim
again first (``materialize``), since the references would point into the
old text. Content hashes are always of the full texts (``lossless.store.hashing``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Final

__all__ = [
    "MIN_SHARED_CHARS",
    "expand_raw",
    "part_offset",
    "template_raw",
]

#: Texts shorter than this are stored as they are: a reference would save
#: nothing, and short texts (ids, "ok") occur by chance.
MIN_SHARED_CHARS: Final = 32

# A marker: \x01, "c" (content) or "p<ordinal>" (a part's text), \x01. Lower
# case: the text escaped as json.dumps(ensure_ascii=False) writes it (Claude
# Code, Codex and Python writers); upper case: with ensure_ascii=True. An
# escaped text never holds a raw control character, and a line that holds
# \x01 itself is never templated, so markers cannot be confused with text.
_MARK: Final = "\x01"
_MARKER: Final = re.compile("\x01([cCpP])([0-9]*)\x01")


def part_offset(content: str, text: str | None) -> int | None:
    """Where ``text`` occurs in ``content``, if it is worth storing as a reference."""
    if text is None or len(text) < MIN_SHARED_CHARS:
        return None
    start = content.find(text)
    return start if start >= 0 else None


def _escaped(text: str, ascii_only: bool) -> str:
    """``text`` as the body of a JSON string, as ``json.dumps`` writes it (the
    encoders ``json.dumps`` itself calls, without its per-call set-up)."""
    # The ASCII encoder is ~40% faster, and writes an ASCII text as the other
    # one does except for DEL (which it escapes): the common case takes it.
    fast = ascii_only or (text.isascii() and "\x7f" not in text)
    return (encode_basestring_ascii if fast else encode_basestring)(text)[1:-1]


def template_raw(raw: str, content: str, part_texts: Sequence[str | None]) -> str | None:
    """``raw`` with the content and part texts it repeats replaced by markers.

    None when nothing is repeated (store ``raw`` as it is) or when the
    template would not rebuild ``raw`` exactly.
    """
    if _MARK in raw:
        return None
    candidates = [("c", content)] + [
        (f"p{i}", t) for i, t in enumerate(part_texts) if t is not None
    ]
    # Longest first: a part text inside the content is then already covered.
    candidates.sort(key=lambda c: -len(c[1]))
    template = raw
    seen: set[str] = set()
    used: list[tuple[str, str]] = []  # (marker, the escaped text it stands for)
    for key, text in candidates:
        if len(text) < MIN_SHARED_CHARS or text in seen:
            continue
        seen.add(text)
        for tag, ascii_only in ((key, False), (key.upper(), True)):
            escaped = _escaped(text, ascii_only)
            marker = f"{_MARK}{tag}{_MARK}"
            # str.replace gives back the very same string when there is
            # nothing to replace: no separate search for the text first.
            replaced = template.replace(escaped, marker)
            if replaced is not template:
                template = replaced
                used.append((marker, escaped))
            if text.isascii():
                break  # both escapings are the same
    if template is raw or _rebuilt(template, used) != raw:
        return None
    return template


def _rebuilt(template: str, used: Sequence[tuple[str, str]]) -> str:
    """``template`` with each marker put back as the text it replaced: what
    ``expand_raw`` reads, without its per-marker parsing and re-escaping.

    The check that a template is kept only when it rebuilds its line: markers
    hold \x01, which neither the line nor an escaped text holds, so putting
    them back in any order cannot touch anything else.
    """
    for marker, escaped in used:
        template = template.replace(marker, escaped)
    return template


def expand_raw(template: str, content: str, part_texts: Sequence[str | None]) -> str:
    """The raw line ``template_raw`` made ``template`` from."""

    def text_of(m: re.Match[str]) -> str:
        kind = m[1]
        text = content if kind in "cC" else part_texts[int(m[2])]
        if text is None:  # pragma: no cover - template_raw only refers to texts
            raise ValueError("raw template refers to a part without text")
        return _escaped(text, kind.isupper())

    return _MARKER.sub(text_of, template)
