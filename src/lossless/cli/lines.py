"""Where a command's output lines go, shared by its click command and its
click-free start (``cli/fast_path.py``), so both print the same bytes."""

from __future__ import annotations

from typing import Any, Protocol


class Lines(Protocol):
    """Where a command's output goes."""

    def line(self, text: str) -> None: ...

    def wrapped(self, text: str, *, indent: int = 0, status: str | None = None) -> None: ...

    def emit(self, value: Any) -> None: ...


class PrintedLines:
    """Lines printed as they come: stored text in them exact through a pipe and
    inert on a terminal (``cli.shown``)."""

    def line(self, text: str) -> None:
        from lossless.cli.shown import show

        show(text)

    def wrapped(self, text: str, *, indent: int = 0, status: str | None = None) -> None:
        from lossless.cli.output import wrapped

        wrapped(text, indent=indent, status=status)

    def emit(self, value: Any) -> None:
        from lossless.cli.output import print_json

        print_json(value)
