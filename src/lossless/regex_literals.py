"""The literal strings any match of a regex must contain, to skip regexes that cannot match.

A text can only match ``ignore (all )?previous instructions`` if it contains
"ignore" and "previous" and "instruction". ``required_literals`` reads that
off the parsed pattern: a list of sets, each set holding strings of which at
least one occurs in every match (consecutive literal characters, the
alternatives of a group, the body of a repetition taken at least once). A
regex whose sets do not all meet the literals found in a text cannot match it,
so it need not be run; finding the literals of many regexes at once is one
Aho-Corasick pass (``LiteralGate``). The test is exact: it only skips what
could never match, and anything it cannot reason about (case-insensitive
parts, classes, lookarounds, backreferences) simply adds no requirement.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

__all__ = ["LiteralGate", "required_literals"]

# A class of at most this many literal characters counts as alternatives.
_SMALL_CLASS = 4
# Two-letter words too frequent to tell texts apart.
_COMMON = frozenset(
    [
        "to",
        "at",
        "is",
        "in",
        "on",
        "of",
        "or",
        "an",
        "as",
        "by",
        "be",
        "it",
        "if",
        "we",
        "he",
        "me",
        "my",
        "no",
        "so",
        "up",
        "us",
        "do",
        "go",
        "am",
        "and",
        "the",
        "for",
        "you",
        "are",
        "all",
        "any",
    ]
)

Requirement = list[frozenset[str]]


def required_literals(pattern: str, flags: int = 0) -> Requirement:
    """Sets of strings such that every match contains one string of each set.

    Empty when nothing can be said (the regex is then always run).
    """
    # re._parser is CPython's own regex parser (sre_parse before 3.11).
    try:
        from re import _constants, _parser  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - another interpreter
        return []
    try:
        parsed = _parser.parse(pattern, flags)
    except re.error:
        return []
    if parsed.state.flags & re.IGNORECASE:
        return []
    return [r for r in _sequence(list(parsed), _constants) if r]


def _sequence(items: Sequence[tuple[Any, Any]], c: Any) -> Requirement:
    """Requirements of a concatenation: those of each item that must occur."""
    out: Requirement = []
    run: list[str] = []
    for op, arg in items:
        if op is c.LITERAL:
            run.append(chr(arg))
            continue
        if run:
            out.append(frozenset(["".join(run)]))
            run = []
        out.extend(_item(op, arg, c))
    if run:
        out.append(frozenset(["".join(run)]))
    return out


def _best(requirement: Requirement) -> frozenset[str] | None:
    """The most selective single set of a requirement (longest shortest string)."""
    if not requirement:
        return None
    return max(requirement, key=lambda s: (min(len(x) for x in s), -len(s)))


def _item(op: Any, arg: Any, c: Any) -> Requirement:
    if op is c.SUBPATTERN:
        _group, add_flags, _del_flags, sub = arg
        if add_flags & re.IGNORECASE:
            return []
        return _sequence(list(sub), c)
    if op is c.ATOMIC_GROUP:
        return _sequence(list(arg), c)
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
        low, _high, sub = arg
        return _sequence(list(sub), c) if low >= 1 else []
    if op is c.BRANCH:
        _, branches = arg
        union: set[str] = set()
        for branch in branches:
            best = _best(_sequence(list(branch), c))
            if best is None:
                return []  # this alternative needs no literal: nothing is required
            union |= best
        return [frozenset(union)]
    if op is c.IN:
        chars: set[str] = set()
        for inner, value in arg:
            if inner is not c.LITERAL:
                return []
            chars.add(chr(value))
        return [frozenset(chars)] if len(chars) <= _SMALL_CLASS else []
    return []


def _common(literal: str) -> bool:
    return len(literal) < 2 or literal.strip() in _COMMON or not literal.strip()


class LiteralGate:
    """Which of many regexes may match a text, from one pass over it.

    ``candidates(text)`` is the set of keys whose regex may match ``text``:
    every required literal of the others is missing from it (occurrences are
    found overlapping, in one Aho-Corasick pass), so those cannot match.
    ``indices(text)`` is the same answer as positions in the order the
    patterns were given, ascending: callers that run the candidates in their
    original order iterate over those alone.
    """

    def __init__(self, patterns: Iterable[tuple[Hashable, str, int]]) -> None:
        import ahocorasick_rs

        self._keys: list[Hashable] = []
        always: list[int] = []
        # bit mask of all the requirement sets of each pattern, by position
        self._needed: dict[int, int] = {}
        # literal -> (position, bit) of each requirement set it satisfies
        by_literal: dict[str, list[tuple[int, int]]] = {}
        for position, (key, pattern, flags) in enumerate(patterns):
            self._keys.append(key)
            # Sets holding a very common string ("to", ":") are met by almost
            # any text and would only make the pass slower: dropping one is safe.
            requirement = [
                options
                for options in _cached_literals(pattern, flags)
                if not any(_common(x) for x in options)
            ]
            if not requirement:
                always.append(position)
                continue
            self._needed[position] = (1 << len(requirement)) - 1
            for number, options in enumerate(requirement):
                for literal in options:
                    by_literal.setdefault(literal, []).append((position, 1 << number))
        self._always = tuple(always)
        self._literals = list(by_literal)
        self._satisfies = [tuple(by_literal[literal]) for literal in self._literals]
        self._automaton = ahocorasick_rs.AhoCorasick(self._literals) if self._literals else None

    def __len__(self) -> int:
        return len(self._keys)

    def indices(self, text: str) -> list[int]:
        """Positions (ascending) of the patterns that may match ``text``."""
        if self._automaton is None:
            return list(self._always)
        hits = self._automaton.find_matches_as_indexes(text, overlapping=True)
        if not hits:
            return list(self._always)
        met: dict[int, int] = {}
        satisfies = self._satisfies
        for index in {i for i, _, _ in hits}:
            for position, bit in satisfies[index]:
                met[position] = met.get(position, 0) | bit
        needed = self._needed
        found = [position for position, bits in met.items() if bits == needed[position]]
        if self._always:
            found.extend(self._always)
        found.sort()
        return found

    def candidates(self, text: str) -> set[Hashable]:
        keys = self._keys
        return {keys[position] for position in self.indices(text)}


@functools.lru_cache(maxsize=1024)
def _cached_literals(pattern: str, flags: int) -> tuple[frozenset[str], ...]:
    """``required_literals``, parsed once per pattern (several gates share patterns)."""
    return tuple(required_literals(pattern, flags))
