"""Full-text queries and snippets for the PostgreSQL backend, shaped like SQLite's FTS5.

A user's words become an OR of per-word phrases (as ``full_text_query`` does
for FTS5): a question rarely shares every word with its answer, and ranking
still puts messages holding more of the words first. Snippets are cut here
rather than by ``ts_headline``, from the same notion of a word the index uses
(runs of letters and digits, case and accents folded), so the highlighted
words are the ones that matched and the excerpt looks like SQLite's.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from lossless.errors import InputError
from lossless.store.stopwords import content_words

SNIPPET_TOKENS = 16
# Mirrors lcm.search_document: only this much of a text is indexed.
INDEXED_CHARS = 100_000
# More words than anyone types; bounds the size of the generated query.
MAX_WORDS = 64

_WORD = re.compile(r"\w+", re.UNICODE)
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def query_words(pattern: str) -> list[str]:
    """The distinct words of a full-text pattern; ``InputError`` if there are none.

    Stop words are left out when the pattern has other words, as on SQLite
    (``lossless.store.stopwords``).
    """
    words = list(dict.fromkeys(_WORD.findall(pattern)))
    if not words:
        raise InputError(f"full-text pattern {pattern!r} has no searchable words")
    return content_words(words)[:MAX_WORDS]


def fold(token: str) -> str:
    """Case- and accent-folded form of a token, as the index stores it."""
    if token.isascii():
        # Most tokens; casefold and lower agree on ASCII, which has no accents.
        return token.lower()
    return _fold_unicode(token)


@functools.lru_cache(maxsize=4096)
def _fold_unicode(token: str) -> str:
    decomposed = unicodedata.normalize("NFKD", token.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def snippet(content: str, words: list[str], width: int = SNIPPET_TOKENS) -> str:
    """An excerpt of about ``width`` words around the densest run of matches, in brackets."""
    text = content[:INDEXED_CHARS]
    terms = {fold(t) for w in words for t in _TOKEN.findall(w)}
    tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
    if not tokens:
        return text[:200]
    hits = [fold(text[s:e]) in terms for s, e in tokens]
    start = 0
    if len(tokens) > width:
        best = count = sum(hits[:width])
        for i in range(1, len(tokens) - width + 1):
            count += hits[i + width - 1] - hits[i - 1]
            if count > best:
                best, start = count, i
    end = min(len(tokens), start + width)
    pieces: list[str] = []
    cursor = 0 if start == 0 else tokens[start][0]
    for i in range(start, end):
        s, e = tokens[i]
        pieces.append(text[cursor:s])
        pieces.append(f"[{text[s:e]}]" if hits[i] else text[s:e])
        cursor = e
    if end == len(tokens):
        pieces.append(text[cursor:])
    prefix = " … " if start > 0 else ""
    suffix = " … " if end < len(tokens) else ""
    return prefix + "".join(pieces) + suffix
