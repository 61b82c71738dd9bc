"""Excerpts of full-text hits, the same on every backend.

Cut in Python from the page's texts rather than by FTS5's ``snippet()`` or
PostgreSQL's ``ts_headline``: FTS5 re-tokenizes (and stems) each candidate's
whole text for its snippet, which cost more than ranking when computed for
every candidate, and one implementation gives both backends the same
excerpts. The index matches by stem and prefix (``lossless.store.lexical``);
a word of the text is marked when it begins with the query word's root, so
"parsers" and "parsing" are marked for "parse"; digits and CJK words are
marked as typed (a CJK word wherever its characters stand together).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from lossless.store.lexical import READ_CHARS, fold, has_cjk

# About sixteen words of English either side of the densest matches.
SNIPPET_CHARS = 120
# Matches looked at to find the densest stretch: enough for any page.
_MAX_MATCHES = 200

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# Endings cut from a query word before comparing it with the text's words.
_ENDINGS = ("ations", "ation", "ings", "ing", "ers", "er", "ies", "es", "ed", "s", "e", "y")


def root(word: str) -> str:
    """``word`` without one common English ending, keeping at least three letters."""
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


# A word starts at a letter or digit after anything else, an underscore
# included (snake_case is two words, as the index sees it). The pattern
# begins with the words themselves and the start is checked after a match
# (``_starts_word``): a leading ``\b`` or look-behind made ``re`` try every
# position of the text, 12x slower (3 ms for a page of 20 snippets).
@functools.lru_cache(maxsize=256)
def _matcher(words: tuple[str, ...]) -> re.Pattern[str] | None:
    pieces: list[str] = []
    for w in words:
        for t in _TOKEN.findall(w):
            t = fold(t)
            if has_cjk(t):
                pieces.append(re.escape(t))
            elif t.isascii() and t.isalpha():
                pieces.append(rf"{re.escape(root(t))}[^\W_]*")
            else:
                pieces.append(rf"{re.escape(t)}(?![^\W_])")
    if not pieces:
        return None
    pieces.sort(key=len, reverse=True)
    return re.compile("|".join(pieces))


def _starts_word(text: str, at: int) -> bool:
    """Whether a match at ``at`` starts a word (CJK characters always do)."""
    return at == 0 or not text[at - 1].isalnum() or has_cjk(text[at])


def snippet(content: str, words: Sequence[str], width: int = SNIPPET_CHARS) -> str:
    """An excerpt of about ``width`` characters around the densest matches, marked in brackets."""
    text = content[:READ_CHARS]
    matcher = _matcher(tuple(words))
    spans: list[tuple[int, int]] = []
    # Matched on a lower-cased copy: case-insensitive matching cost twice as
    # much. A text whose length lower() changes (rare letters) is matched as is.
    lowered = text.lower()
    if matcher is not None:
        searched = lowered if len(lowered) == len(text) else text
        found = matcher.search(searched)
        while found is not None and len(spans) < _MAX_MATCHES:
            if _starts_word(searched, found.start()):
                spans.append(found.span())
                found = matcher.search(searched, found.end())
            else:
                found = matcher.search(searched, found.start() + 1)
    if not spans:
        return text[:width] + (" … " if len(text) > width else "")
    # The match starting the stretch of ``width`` characters holding most matches.
    best, best_count, j = 0, 0, 0
    for i, (start, _) in enumerate(spans):
        j = max(j, i)
        while j + 1 < len(spans) and spans[j + 1][1] <= start + width:
            j += 1
        if j - i + 1 > best_count:
            best, best_count = i, j - i + 1
    first = spans[best][0]
    begin = max(0, first - width // 4)
    if begin > 0:
        # Start at a word boundary.
        space = text.rfind(" ", max(0, begin - 20), first)
        begin = space + 1 if space >= 0 else begin
    end = min(len(text), max(begin + width, spans[best + best_count - 1][1]))
    if end < len(text):
        space = text.find(" ", end, end + 20)
        end = space if space >= 0 else end
    pieces: list[str] = []
    cursor = begin
    for start, stop in spans:
        if start < begin or stop > end:
            continue
        pieces.append(text[cursor:start])
        pieces.append(f"[{text[start:stop]}]")
        cursor = stop
    pieces.append(text[cursor:end])
    return (" … " if begin > 0 else "") + "".join(pieces) + (" … " if end < len(text) else "")
