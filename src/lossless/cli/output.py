"""Terminal output for the CLI's human-readable forms: tables and status lines.

Tables fit the terminal: prose cells (snippets, titles) wrap inside their
column, paths and ids lose their middle (the two ends tell sub-agent files and
session ids apart), numbers stay whole. On a TTY headers are bold and statuses
coloured; ``NO_COLOR`` or a pipe gives plain text, and a pipe without
``COLUMNS`` cuts nothing (a script gets whole values). ``--json`` output never
comes here.

Tables are laid out by ``cli.table`` with the standard library; ``rich``
(about 20 ms of import) is loaded only for ``print_checks`` (``lcm doctor``).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from lossless.cli.table import CUT_END, CUT_MIDDLE, ELLIPSIS, FIXED, PROSE, Cell

if TYPE_CHECKING:
    from rich.console import Console

_ISO_TIME = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d)(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?")
# What rich pads the last column with, before any closing colour code.
_TRAILING = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$")

STATUS_STYLES = {
    "ok": "green",
    "info": "cyan",
    "warn": "yellow",
    "problem": "bold red",
    "error": "bold red",
}


def output_width() -> int | None:
    """Columns to fit: ``COLUMNS``, else the terminal's; None when piped (no limit)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        # os's, not shutil's (which would import the archive modules).
        try:
            return os.get_terminal_size(sys.stdout.fileno()).columns or 80
        except (OSError, ValueError):
            return 80
    return None


def console() -> Console:
    """A console on the current stdout (click's test runner swaps it).

    Colour only on a terminal and without ``NO_COLOR``; no markup or highlighting, so stored text is printed as it is.
    """
    from rich.console import Console

    width = output_width()
    plain = bool(os.environ.get("NO_COLOR"))  # https://no-color.org: any non-empty value
    return Console(
        file=sys.stdout,
        width=width if width is not None else 1_000_000,
        # No colour means no bold either: plain text, as in a pipe.
        color_system=None if plain else "auto",
        markup=False,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )


def _is_fixed(value: Any) -> bool:
    """Numbers and times: shown whole, never wrapped or cut."""
    return isinstance(value, int | float) or (
        isinstance(value, str) and _ISO_TIME.fullmatch(value.strip()) is not None
    )


def _cell(value: Any, max_chars: int, *, one_line: bool = False) -> Cell:
    """How one value is shown: numbers whole, words cut in the middle, prose
    wrapped (or cut at its end when ``one_line``)."""
    if value is None:
        return Cell("")
    if isinstance(value, bool):
        return Cell("yes" if value else "no")
    if isinstance(value, int | float):
        return Cell(f"{value:,}" if isinstance(value, int) else f"{value:g}", FIXED)
    text = " ".join(str(value).split())
    stamp = _ISO_TIME.fullmatch(text)
    if stamp:
        # Minutes are enough to tell activity apart; --json keeps the whole stamp.
        return Cell(f"{stamp.group(1)} {stamp.group(2)}", FIXED)
    if not any(ch.isspace() for ch in text):
        return Cell(text, CUT_MIDDLE)  # cut only to fit a terminal: a pipe gets it whole
    if len(text) > max_chars:
        text = text[: max_chars - 1] + ELLIPSIS
    return Cell(text, CUT_END if one_line else PROSE)


def print_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    max_width: int = 80,
    one_line: Sequence[str] = (),
    styles: Sequence[str | None] | None = None,
) -> None:
    """Print rows as a table that fits the terminal (cells clipped to ``max_width`` chars).

    Numbers are right-aligned with thousands separators and, like times,
    never cut; prose wraps inside its column, except in the ``one_line``
    columns (named by header), where it is cut at its end. ``styles`` gives a
    per-row style (coloured on a terminal only), e.g. red for a failed row.
    Laid out by ``cli.table`` (standard library only).
    """
    from lossless.cli.table import render

    rows = list(rows)
    numeric = [
        bool(rows) and all(isinstance(r[i], int | float) or r[i] is None for r in rows)
        for i in range(len(headers))
    ]
    fixed = [
        bool(rows) and all(r[i] is None or _is_fixed(r[i]) for r in rows)
        for i in range(len(headers))
    ]
    cut_end = [header in one_line for header in headers]
    from lossless.cli.shown import inert, is_terminal

    if is_terminal(sys.stdout):  # stored text in cells must not drive the terminal
        rows = [[inert(v) if isinstance(v, str) else v for v in row] for row in rows]
    cells = [
        [_cell(v, max_width, one_line=end) for v, end in zip(row, cut_end, strict=True)]
        for row in rows
    ]
    width = output_width()
    lines = render(
        headers,
        cells,
        right=numeric,
        no_wrap=fixed,
        limit=width if width is not None else 1_000_000,
        colour=colour_on(),
        styles=styles,
    )
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()


def colour_on() -> bool:
    """Whether to colour: a terminal (or ``FORCE_COLOR``), and no ``NO_COLOR``."""
    if os.environ.get("NO_COLOR"):  # https://no-color.org: any non-empty value
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty() and os.environ.get("TERM", "") not in ("dumb", "unknown")


def _print(renderable: Any) -> None:
    """Print through rich, without the spaces it pads every line's end with."""
    out = console()
    with out.capture() as captured:
        out.print(renderable)
    for line in captured.get().splitlines():
        sys.stdout.write(_TRAILING.sub(r"\1", line) + "\n")
    sys.stdout.flush()


def print_checks(lines: Iterable[tuple[str, str, str]]) -> None:
    """Print ``(status, label, text)`` lines: the label coloured by status, the
    text wrapped under itself (a hanging indent), e.g. ``lcm doctor``'s checks."""
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for status, label, text in lines:
        grid.add_row(Text(label, style=STATUS_STYLES.get(status, "")), Text(text))
    _print(grid)


def wrapped(
    text: str, *, indent: int | str = 0, err: bool = False, status: str | None = None
) -> None:
    """Print ``text`` wrapped to the terminal, continuation lines indented by
    ``indent`` (columns or a prefix), e.g. ``label:   value`` lines; coloured
    by ``status`` on a terminal without NO_COLOR. Piped without ``COLUMNS``,
    it is printed as it is, byte for byte (it may quote stored text: see
    ``cli.shown``)."""
    from lossless.cli.shown import for_stream, is_terminal
    from lossless.cli.table import styled

    stream = sys.stderr if err else sys.stdout
    text = fit_terminal(for_stream(text, stream), indent=indent)
    colour = STATUS_STYLES.get(status or "")
    if colour and is_terminal(stream) and not os.environ.get("NO_COLOR"):
        text = styled(text, colour)
    stream.write(text + "\n")
    stream.flush()


def fit_terminal(text: str, *, indent: int | str = 0) -> str:
    """``text`` wrapped to the terminal as ``wrapped`` prints it (as it is when piped)."""
    width = output_width()
    if width is None or len(text) <= width:
        return text
    # Only here: textwrap compiles its word-splitting patterns at import
    # (~2 ms of `lcm status`, whose lines mostly fit or go to a pipe).
    import textwrap

    return textwrap.fill(
        text,
        width=width,
        subsequent_indent=" " * indent if isinstance(indent, int) else indent,
        break_on_hyphens=False,
        drop_whitespace=True,
    )


def clipped(text: str) -> str:
    """``text`` cut at its end to the terminal width (tree lines, previews)."""
    width = output_width()
    if width is None or len(text) <= width:
        return text
    return text[: max(0, width - 1)] + ELLIPSIS


def print_json(value: Any) -> None:
    """One JSON document on stdout, as ``cli.app.emit_json`` prints it."""
    import json

    from lossless.jsonable import to_jsonable

    sys.stdout.write(json.dumps(to_jsonable(value), ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()
