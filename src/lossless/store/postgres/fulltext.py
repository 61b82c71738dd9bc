"""Snippets for the PostgreSQL backend's full-text hits, shaped like SQLite's FTS5 ones.

Snippets are cut here rather than by ``ts_headline``, from the same notion
of a word the index uses (runs of letters and digits, case and accents
folded, CJK characters one by one), so the excerpt looks like SQLite's. The
index matches by stem and prefix (``lossless.store.lexical``); a word of
the text is highlighted when it begins with the query word's root, which
marks "parsers" and "parsing" for "parse" as FTS5's snippets do.
"""

from __future__ import annotations

import re

from lossless.store.lexical import INDEXED_CHARS, fold, has_cjk

SNIPPET_TOKENS = 16

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_CJK_CHAR = re.compile(r"[^\W_]")
# Endings cut from a query word before comparing it with the text's words.
_ENDINGS = ("ations", "ation", "ings", "ing", "ers", "er", "ies", "es", "ed", "s", "e", "y")


def root(word: str) -> str:
    """``word`` without one common English ending, keeping at least three letters."""
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def _tokens(text: str) -> list[tuple[int, int]]:
    """Word spans as the index sees them: a CJK run is one word per character."""
    spans: list[tuple[int, int]] = []
    for m in _TOKEN.finditer(text):
        if has_cjk(m.group(0)):
            spans.extend((m.start() + i, m.start() + i + 1) for i in range(len(m.group(0))))
        else:
            spans.append((m.start(), m.end()))
    return spans


def snippet(content: str, words: list[str], width: int = SNIPPET_TOKENS) -> str:
    """An excerpt of about ``width`` words around the densest run of matches, in brackets."""
    text = content[:INDEXED_CHARS]
    exact: set[str] = set()
    roots: list[str] = []
    for w in words:
        for t in _TOKEN.findall(w):
            if has_cjk(t):
                exact.update(_CJK_CHAR.findall(t))
            elif t.isascii() and t.isalpha():
                roots.append(root(fold(t)))
            else:
                exact.add(fold(t))
    starts = tuple(roots)
    tokens = _tokens(text)
    if not tokens:
        return text[:200]
    folded = [fold(text[s:e]) for s, e in tokens]
    hits = [t in exact or (bool(starts) and t.startswith(starts)) for t in folded]
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
        between = text[cursor:s]
        if hits[i] and i > start and hits[i - 1] and not between:
            # Side by side (CJK characters): one bracket, as FTS5 marks a phrase.
            pieces[-1] = pieces[-1][:-1] + text[s:e] + "]"
        else:
            pieces.append(between)
            pieces.append(f"[{text[s:e]}]" if hits[i] else text[s:e])
        cursor = e
    if end == len(tokens):
        pieces.append(text[cursor:])
    prefix = " … " if start > 0 else ""
    suffix = " … " if end < len(tokens) else ""
    return prefix + "".join(pieces) + suffix
