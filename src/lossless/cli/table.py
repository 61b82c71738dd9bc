"""Tables laid out to fit the terminal, with the standard library only.

``lcm grep``, ``conversations``, ``search`` and the other listings print a
table; laying it out with ``rich`` made every such command import it (about
20 ms of the command's start-up, a fifth of ``lcm grep``). This module lays
out the same tables the same way (the layout ``cli.output.print_table``
has always printed): columns one space apart, each but the last padded by
one more, a rule of dashes under the headers; the widest wrappable columns
give up width first until the table fits, then every column evenly; prose
wraps at word boundaries (a word longer than its column folds), paths and
ids lose their middle, numbers and times stay whole. Widths are counted in
terminal cells (a CJK character takes two).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence

ELLIPSIS = "…"
_WORD = re.compile(r"\s*\S+\s*")
# SGR codes of the styles the CLI uses (``cli.output.STATUS_STYLES``).
_SGR = {"bold": "1", "red": "31", "green": "32", "yellow": "33", "blue": "34", "cyan": "36"}

PROSE, FIXED, CUT_MIDDLE, CUT_END = "prose", "fixed", "cut-middle", "cut-end"
# A header wraps between words; a word too long for its column is cut, not folded.
HEADER = "header"


class Cell:
    """One value's text and how it gives way to a narrow column: ``PROSE``
    wraps, ``FIXED`` (numbers, times) never does, ``CUT_MIDDLE`` (paths,
    ids) loses its middle, ``CUT_END`` (one-line prose) its end."""

    __slots__ = ("kind", "text")

    def __init__(self, text: str, kind: str = PROSE) -> None:
        self.text = text
        self.kind = kind


def char_width(char: str) -> int:
    """Terminal cells taken by ``char``: 2 wide (CJK), 0 combining or format, else 1."""
    if unicodedata.east_asian_width(char) in ("W", "F"):
        return 2
    if unicodedata.category(char) in ("Mn", "Me", "Cf", "Cc"):
        return 0
    return 1


def cell_len(text: str) -> int:
    """Terminal cells taken by ``text``."""
    if text.isascii():
        return len(text)
    return sum(char_width(char) for char in text)


def crop(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` cells."""
    if cell_len(text) <= width:
        return text
    kept, used = [], 0
    for char in text:
        size = char_width(char)
        if used + size > width:
            break
        kept.append(char)
        used += size
    return "".join(kept)


def cut_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, its middle replaced by an ellipsis."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    keep = width - 1
    head = (keep + 1) // 2
    return text[:head] + ELLIPSIS + text[len(text) - (keep - head) :]


def _chop(word: str, width: int) -> list[str]:
    """``word`` in pieces of at most ``width`` cells (the last may be shorter)."""
    pieces: list[str] = []
    piece: list[str] = []
    used = 0
    for char in word:
        size = char_width(char)
        if piece and used + size > width:
            pieces.append("".join(piece))
            piece, used = [], 0
        piece.append(char)
        used += size
    pieces.append("".join(piece))
    return pieces


def wrap(text: str, width: int, *, fold: bool = True) -> list[str]:
    """``text`` in lines of at most ``width`` cells: broken between words, a
    word longer than a line folded across lines (or, without ``fold``, on a
    line of its own, cut with an ellipsis)."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group(0)
        length = cell_len(word.rstrip())
        if width - offset >= length:
            offset += cell_len(word)
        elif length > width and not fold:
            if start:
                breaks.append(start)
            offset = cell_len(word)
        elif length > width:
            pieces = _chop(word, width)
            for index, piece in enumerate(pieces):
                if start:
                    breaks.append(start)
                if index == len(pieces) - 1:
                    offset = cell_len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            breaks.append(start)
            offset = cell_len(word)
    bounds = [0, *breaks, len(text)]
    lines = [text[a:b] for a, b in itertools.pairwise(bounds)]
    lines = [line.rstrip() if cell_len(line) > width else line for line in lines]
    return [crop(line, width) if fold else ellipsized(line, width) for line in lines]


def ellipsized(text: str, width: int) -> str:
    """``text``, or its start and an ellipsis in ``width`` cells when it is wider."""
    return text if cell_len(text) <= width else crop(text, width - 1) + ELLIPSIS


def _reduce(total: int, ratios: list[int], maximums: list[int], values: list[int]) -> list[int]:
    """Take ``total`` from ``values`` in proportion to ``ratios``, at most
    ``maximums`` from each."""
    ratios = [ratio if most else 0 for ratio, most in zip(ratios, maximums, strict=True)]
    remaining_ratio = sum(ratios)
    if not remaining_ratio:
        return values[:]
    remaining = total
    result = []
    for ratio, most, value in zip(ratios, maximums, values, strict=True):
        if ratio and remaining_ratio > 0:
            taken = min(most, round(ratio * remaining / remaining_ratio))
            result.append(value - taken)
            remaining -= taken
            remaining_ratio -= ratio
        else:
            result.append(value)
    return result


def _collapse(widths: list[int], wrappable: list[bool], limit: int) -> list[int]:
    """Narrow the widest wrappable columns towards the next widest until the
    total fits ``limit`` (or no wrappable column is wider than another)."""
    total = sum(widths)
    excess = total - limit
    if not any(wrappable):
        return widths
    while total and excess > 0:
        widest = max(w for w, ok in zip(widths, wrappable, strict=True) if ok)
        second = max(
            (w if ok and w != widest else 0) for w, ok in zip(widths, wrappable, strict=True)
        )
        difference = widest - second
        ratios = [1 if (w == widest and ok) else 0 for w, ok in zip(widths, wrappable, strict=True)]
        if not any(ratios) or not difference:
            break
        widths = _reduce(excess, ratios, [min(excess, difference)] * len(widths), widths)
        total = sum(widths)
        excess = total - limit
    return widths


def measure(cell: Cell) -> int:
    """The width ``cell`` takes when nothing constrains it (what the layout
    has always counted: characters for the cut kinds, cells for the others)."""
    return len(cell.text) if cell.kind in (CUT_MIDDLE, CUT_END) else cell_len(cell.text)


def column_widths(
    headers: Sequence[Cell], rows: Sequence[Sequence[Cell]], no_wrap: Sequence[bool], limit: int
) -> list[int]:
    """Each column's width, its padding included, for a table of at most ``limit`` cells."""
    count = len(headers)
    limit -= count - 1  # the space between columns
    widths = []
    for index, header in enumerate(headers):
        widest = max([measure(header), *(measure(row[index]) for row in rows)])
        padding = 1 if index < count - 1 else 0
        # No cell is wider than the whole table may be.
        widths.append((min(widest, max(limit - padding, 0)) + padding) or 1)
    if sum(widths) > limit:
        widths = _collapse(widths, [not fixed for fixed in no_wrap], limit)
        if sum(widths) > limit:
            widths = _reduce(sum(widths) - limit, [1] * count, widths, widths)
    return [max(width, 0) for width in widths]


def cell_lines(cell: Cell, width: int, *, right: bool) -> list[str]:
    """``cell`` laid out in ``width`` cells, each line padded to the width."""
    text = cell.text
    if width <= 0:
        return [""]  # a column squeezed out by a very narrow terminal
    if cell.kind == PROSE:
        lines = wrap(text, width) if text else [""]
    elif cell.kind == HEADER:
        lines = wrap(text, width, fold=False) if text else [""]
    elif cell.kind == CUT_MIDDLE:
        lines = [crop(cut_middle(text, width), width)]
    elif cell.kind == CUT_END:
        shown = text if len(text) <= width else text[: max(0, width - 1)] + ELLIPSIS
        lines = [crop(shown, width)]
    else:  # FIXED: never wrapped; cut with an ellipsis only when nothing else fits
        lines = [ellipsized(text, width)]
    if right:
        return [" " * (width - cell_len(line.rstrip())) + line.rstrip() for line in lines]
    return [line + " " * (width - cell_len(line)) for line in lines]


def styled(text: str, style: str | None) -> str:
    """``text`` in ``style`` (e.g. ``"bold red"``) as terminal escape codes."""
    codes = [_SGR[word] for word in (style or "").split() if word in _SGR]
    if not codes or not text.strip():
        return text
    body = text.rstrip(" ")
    return f"\x1b[{';'.join(codes)}m{body}\x1b[0m" + text[len(body) :]


def render(
    headers: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    *,
    right: Sequence[bool],
    no_wrap: Sequence[bool],
    limit: int,
    colour: bool,
    styles: Sequence[str | None] | None = None,
) -> list[str]:
    """The table's lines, trailing spaces removed: headers (bold when
    ``colour``), a rule, then the rows (each in its style when ``colour``)."""
    head = [Cell(header, HEADER) for header in headers]
    widths = column_widths(head, rows, no_wrap, limit)
    count = len(widths)
    out: list[str] = []

    def inner_width(index: int) -> int:
        """Column ``index``'s width without its padding (the last has none)."""
        return max(widths[index] - (1 if index < count - 1 else 0), 0)

    def emit(
        cells: Sequence[Cell], style: str | None, kinds: Sequence[bool], *, bottom: bool = False
    ) -> None:
        laid = []
        for index, cell in enumerate(cells):
            inner = inner_width(index)
            if kinds[index] and cell.kind == HEADER:
                cell = Cell(cell.text, FIXED)  # a header over numbers or times stays whole
            laid.append(cell_lines(cell, inner, right=right[index]))
        height = max(len(lines) for lines in laid)
        if bottom:  # headers sit on the rule: a short one is padded above
            laid = [
                [" " * inner_width(index)] * (height - len(lines)) + lines
                for index, lines in enumerate(laid)
            ]
        for line_no in range(height):
            parts = []
            for index, lines in enumerate(laid):
                padding = 1 if index < count - 1 and widths[index] > 0 else 0
                text = lines[line_no] if line_no < len(lines) else " " * inner_width(index)
                parts.append((styled(text, style) if colour else text) + " " * padding)
            out.append(" ".join(parts).rstrip(" "))

    emit(head, "bold", no_wrap, bottom=True)
    out.append(" ".join("-" * width for width in widths).rstrip(" "))
    for index, row in enumerate(rows):
        emit(row, styles[index] if styles is not None else None, [False] * count)
    return out
