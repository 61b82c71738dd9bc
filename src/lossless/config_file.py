"""``$LCM_HOME/config.toml``: read it line-tolerantly, edit it keeping the user's text.

Reading: one typo must not cost every other setting. A line TOML cannot
parse is reported (``ConfigProblem`` with its line number) and left out, and
the rest of the file is read again; the settings of the lines that parse
still apply. Unknown names and bad values are reported by ``load_config``
with the line found here.

Editing (``lcm config set/unset``): the file is changed one line at a time,
so comments, blank lines, the order of settings and anything else the user
wrote stay as they were. Only a setting's own line is replaced, added (under
its ``[section]``, created at the end when missing) or removed.

``tomllib`` is imported only when a file exists: most homes have none, and
every hook loads the configuration.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Lines left out of a broken file before giving up on it: a file this broken
# is not a typo, and re-parsing it line after line would only cost time.
MAX_BAD_LINES = 20

_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\-\" ]+?)\s*\]\s*(#.*)?$")
_KEY = re.compile(r"^\s*(\"[^\"]+\"|[A-Za-z0-9_.\-]+)\s*=")
_POSITION = re.compile(r"\s*\(at line (\d+), column \d+\)")


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One thing wrong in the configuration, and where."""

    source: str
    message: str
    line: int | None = None

    def describe(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: {self.message}"


def read_file(path: Path) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """The file's tables, and a problem per line that had to be left out."""
    import tomllib

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return {}, [ConfigProblem(str(path), f"cannot read the file: {exc}")]
    lines = text.splitlines()
    problems: list[ConfigProblem] = []
    while True:
        try:
            return tomllib.loads("\n".join(lines)), problems
        except tomllib.TOMLDecodeError as exc:
            found = _POSITION.search(str(exc))
            reason = _POSITION.sub("", str(exc))
            number = int(found.group(1)) if found else 0
            if not 1 <= number <= len(lines) or not lines[number - 1].strip():
                # A problem no single line holds (an unclosed string running to
                # the end): nothing of the file can be trusted.
                problems.append(ConfigProblem(str(path), f"not valid TOML: {reason}", number))
                return {}, problems
            shown = lines[number - 1].strip()
            problems.append(
                ConfigProblem(str(path), f"not valid TOML ({reason}): {shown!r}", number)
            )
            lines[number - 1] = ""
            if len(problems) >= MAX_BAD_LINES:
                problems.append(ConfigProblem(str(path), "too many broken lines; file ignored"))
                return {}, problems


def _unquote(key: str) -> str:
    return key[1:-1] if key.startswith('"') and key.endswith('"') else key


def _entries(lines: list[str]) -> list[tuple[int, str]]:
    """(index, dotted name) of every ``key = value`` line, with its table's name."""
    table = ""
    found: list[tuple[int, str]] = []
    for index, line in enumerate(lines):
        header = _HEADER.match(line)
        if header:
            table = ".".join(_unquote(p.strip()) for p in header.group(1).split("."))
            continue
        key = _KEY.match(line)
        if key:
            name = _unquote(key.group(1))
            found.append((index, f"{table}.{name}" if table else name))
    return found


def line_of(path: Path, name: str) -> int | None:
    """The 1-based line that sets ``name`` in the file, if one does."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    hits = [index for index, dotted in _entries(lines) if dotted == name]
    return hits[-1] + 1 if hits else None


def toml_value(value: Any) -> str:
    """``value`` (a coerced setting: str, int, float or bool) as a TOML literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    # JSON's string escapes are valid in a TOML basic string.
    return json.dumps(str(value), ensure_ascii=False)


def set_value(path: Path, name: str, literal: str) -> None:
    """Write ``name = literal`` into the file, replacing the line that sets it, if any."""
    lines = _lines(path)
    hits = [index for index, dotted in _entries(lines) if dotted == name]
    table, _, key = name.rpartition(".")
    if hits:
        index = hits[-1]
        old = lines[index]
        comment = _trailing_comment(old)
        indent = old[: len(old) - len(old.lstrip())]
        written = _KEY.match(old)
        assert written is not None
        lines[index] = f"{indent}{written.group(1)} = {literal}" + (
            f"  {comment}" if comment else ""
        )
        for extra in reversed(hits[:-1]):
            del lines[extra]
    else:
        lines = _insert(lines, table, f"{key} = {literal}")
    _write(path, lines)


def unset_value(path: Path, name: str) -> bool:
    """Remove the lines that set ``name``; False if none did."""
    lines = _lines(path)
    hits = [index for index, dotted in _entries(lines) if dotted == name]
    for index in reversed(hits):
        del lines[index]
    if hits:
        _write(path, lines)
    return bool(hits)


def _insert(lines: list[str], table: str, entry: str) -> list[str]:
    """``entry`` at the end of ``[table]`` (or of the top level), added when missing."""
    starts: dict[str, int] = {}
    order: list[tuple[int, str]] = []
    for index, line in enumerate(lines):
        header = _HEADER.match(line)
        if header:
            name = ".".join(_unquote(p.strip()) for p in header.group(1).split("."))
            starts.setdefault(name, index)
            order.append((index, name))
    if not table:
        # Top-level keys must come before the first table.
        end = order[0][0] if order else len(lines)
    elif table in starts:
        following = [i for i, _ in order if i > starts[table]]
        end = following[0] if following else len(lines)
    else:
        block = ([""] if lines and lines[-1].strip() else []) + [f"[{table}]", entry]
        return lines + block
    # After the section's last non-blank line, so a blank line before the next
    # header stays where the user put it.
    while end > 0 and not lines[end - 1].strip():
        end -= 1
    return [*lines[:end], entry, *lines[end:]]


def _trailing_comment(line: str) -> str:
    """The ``# ...`` after a value, outside of any quoted string."""
    quote: str | None = None
    escaped = False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\" and quote == '"':
            escaped = True
        elif quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "#":
            return line[index:].strip()
    return ""


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []


def _write(path: Path, lines: list[str]) -> None:
    """Replace the file whole (a temporary file renamed over it), mode 0600: it may hold keys."""
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n" if lines else "")
    os.replace(temporary, path)
