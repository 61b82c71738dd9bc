"""Terminal output for the CLI's human-readable forms: tables and status lines.

Tables fit the terminal: prose cells (snippets, titles) wrap inside their
column, paths and ids lose their middle (the two ends tell sub-agent files and
session ids apart), numbers stay whole. On a TTY headers are bold and statuses
coloured; ``NO_COLOR`` or a pipe gives plain text, and a pipe without
``COLUMNS`` cuts nothing (a script gets whole values). ``--json`` output never
comes here.

``rich`` is imported on first use only: hooks, the MCP server and
``lcm --version`` never print a table and must start fast.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.measure import Measurement

# Below this a path or id is unreadable either way; rich may still go lower on
# a very narrow terminal rather than overflow it.
_MIN_CUT = 12
ELLIPSIS = "…"
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
        return shutil.get_terminal_size().columns
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


def cut_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, its middle replaced by an ellipsis."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    keep = width - 1
    head = (keep + 1) // 2
    return text[:head] + ELLIPSIS + text[len(text) - (keep - head) :]


class _OneLine:
    """A one-line cell that shortens to its column: a path or an id loses its
    middle (both ends tell them apart), a title its end."""

    def __init__(self, text: str, *, cut: str = "middle") -> None:
        self.text = text
        self.cut = cut

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        from rich.measure import Measurement

        return Measurement(min(len(self.text), _MIN_CUT), len(self.text))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        width = options.max_width
        if self.cut == "middle" or len(self.text) <= width:
            shown = cut_middle(self.text, width)
        else:
            shown = self.text[: max(0, width - 1)] + ELLIPSIS
        yield Text(shown, no_wrap=True, overflow="crop")


def _is_fixed(value: Any) -> bool:
    """Numbers and times: shown whole, never wrapped or cut."""
    return isinstance(value, int | float) or (
        isinstance(value, str) and _ISO_TIME.fullmatch(value.strip()) is not None
    )


def _cell(value: Any, max_chars: int, *, one_line: bool = False) -> Any:
    """The renderable for one value: numbers whole, words cut in the middle,
    prose wrapped (or cut at its end when ``one_line``)."""
    from rich.text import Text

    if value is None:
        return Text("")
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    if isinstance(value, int | float):
        return Text(f"{value:,}" if isinstance(value, int) else f"{value:g}", no_wrap=True)
    text = " ".join(str(value).split())
    stamp = _ISO_TIME.fullmatch(text)
    if stamp:
        # Minutes are enough to tell activity apart; --json keeps the whole stamp.
        return Text(f"{stamp.group(1)} {stamp.group(2)}", no_wrap=True)
    if not any(ch.isspace() for ch in text):
        return _OneLine(text)  # cut only to fit a terminal: a pipe gets it whole
    if len(text) > max_chars:
        text = text[: max_chars - 1] + ELLIPSIS
    if one_line:
        return _OneLine(text, cut="end")
    return Text(text, overflow="fold")


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
    """
    from rich import box
    from rich.table import Table

    rows = list(rows)
    numeric = [
        bool(rows) and all(isinstance(r[i], int | float) or r[i] is None for r in rows)
        for i in range(len(headers))
    ]
    fixed = [
        bool(rows) and all(r[i] is None or _is_fixed(r[i]) for r in rows)
        for i in range(len(headers))
    ]
    table = Table(
        box=box.Box("    \n    \n -  \n    \n    \n    \n    \n    \n", ascii=True),
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
        header_style="bold",
        show_lines=False,
    )
    for header, is_number, is_fixed in zip(headers, numeric, fixed, strict=True):
        table.add_column(header, justify="right" if is_number else "left", no_wrap=is_fixed)
    cut_end = [header in one_line for header in headers]
    for index, row in enumerate(rows):
        style = styles[index] if styles is not None else None
        table.add_row(
            *(_cell(v, max_width, one_line=end) for v, end in zip(row, cut_end, strict=True)),
            style=style,
        )
    _print(table)


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
    """Echo ``text`` wrapped to the terminal, continuation lines indented by
    ``indent`` (columns or a prefix), e.g. ``label:   value`` lines; coloured
    by ``status`` on a terminal without NO_COLOR. Piped without ``COLUMNS``,
    it is printed as it is."""
    import textwrap

    import click

    width = output_width()
    prefix = " " * indent if isinstance(indent, int) else indent
    if width is not None and len(text) > width:
        text = textwrap.fill(
            text,
            width=width,
            subsequent_indent=prefix,
            break_on_hyphens=False,
            drop_whitespace=True,
        )
    colour = STATUS_STYLES.get(status or "")
    if colour and not os.environ.get("NO_COLOR"):
        # click.echo drops the colour when the stream is not a terminal.
        text = click.style(text, fg=colour.split()[-1], bold="bold" in colour)
    click.echo(text, err=err)


def clipped(text: str) -> str:
    """``text`` cut at its end to the terminal width (tree lines, previews)."""
    width = output_width()
    if width is None or len(text) <= width:
        return text
    return text[: max(0, width - 1)] + ELLIPSIS
