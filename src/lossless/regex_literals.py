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

import bisect
import functools
import re
import types
from collections.abc import Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from lossless.literal_cache import KeptLiterals

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


def required_literals(
    pattern: str, flags: int = 0, *, spaces: frozenset[str] | None = None
) -> Requirement:
    """Sets of strings such that every match contains one string of each set.

    Empty when nothing can be said (the regex is then always run).
    ``spaces``: the only whitespace characters the texts searched can hold
    (``injection``'s views hold a space and a newline and no other), which
    makes ``\\s`` a small class like any other (`rm\\s+-` requires "rm " or
    "rm\\n"). Requirements computed this way hold only for such texts.
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
    context = types.SimpleNamespace(**vars(_constants), SPACES=spaces, MEMO={})
    return list(dict.fromkeys(r for r in _sequence(list(parsed), context) if r))


# At most this many strings are carried for a stretch of a pattern that can
# only match a few exact strings (`(?:this|these) (?:is|are) `).
_PRODUCT_LIMIT = 64


def _sequence(items: Sequence[tuple[Any, Any]], c: Any) -> Requirement:
    """Requirements of a concatenation: those of each item that must occur.

    Consecutive items that can only match a few exact strings (literal
    characters, small classes, alternatives of such, optional ones) are
    combined: every match of the stretch is one of the concatenations, so a
    text must hold one of them (`\\b(?:this|these) (?:is|are)` requires one of
    "this is", "this are", "these is", "these are", not merely "th").
    Zero-width items (`\\b`, `^`, lookarounds) consume nothing, so the
    stretch goes on across them.
    """
    out: Requirement = []
    stretch: set[str] = {""}

    def flush() -> None:
        if "" not in stretch:
            out.append(_minimal(stretch))

    for op, arg in items:
        exact = _exact(op, arg, c)
        if exact is not None:
            if len(stretch) * len(exact) <= _PRODUCT_LIMIT:
                stretch = {a + b for a in stretch for b in exact}
                continue
            flush()
            stretch = set(exact)
            continue
        repeated = _repeated_prefix(op, arg, c)
        if repeated is not None:
            # `#{2,}`: the first two repetitions follow what came before, the
            # last two precede what comes after.
            if len(stretch) * len(repeated) <= _PRODUCT_LIMIT:
                stretch = {a + b for a in stretch for b in repeated}
            flush()
            stretch = repeated
            continue
        flush()
        stretch = {""}
        out.extend(_item(op, arg, c))
    flush()
    return out


def _repeated_prefix(op: Any, arg: Any, c: Any) -> set[str] | None:
    """For ``X{n,}`` (n >= 1, X a few exact strings): the strings of n consecutive X."""
    if op not in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
        return None
    low, _high, sub = arg
    if low < 1 or low > 4:
        return None
    body = _exact_sequence(list(sub), c)
    if body is None or "" in body:
        return None
    strings: set[str] = {""}
    for _ in range(low):
        strings = {a + b for a in strings for b in body}
        if len(strings) > _PRODUCT_LIMIT:
            return None
    return strings


def _minimal(strings: set[str]) -> frozenset[str]:
    """``strings`` without those containing another one (a text holding the
    longer one holds the shorter: the requirement is the same)."""
    ordered = sorted(strings, key=len)
    kept: list[str] = []
    for candidate in ordered:
        if not any(shorter in candidate for shorter in kept):
            kept.append(candidate)
    return frozenset(kept)


def _exact(op: Any, arg: Any, c: Any) -> set[str] | None:
    """Every string ``op`` can match, when that is a few exact strings; else None.

    Asked again for the same part by every enclosing group: remembered per part."""
    key = (id(op), id(arg))
    if key in c.MEMO:
        return cast(set[str] | None, c.MEMO[key])
    found = _exact_uncached(op, arg, c)
    c.MEMO[key] = found
    return found


def _exact_uncached(op: Any, arg: Any, c: Any) -> set[str] | None:
    if op is c.LITERAL:
        return {chr(arg)}
    if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
        return {""}  # zero-width: the characters around it are consecutive
    if op is c.IN:
        chars: set[str] = set()
        for inner, value in arg:
            if inner is c.LITERAL:
                chars.add(chr(value))
            elif inner is c.CATEGORY and value is c.CATEGORY_SPACE and c.SPACES is not None:
                chars |= c.SPACES
            else:
                return None
        return chars if len(chars) <= _SMALL_CLASS else None
    if op is c.SUBPATTERN:
        _group, add_flags, _del_flags, sub = arg
        if add_flags & re.IGNORECASE:
            return None
        return _exact_sequence(list(sub), c)
    if op is c.BRANCH:
        _, branches = arg
        union: set[str] = set()
        for branch in branches:
            strings = _exact_sequence(list(branch), c)
            if strings is None:
                return None
            union |= strings
            if len(union) > _PRODUCT_LIMIT:
                return None
        return union
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
        low, high, sub = arg
        if high > 1:
            return None
        body = _exact_sequence(list(sub), c)
        if body is None:
            return None
        return body | {""} if low == 0 else body
    return None


def _exact_sequence(items: Sequence[tuple[Any, Any]], c: Any) -> set[str] | None:
    strings: set[str] = {""}
    for op, arg in items:
        exact = _exact(op, arg, c)
        if exact is None or len(strings) * len(exact) > _PRODUCT_LIMIT:
            return None
        strings = {a + b for a in strings for b in exact}
    return strings


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

    def __init__(
        self,
        patterns: Iterable[tuple[Hashable, str, int]],
        *,
        spaces: frozenset[str] | None = None,
        kept: bool = False,
    ) -> None:
        """``spaces``: as in ``required_literals``, for a gate used on such texts only.

        ``kept``: the patterns are the code's own constants, whose literal sets
        may be kept for the next process (``literal_cache``); never set for a
        pattern a user or a text supplied.
        """
        import ahocorasick_rs

        self._keys: list[Hashable] = []
        always: list[int] = []
        # bit mask of all the requirement sets of each pattern, by position
        self._needed: dict[int, int] = {}
        # literal -> (position, bit) of each requirement set it satisfies
        by_literal: dict[str, list[tuple[int, int]]] = {}
        # Sets holding a very common string ("to", ":") are met by almost any
        # text: searched for in the automaton they would only make the pass
        # slower, so they are checked after it, only for the patterns whose
        # other sets were all met (a substring test each).
        self._common_sets: dict[int, tuple[tuple[str, ...], ...]] = {}
        for position, (key, pattern, flags) in enumerate(patterns):
            self._keys.append(key)
            requirement: list[frozenset[str]] = []
            common: list[tuple[str, ...]] = []
            for options in _literals(pattern, flags, spaces, kept=kept):
                if any(_common(x) for x in options):
                    common.append(tuple(sorted(options, key=len)))
                else:
                    requirement.append(options)
            if common:
                self._common_sets[position] = tuple(common)
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
        # position -> for each of its rare sets, the automaton's indexes of its literals
        sets: dict[int, list[list[int]]] = {}
        for index, pairs in enumerate(self._satisfies):
            for position, bit in pairs:
                slots = sets.setdefault(
                    position, [[] for _ in range(self._needed[position].bit_length())]
                )
                slots[bit.bit_length() - 1].append(index)
        self._sets = sets
        self._automaton = ahocorasick_rs.AhoCorasick(self._literals) if self._literals else None
        if kept:
            _KEPT.keep()

    def __len__(self) -> int:
        return len(self._keys)

    def indices(self, text: str) -> list[int]:
        """Positions (ascending) of the patterns that may match ``text``."""
        if self._automaton is None:
            return self._holding(list(self._always), text)
        hits = self._automaton.find_matches_as_indexes(text, overlapping=True)
        if not hits:
            return self._holding(list(self._always), text)
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
        return self._holding(found, text)

    def _holding(self, positions: list[int], text: str) -> list[int]:
        """``positions`` less those whose common requirement sets ``text`` does not meet."""
        common = self._common_sets
        if not common:
            return positions
        return [
            position
            for position in positions
            if position not in common
            or all(any(option in text for option in options) for options in common[position])
        ]

    def meets_common(self, position: int, text: str) -> bool:
        """Whether ``text`` holds a string of each common set of the pattern at ``position``."""
        # Plain loops: asked for every candidate of every line, where the
        # generators' frames cost more than the substring tests themselves.
        for options in self._common_sets.get(position, ()):
            for option in options:
                if option in text:
                    break
            else:
                return False
        return True

    @property
    def always(self) -> tuple[int, ...]:
        """Positions of the patterns with no rare requirement set (see ``resolve``)."""
        return self._always

    def line_candidates(
        self, text: str, starts: Sequence[int], ends: Sequence[int], *, pairs: bool
    ) -> dict[int, set[int]]:
        """Which patterns may match each of many lines, or each two consecutive lines.

        ``text`` holds the lines one after the other (line ``k`` spans
        ``starts[k]:ends[k]``, ascending, with or without separators between
        them). One automaton pass finds every literal; a pattern may match a
        line when each of its sets has a literal inside the line, and the two
        lines ``k, k + 1`` read together (``pairs=True``) when each set has one
        inside either line or across their junction. Returns ``{position:
        lines}`` (or ``{position: k of the pairs}``) for the positions whose
        rare sets are met; the common sets (``_holding``) are the caller's to
        check on the text itself. Positions in ``always`` are candidates
        everywhere. A pair's ``k`` may fall outside ``0 .. len(starts) - 2``
        (a literal of the first or last line): callers keep the real pairs.
        """
        if self._automaton is None:
            return {}
        hits = self._automaton.find_matches_as_indexes(text, overlapping=True)
        # Only patterns whose every set is met somewhere in the whole text can
        # be met inside a line or pair, and only their literals need placing:
        # the per-hit placing below is the costly part, and most hits are of
        # literals whose patterns miss some other set everywhere.
        met: dict[int, int] = {}
        satisfies = self._satisfies
        for index in {index for index, _, _ in hits}:
            for position, bit in satisfies[index]:
                met[position] = met.get(position, 0) | bit
        needed = self._needed
        possible = {position for position, bits in met.items() if bits == needed[position]}
        if not possible:
            return {}
        if not pairs:
            return self._alone(hits, possible, starts, ends)
        useful: set[int] = set()
        for position in possible:
            for literals in self._sets[position]:
                useful.update(literals)
        inside: dict[int, set[int]] = {}  # literal -> lines holding it
        across: dict[int, set[int]] = {}  # literal -> k, found across lines k and k + 1
        last = len(starts) - 1
        for index, start, end in hits:
            if index not in useful:
                continue
            line = bisect.bisect_right(starts, start) - 1
            if line < 0:
                continue  # before the first line: held by no line
            if start < ends[line] and end <= ends[line]:
                inside.setdefault(index, set()).add(line)
            elif line < last and end <= ends[line + 1]:
                across.setdefault(index, set()).add(line)
        found: dict[int, set[int]] = {}
        empty: set[int] = set()
        for position in possible:
            joined: set[int] | None = None
            for literals in self._sets[position]:
                held = empty.union(*(inside.get(i, empty) for i in literals))
                over = empty.union(*(across.get(i, empty) for i in literals))
                in_pair = held | {line - 1 for line in held} | over
                joined = in_pair if joined is None else joined & in_pair
                if not joined:
                    break
            if joined:
                found[position] = joined
        return found

    def _alone(
        self,
        hits: list[tuple[int, int, int]],
        possible: set[int],
        starts: Sequence[int],
        ends: Sequence[int],
    ) -> dict[int, set[int]]:
        """``line_candidates`` for lines alone: each line's met sets as bit masks."""
        satisfies = self._satisfies
        placing: dict[int, tuple[tuple[int, int], ...]] = {}
        for index in {index for index, _, _ in hits}:
            marks = tuple((p, bit) for p, bit in satisfies[index] if p in possible)
            if marks:
                placing[index] = marks
        inside: dict[int, dict[int, int]] = {}
        # About half the hits are of literals no possible pattern needs: one
        # comprehension drops them before the per-hit placing below.
        for index, start, end in [hit for hit in hits if hit[0] in placing]:
            marks = placing[index]
            line = bisect.bisect_right(starts, start) - 1
            if line < 0 or start >= ends[line] or end > ends[line]:
                continue  # held by no line alone
            bits = inside.setdefault(line, {})
            for position, bit in marks:
                bits[position] = bits.get(position, 0) | bit
        needed = self._needed
        found: dict[int, set[int]] = {}
        for line, met in inside.items():
            for position, held in met.items():
                if held == needed[position]:
                    found.setdefault(position, set()).add(line)
        return found

    def candidates(self, text: str) -> set[Hashable]:
        keys = self._keys
        return {keys[position] for position in self.indices(text)}


# The detector's sets, kept beside the compiled-regex cache: deriving them for
# its ~120 patterns cost the first scan in every process ~30 ms of CPU.
_KEPT = KeptLiterals(Path(__file__))


def _literals(
    pattern: str, flags: int, spaces: frozenset[str] | None, *, kept: bool
) -> tuple[frozenset[str], ...]:
    if not kept:
        return _cached_literals(pattern, flags, spaces)
    key = (pattern, int(flags), spaces)  # a plain int: marshal stores no re.RegexFlag
    found = _KEPT.get(key)
    if found is None:
        found = _cached_literals(pattern, flags, spaces)
        _KEPT.add(key, found)
    return found


@functools.lru_cache(maxsize=1024)
def _cached_literals(
    pattern: str, flags: int, spaces: frozenset[str] | None
) -> tuple[frozenset[str], ...]:
    """``required_literals``, parsed once per pattern (several gates share patterns)."""
    return tuple(required_literals(pattern, flags, spaces=spaces))
