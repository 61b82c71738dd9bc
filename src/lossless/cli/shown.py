"""Stored text on the user's screen: exact through a pipe, inert on a terminal.

Transcripts hold what tools printed and what agents read, terminal codes
among it, and some of those are hostile: OSC 52 writes the user's clipboard,
a title sequence renames the window, a bare carriage return or a bidi
override makes a line read as something it is not. A terminal acts on them,
so on a terminal every control character but newline and tab is shown as an
escape (``\\x1b``, ``\\r``, ``\\u202e``) and does nothing. Through a pipe or
into a file nothing is changed: ``lcm describe 12 > message.txt`` gets the
stored text byte for byte.

click's ``echo`` does the opposite of both (it strips colour codes on a pipe
and passes everything to a terminal), so stored text never goes through it:
the CLI prints it with ``show``, and tables and wrapped lines (``cli.output``)
make their cells inert the same way.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

# C0 controls but tab and newline, DEL, C1 controls (U+0080-U+009F: a UTF-8
# terminal may act on them as on their ESC forms), and the bidi embeddings,
# overrides and isolates, which reorder what a line shows.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str) -> str:
    """``text`` with every control character but newline and tab shown as an escape."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(_escape, text)


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: not a terminal
        return False


def for_stream(text: str, stream: TextIO) -> str:
    """``text`` as it may be written to ``stream``: inert on a terminal, else as it is."""
    return inert(text) if is_terminal(stream) else text


def show(text: str = "", *, err: bool = False) -> None:
    """Print stored ``text`` and a newline on stdout (or stderr): see the module."""
    stream = sys.stderr if err else sys.stdout
    stream.write(for_stream(text, stream) + "\n")
    stream.flush()
