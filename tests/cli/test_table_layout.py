"""``cli.table`` lays tables out as rich did, without importing rich.

The CLI's tables were rich tables; ``print_table`` now lays them out with the
standard library (rich's import was a fifth of ``lcm grep``'s start-up). The
reference here is the rich table ``print_table`` used to build, rendered by
rich itself: for generated tables (numbers, times, ids, paths, CJK prose,
words longer than any column) at every terminal width a person works in,
and in a pipe, the text is the same, line for line.
"""

from __future__ import annotations

import io
import random
import re
from typing import Any

import pytest

from lossless.cli import output
from lossless.cli.table import CUT_END, CUT_MIDDLE, FIXED, cut_middle

rich_console = pytest.importorskip("rich.console")
from rich import box  # noqa: E402
from rich.measure import Measurement  # noqa: E402
from rich.table import Table  # noqa: E402
from rich.text import Text  # noqa: E402

_TRAILING = re.compile(r" +$")
WORDS = [
    "error",
    "the",
    "FAILED",
    "update_decoder",
    "/home/user/project/src/lossless/cli/a_rather_long_module_name.py",
    "数据库迁移",
    "ファイル",
    "sum_0123456789abcdef",
    "a",
    "x" * 60,
    "naïve",
    "café",
    "—",
    '{"path":',
]


class _OneLine:
    """The cell rich rendered for ids and one-line prose (as print_table had it)."""

    def __init__(self, text: str, cut: str) -> None:
        self.text, self.cut = text, cut

    def __rich_measure__(self, console: Any, options: Any) -> Measurement:
        return Measurement(min(len(self.text), 12), len(self.text))

    def __rich_console__(self, console: Any, options: Any) -> Any:
        width = options.max_width
        if self.cut == "middle" or len(self.text) <= width:
            shown = cut_middle(self.text, width)
        else:
            shown = self.text[: max(0, width - 1)] + "…"
        yield Text(shown, no_wrap=True, overflow="crop")


def rich_table(
    headers: list[str], rows: list[list[Any]], width: int | None, one_line: list[str]
) -> str:
    cut_end = [h in one_line for h in headers]
    cells = [
        [output._cell(v, 100, one_line=e) for v, e in zip(r, cut_end, strict=True)] for r in rows
    ]
    numeric = [
        bool(rows) and all(isinstance(r[i], int | float) or r[i] is None for r in rows)
        for i in range(len(headers))
    ]
    fixed = [
        bool(rows) and all(r[i] is None or output._is_fixed(r[i]) for r in rows)
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
    for row in cells:
        table.add_row(*(as_rich(cell) for cell in row))
    buffer = io.StringIO()
    console = rich_console.Console(
        file=buffer,
        width=width if width is not None else 1_000_000,
        color_system=None,
        markup=False,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )
    console.print(table)
    return "".join(_TRAILING.sub("", line) + "\n" for line in buffer.getvalue().splitlines())


def as_rich(cell: Any) -> Any:
    if cell.kind == FIXED:
        return Text(cell.text, no_wrap=True)
    if cell.kind in (CUT_MIDDLE, CUT_END):
        return _OneLine(cell.text, "middle" if cell.kind == CUT_MIDDLE else "end")
    if cell.text in ("", "yes", "no"):
        return Text(cell.text)
    return Text(cell.text, overflow="fold")


def generated(rng: random.Random) -> tuple[list[str], list[list[Any]], list[str]]:
    headers = [
        rng.choice(["id", "conv", "role", "time", "covered by", "snippet", "title", "数据"])
        for _ in range(rng.randint(1, 6))
    ]
    kinds = [rng.random() for _ in headers]
    rows: list[list[Any]] = []
    for _ in range(rng.randint(0, 5)):
        row: list[Any] = []
        for kind in kinds:
            pick = rng.random()
            if kind < 0.2:
                row.append(rng.randint(0, 10**6))
            elif kind < 0.3:
                row.append(f"2025-01-08T18:{rng.randint(0, 59):02d}:00Z")
            elif pick < 0.1:
                row.append(None)
            elif pick < 0.2:
                row.append(rng.randint(0, 10**7))
            elif pick < 0.25:
                row.append(rng.choice([True, False]))
            else:
                row.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 20))))
        rows.append(row)
    return headers, rows, [h for h in headers if rng.random() < 0.2]


@pytest.mark.parametrize("width", [None, 60, 80, 100, 120, 160])
def test_tables_are_laid_out_as_rich_laid_them_out(
    width: int | None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if width is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setenv("NO_COLOR", "1")
    rng = random.Random(width or 0)
    for _ in range(150):
        headers, rows, one_line = generated(rng)
        output.print_table(headers, rows, max_width=100, one_line=one_line)
        ours = capsys.readouterr().out
        assert ours == rich_table(headers, rows, width, one_line), (headers, rows, one_line)
