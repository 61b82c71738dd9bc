"""What a full-text query means, on every backend: words, stems, CJK, exact matches first.

Both backends index stems (SQLite: FTS5 ``porter unicode61``; PostgreSQL:
the Snowball English stemmer without a stop list), so "migrations" finds
"migration". In the any-word pass a query word of four letters or more
also matches any stem it begins: "parse" (stem ``pars``) finds "parsers"
(stem ``parser``), which no stemmer conflates with it. A word matched only through its stem or a prefix
ranks below the word as typed: the candidates' ranks are multiplied by
``1 + EXACT_WEIGHT * share`` (``exact_share``: the part of the query's
words a text holds as typed), measured on LoCoMo (docs/benchmarks.md).

Chinese, Japanese and Korean are written without spaces between words, so a
word index would hold a whole run of them as one token and find none of the
words inside it. ``index_text`` puts an invisible separator (U+200B) around
every CJK character before indexing, and a query word is split the same way,
so "静默" is searched as the phrase "静 默": found wherever those characters
stand side by side. PostgreSQL does the same in SQL (``lcm.search_text``,
with the same ranges as ``CJK_RANGES``).

A query never fails for its punctuation or for FTS syntax in it: each word is
a quoted phrase of letters and digits (``words`` keeps only those), so
``"``, ``*``, ``NEAR``, ``-`` or ``:`` are plain text.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lossless.errors import InputError
from lossless.store.stopwords import content_words

# Han (with extensions and compatibility ideographs), kana, Hangul, CJK
# symbols' letters. Written once; PostgreSQL's migration repeats the ranges.
CJK_RANGES = (
    ("\u1100", "\u11ff"),  # Hangul Jamo
    ("\u3040", "\u30ff"),  # Hiragana, Katakana
    ("\u3130", "\u318f"),  # Hangul compatibility Jamo
    ("\u31f0", "\u31ff"),  # Katakana phonetic extensions
    ("\u3400", "\u4dbf"),  # CJK extension A
    ("\u4e00", "\u9fff"),  # CJK unified ideographs
    ("\uac00", "\ud7af"),  # Hangul syllables
    ("\uf900", "\ufaff"),  # CJK compatibility ideographs
    ("\uff66", "\uff9f"),  # half-width Katakana
    ("\U00020000", "\U0003134f"),  # CJK extensions B-G
)
_CJK = re.compile("[" + "".join(f"{a}-{b}" for a, b in CJK_RANGES) + "]")
SEPARATOR = "\u200b"

# A word this long (letters only) also matches the stems it begins.
PREFIX_MIN_CHARS = 4
# How much an exact match of every query word improves a rank (ranks are
# negative, best lowest): 0 would rank by stems alone.
EXACT_WEIGHT = 0.5
# Candidates ranked per page row at first; the window grows by this factor
# until the page is provably the best (``best_page``).
OVERFETCH = 4
# More words than anyone types; bounds the size of the generated query.
MAX_WORDS = 64
# Only this much of a candidate is read for exactness and its snippet:
# candidates are read for every page, and a long tool output read whole
# cost more than ranking it.
READ_CHARS = 8_000

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_LETTERS = re.compile(r"[a-z]+")


def has_cjk(text: str) -> bool:
    # Every CJK range is above U+1100: an ASCII text (most of them) holds none,
    # known without the regex's scan (~3 us for a 550-character message).
    return not text.isascii() and _CJK.search(text) is not None


def index_text(text: str) -> str:
    """``text`` as the word index reads it: every CJK character a word of its own."""
    if not has_cjk(text):
        return text
    return _CJK.sub(lambda m: f"{SEPARATOR}{m.group(0)}{SEPARATOR}", text)


def shown_text(text: str) -> str:
    """An excerpt of ``index_text`` output as the user wrote it."""
    return text.replace(SEPARATOR, "")


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a query, folded: ``prefix`` when it also matches the stems it begins,
    ``stemmed`` when the index may match it by stem (plain ASCII letters)."""

    text: str
    prefix: bool
    stemmed: bool
    typed: str
    """The word as the pattern spells it: what a backend's query is built from.
    Each index folds case and accents by its own rules (FTS5's unicode61
    keeps й, ё, ß and Greek accents, which ``fold`` takes off), so only the
    index may fold a query word: ``text`` is for comparing in Python."""


def words(pattern: str) -> list[Word]:
    """The distinct words of a full-text pattern; ``InputError`` if it has none.

    Words are runs of letters and digits (as the index tokenizes); a CJK run
    counts as one word, searched as the phrase of its characters. Stop words
    are left out when the pattern has other words (``stopwords``).
    """
    typed: dict[str, str] = {}
    for token in _WORD.findall(pattern):
        typed.setdefault(fold(token), token)
    if not typed:
        raise InputError(f"full-text pattern {pattern!r} has no searchable words")
    kept = content_words(list(typed))[:MAX_WORDS]
    letters = [_LETTERS.fullmatch(w) is not None for w in kept]
    return [
        Word(w, prefix=plain and len(w) >= PREFIX_MIN_CHARS, stemmed=plain, typed=typed[w])
        for w, plain in zip(kept, letters, strict=True)
    ]


def fts5_match(query: Sequence[Word], *, every: bool) -> str:
    """An FTS5 MATCH expression: each word a quoted phrase, AND-ed or OR-ed.

    Prefixes only in the any-word (OR) query: the every-word pass is the hot
    path, and merging every stem a prefix begins doubled its cost; a row
    holding a word only through a prefix is found by the any-word pass,
    which runs when the every-word pass leaves the page short.
    """
    if every:
        return " AND ".join(f'"{index_text(w.typed)}"' for w in query)
    return " OR ".join(f'"{index_text(w.typed)}"' + ("*" if w.prefix else "") for w in query)


def fold(token: str) -> str:
    """Case- and accent-folded form of a token, as the index stores it."""
    if token.isascii():
        # Most tokens; casefold and lower agree on ASCII, which has no accents.
        return token.lower()
    return _fold_unicode(token)


@functools.lru_cache(maxsize=4096)
def _fold_unicode(token: str) -> str:
    # Accents come off a decomposed letter; composing again keeps Hangul
    # syllables (which decompose into jamo) as the index holds them.
    decomposed = unicodedata.normalize("NFD", token.casefold())
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", bare)


def exact_share(content: str, query: Sequence[Word]) -> float:
    """The share of the query's words that ``content`` holds as typed, not only by stem.

    Words the index cannot stem (digits, CJK, accented letters) match only
    as typed, so they always count. The first ``READ_CHARS`` of the text
    decide.
    """
    if not query:
        return 0.0
    stemmed = [w.text for w in query if w.stemmed]
    exact = len(query) - len(stemmed)
    if stemmed:
        text = content[:READ_CHARS].lower()
        # ``in`` first: most candidates lack most words, and a miss then costs
        # no call (200 candidates a window: 0.58 -> 0.26 ms for a 3-word query).
        for t in stemmed:
            if t in text and _holds_word(text, t):
                exact += 1
    return exact / len(query)


def _holds_word(text: str, word: str) -> bool:
    """Whether ``word`` stands in ``text`` as a whole word (neither side a letter or digit)."""
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or not text[at - 1].isalnum()) and (
            end == len(text) or not text[end].isalnum()
        ):
            return True
        at = text.find(word, at + 1)
    return False


def boosted(rank: float, share: float) -> float:
    """A (negative, best lowest) rank improved for the words matched as typed."""
    return rank * (1.0 + EXACT_WEIGHT * share)


def best_possible(rank: float) -> float:
    """The best boosted rank a row ranked ``rank`` by the index alone can reach."""
    return rank * (1.0 + EXACT_WEIGHT)


def best_page(
    fetch: Callable[[int], list[dict[str, Any]]],
    query: Sequence[Word],
    limit: int,
    time_key: str,
    *,
    max_window: int,
) -> list[dict[str, Any]]:
    """The best ``limit`` rows, exact words first, from candidates in the index's order.

    ``fetch(n)`` returns the ``n`` best rows by the index's (stemmed) rank,
    best first, each with ``id``, ``rank``, ``content`` and ``time_key``, and
    ``index_rank`` where ``rank`` is not the one the rows are in order of (a
    sub-agent's weight applied after the index ordered them: the last row's
    weighted rank would not bound the rows after it);
    each row's rank is then improved for the words it holds as typed
    (``boosted``). Ties go to the newest row, then the highest id. The page
    is exact once its last row ranks strictly better than any row left out
    could after that improvement; until then the window grows, up to
    ``max_window`` rows, beyond which exactness is judged among those (a row
    that far down the stemmed ranking is not lifted to the page).
    """
    window = min(limit * OVERFETCH, max_window)
    while True:
        fetched = fetch(window)
        page = [
            {**r, "rank": boosted(r["rank"], exact_share(r["content"], query))} for r in fetched
        ]
        # Stable sorts, least significant key first: id, time, then rank.
        page.sort(key=lambda r: r["id"], reverse=True)
        page.sort(key=lambda r: r[time_key] or "", reverse=True)
        page.sort(key=lambda r: r["rank"])
        page = page[:limit]
        if len(fetched) < window or window >= max_window:
            return page
        last = fetched[-1]
        if len(page) == limit and page[-1]["rank"] < best_possible(
            last.get("index_rank", last["rank"])
        ):
            return page
        window = min(window * OVERFETCH, max_window)
