"""Judging every line of a text, and every two consecutive lines, at once.

The extractive summarizer never selects a line that addresses the agent,
alone or read together with its neighbour (a payload cut across two lines or
two messages). ``injection.scan`` answers that exactly for one text, but most
of its cost is per call: five views of the text built and a literal gate run
over each, for a thousand lines and as many pairs in a 20,000-token chunk.

``flag_lines`` gives the same answers as ``scan`` on every line and on every
pair (``injection.joined``), from one pass over all of them: the lines are
joined with newlines and each view is built once for the whole text, then cut
back into lines (every rewriting a view does stops at a newline for such
text: Unicode normalization, spacing, case, homoglyphs, leetspeak, letter
spacing, code spans, rot13; the
compacted view of a pair is its two lines' run together). Each gate runs once
per view and says, from the literals inside a line or across two consecutive
lines, which patterns may match that line or pair; only those run, on that
line's or pair's own view. Lines that hold zero-width characters between
letters, an entity decoding to a newline or encoded text are scanned alone,
with the pairs they are part of.
``tests/test_injection_lines.py`` compares both on the injection corpus and
on real transcripts.
"""

from __future__ import annotations

import bisect
import functools
import html
import itertools
import operator
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lossless.injection import (
    _B64_RE,
    _CODE_SPAN_RE,
    _COMPACT_RES,
    _HEX_RE,
    _INTERLEAVED_RE,
    _INVISIBLE_RE,
    _MARKER_RES,
    _OTHER_SPACE_RE,
    _PHRASE_RES,
    _READABLE_RES,
    _RENDER_MARKER_RE,
    _ROT13,
    _VIEW_SPACES,
    _b64_plain,
    _base,
    _folded,
    _gate,
    _gates,
    _hex_plain,
    _LazyPattern,
    _percent_plain,
    joined,
    scan,
)
from lossless.regex_literals import LiteralGate

__all__ = ["flag_lines"]

_NOT_LETTER_OR_NEWLINE_RE = re.compile(r"[^a-z\n]+")
# The same characters as bytes, for ASCII text.
_NOT_LETTER_OR_NEWLINE = bytes(b for b in range(128) if not (97 <= b <= 122 or b == 10))

_Family = tuple[LiteralGate, tuple[tuple[str, _LazyPattern], ...]]

# Which family of patterns runs on which view, as in ``injection.scan``.
_CHECKS: tuple[tuple[str, str], ...] = (
    ("text", "readable"),
    ("folded", "readable"),
    ("unquoted-text", "markers"),
    ("unquoted-folded", "markers"),
    ("rot13", "phrases"),
    ("compact", "compact"),
)
# A line's view that equals this one is judged by the same family under it.
_SAME_AS = {"folded": "text", "unquoted-folded": "unquoted-text"}


@dataclass(slots=True)
class _Joined:
    """The views of many lines, built at once and cut back into lines, and
    by view the patterns each line (or each pair) may match."""

    lines: dict[str, list[str]]
    candidates: dict[str, dict[int, set[int]]]


@functools.cache
def _families() -> dict[str, _Family]:
    """One gate per family of patterns (``scan`` shares one among three: it
    gates one text at a time, and building a gate takes a while)."""
    return {
        "readable": (_gate(_READABLE_RES, _VIEW_SPACES), _READABLE_RES),
        "markers": (_gate(_MARKER_RES, _VIEW_SPACES), _MARKER_RES),
        "phrases": (_gate(_PHRASE_RES, _VIEW_SPACES), _PHRASE_RES),
        "compact": (_gates().compact, _COMPACT_RES),
    }


def _plain(line: str) -> bool:
    """Lines whose views can be built joined: the views' rewriting stays inside them.

    Unicode normalization, case folding, homoglyph folding, HTML entities and
    the removal of invisible characters never cross a newline (a newline is a
    normalization boundary, no character decomposes into one and no entity
    name holds one). Lines with an entity that decodes to a newline, or with
    zero-width characters between letters (a finding of their own), are
    scanned alone.
    """
    if "\n" in line:
        return False
    if line.isascii():
        return "&" not in line or "\n" not in html.unescape(line)
    if _INTERLEAVED_RE.search(line):
        return False
    normal = unicodedata.normalize("NFKC", line)
    return "&" not in normal or "\n" not in html.unescape(_INVISIBLE_RE.sub("", normal))


def flag_lines(lines: Sequence[str]) -> tuple[list[bool], list[bool]]:
    """Whether ``scan(line)`` finds anything, for each line, and whether
    ``scan(joined(a, b))`` does, for each two consecutive lines ``a, b``."""
    count = len(lines)
    alone = [False] * count
    pairs = [False] * max(0, count - 1)
    if not count:
        return alone, pairs
    stripped = [_RENDER_MARKER_RE.sub("", line) if "[" in line else line for line in lines]
    plain = [_plain(line) for line in lines]
    families = _families()
    # Lines scanned alone take no room in the joined text. A line's views
    # are its own (see ``_plain``), so the pairs' views differ from the lines'
    # only where a render marker was dropped: only those are built again.
    blanked = _blanked(lines, plain)
    cut = _cut_views(blanked)
    as_is = _join(cut, families, pairs=False)
    as_pairs = _join(_recut(cut, _blanked(stripped, plain), blanked), families, pairs=True)
    hidden_alone = _hidden(lines, plain, pairs=False) | _odd_spaces(as_is, pairs=False)
    hidden_pairs = _hidden(stripped, plain, pairs=True) | _odd_spaces(as_pairs, pairs=True)

    for k, line in enumerate(lines):
        if not line.strip():
            continue
        if not plain[k] or k in hidden_alone:
            alone[k] = bool(scan(line))
    for k in range(count - 1):
        if not (stripped[k].strip() or stripped[k + 1].strip()):
            continue
        if not (plain[k] and plain[k + 1]) or k in hidden_pairs:
            pairs[k] = bool(scan(joined(lines[k], lines[k + 1])))

    def alone_text(view: str, k: int) -> str:
        return as_is.lines[view][k]

    def pair_text(view: str, k: int) -> str:
        cut = as_pairs.lines[view]
        return cut[k] + cut[k + 1] if view == "compact" else cut[k] + "\n" + cut[k + 1]

    for flags, found, text_of, skip, limit in (
        (alone, as_is.candidates, alone_text, hidden_alone, count),
        (pairs, as_pairs.candidates, pair_text, hidden_pairs, count - 1),
    ):
        todo: dict[int, list[tuple[str, str, int]]] = {}
        for view, family in _CHECKS:
            gate = families[family][0]
            for position, where in found[view].items():
                for k in where:
                    todo.setdefault(k, []).append((view, family, position))
            if gate.always:
                for k in range(limit):
                    todo.setdefault(k, []).extend((view, family, p) for p in gate.always)
        for k, checks in todo.items():
            if k in skip or not 0 <= k < limit or flags[k]:
                continue
            if text_of is alone_text:
                if not plain[k] or not lines[k].strip():
                    continue
            elif not (plain[k] and plain[k + 1]) or not (
                stripped[k].strip() or stripped[k + 1].strip()
            ):
                continue
            flags[k] = _any_match(families, checks, text_of, k)
    return alone, pairs


def _any_match(
    families: dict[str, _Family],
    checks: list[tuple[str, str, int]],
    text_of: Callable[[str, int], str],
    k: int,
) -> bool:
    """Whether a candidate pattern matches its view of line (or pair) ``k``."""
    for view, family, position in checks:
        same = _SAME_AS.get(view)
        body = text_of(view, k)
        if same is not None and body == text_of(same, k):
            continue  # the same text, judged under the view it equals
        gate, patterns = families[family]
        if gate.meets_common(position, body) and patterns[position][1].search(body):
            return True
    return False


def _join(cut: dict[str, list[str]], families: dict[str, _Family], *, pairs: bool) -> _Joined:
    """The lines' views joined, and the patterns each line (or pair) may match."""
    views = {name: "\n".join(pieces) for name, pieces in cut.items() if name != "compact"}
    views["compact"] = "".join(cut["compact"])
    candidates: dict[str, dict[int, set[int]]] = {}
    for view, family in _CHECKS:
        starts, ends = _offsets(cut[view], separator=0 if view == "compact" else 1)
        candidates[view] = families[family][0].line_candidates(
            views[view], starts, ends, pairs=pairs
        )
    return _Joined(lines=cut, candidates=candidates)


def _recut(cut: dict[str, list[str]], lines: list[str], before: list[str]) -> dict[str, list[str]]:
    """``_cut_views(lines)`` from ``cut``, the views of ``before``: only the
    lines that differ are built again."""
    changed = [k for k, (line, old) in enumerate(zip(lines, before, strict=True)) if line != old]
    if not changed:
        return cut
    redone = _cut_views([lines[k] for k in changed])
    out = {name: column[:] for name, column in cut.items()}
    for name, column in redone.items():
        target = out[name]
        for k, piece in zip(changed, column, strict=True):
            target[k] = piece
    return out


def _cut_views(lines: list[str]) -> dict[str, list[str]]:
    """Each view of each line, the ASCII lines' built together and the others'
    together (ASCII takes the cheap path of ``_base`` and ``_folded``)."""
    cut: dict[str, list[str]] = {name: [""] * len(lines) for name, _ in _CHECKS}
    for ascii_only in (True, False):
        chosen = [k for k, line in enumerate(lines) if line and line.isascii() == ascii_only]
        if not chosen:
            continue
        whole = "\n".join(lines[k] for k in chosen)
        base = _base(whole)
        folded = _folded(base)
        views = {"text": base, "folded": folded, "rot13": base.translate(_ROT13)}
        quoted = "`" in whole
        views["unquoted-text"] = _CODE_SPAN_RE.sub(" ", base) if quoted else base
        views["unquoted-folded"] = _CODE_SPAN_RE.sub(" ", folded) if quoted else folded
        pieces = {name: view.split("\n") for name, view in views.items()}
        if folded.isascii():  # bytes drop the other characters in one C loop
            compact = folded.encode("ascii").translate(None, _NOT_LETTER_OR_NEWLINE).decode()
        else:
            compact = _NOT_LETTER_OR_NEWLINE_RE.sub("", folded)
        pieces["compact"] = compact.split("\n")
        every = len(chosen) == len(lines)  # all lines in one pass: the pieces are the column
        for name, parts in pieces.items():
            if len(parts) != len(chosen):  # pragma: no cover - excluded by _plain
                raise AssertionError(f"the {name} view changed the number of lines")
            if every:
                cut[name] = parts
                continue
            column = cut[name]
            for k, part in zip(chosen, parts, strict=True):
                column[k] = part
    return cut


def _offsets(pieces: list[str], *, separator: int) -> tuple[list[int], list[int]]:
    """Where each piece starts and ends in the pieces joined by ``separator`` characters."""
    if not pieces:
        return [], []
    lengths = list(map(len, pieces))
    # The k-th start is the lengths before it plus k separators (all in C).
    starts = list(itertools.accumulate(lengths[:-1], initial=0))
    if separator:
        starts = list(map(operator.add, starts, range(0, separator * len(pieces), separator)))
    ends = list(map(operator.add, starts, lengths))
    return starts, ends


def _odd_spaces(joined_lines: _Joined, *, pairs: bool) -> set[int]:
    """Lines (or pairs) whose folded view holds whitespace other than a space:
    the gates assume there is none (``injection._VIEW_SPACES``), so ``scan``
    runs every pattern on such a view and they are scanned alone."""
    out: set[int] = set()
    texts = len(joined_lines.lines["text"]) - (1 if pairs else 0)
    for line, view in enumerate(joined_lines.lines["folded"]):
        if not view.isascii() and _OTHER_SPACE_RE.search(view):
            out.update(k for k in ((line - 1, line) if pairs else (line,)) if 0 <= k < texts)
    return out


def _blanked(lines: Sequence[str], plain: list[bool]) -> list[str]:
    return [line if ok else "" for line, ok in zip(lines, plain, strict=True)]


def _hidden(lines: Sequence[str], plain: list[bool], *, pairs: bool) -> set[int]:
    """Lines (or pairs, by their first line) whose text hides base64, hex or
    percent-encoded text: ``scan`` reads those decoded too, so they are scanned
    alone. Only plain lines are looked at (the others are scanned alone anyway)."""
    kept = _blanked(lines, plain)
    whole = "\n".join(kept)
    starts, ends = _offsets(kept, separator=1)
    texts = len(lines) - 1 if pairs else len(lines)

    def holding(line: int) -> tuple[int, ...]:
        """The texts ``line`` is part of: itself, or the pairs before and after it."""
        return tuple(k for k in ((line - 1, line) if pairs else (line,)) if 0 <= k < texts)

    out: set[int] = set()
    # Base64 runs stop at a newline: each lies inside one line, as in the line alone.
    for match in _B64_RE.finditer(whole):
        if _b64_plain(match.group(0)) is not None:
            out.update(holding(bisect.bisect_right(starts, match.start()) - 1))
    # Hex runs may cross newlines, and percent-encoding is read per word: every
    # text a hex run overlaps, or holding a percent sign, is decoded as scan does.
    maybe: set[int] = set()
    for match in _HEX_RE.finditer(whole):
        first = bisect.bisect_right(starts, match.start()) - 1
        last = bisect.bisect_right(starts, max(match.start(), match.end() - 1)) - 1
        for line in range(first, last + 1):
            maybe.update(holding(line))
    # The lines holding a percent sign, found by their signs in the whole text.
    percent = whole.find("%")
    while percent >= 0:
        line = bisect.bisect_right(starts, percent) - 1
        maybe.update(holding(line))
        percent = whole.find("%", ends[line] if line < len(ends) else len(whole))
    for k in maybe - out:
        text = kept[k] + "\n" + kept[k + 1] if pairs else kept[k]
        if _hex_plain(text) or _percent_plain(text):
            out.add(k)
    return out
