"""Lossless's tables in a Codex ``config.toml``: added as a marked block, removed table by table.

The file is edited as text so the user's comments and layout survive. What
lossless writes sits between two marker comments, and every table header it
writes carries a ``# lossless`` tag. Removal takes out exactly the tagged
tables the caller owns (plus, from installs before the tag existed, an
untagged ``[mcp_servers.lcm]`` between the markers) and the marker lines;
every other table stays where it is, even one a client wrote *inside* the
markers: Codex's own writer appends new tables before the file's trailing
comments, so a table it adds after lossless's block lands above the end
marker. A removal that would change any other setting is refused.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lossless.errors import ConfigError

TAG = "# lossless"
END = "# <<< lossless <<<"
MARKER_PREFIX = "# >>> lossless"
_HEADER_RE = re.compile(r"^\s*\[\[?(?P<key>[^\[\]#]+?)\]\]?\s*(?:#(?P<comment>.*))?$")

TablePath = tuple[str, ...]
# Whether lossless owns a table: (path, header tagged, between the markers, its value).
Owns = Callable[[TablePath, bool, bool, Any], bool]


@dataclass(frozen=True, slots=True)
class Table:
    """One table lossless writes: its dotted path and ``key = value`` lines."""

    path: TablePath
    lines: Sequence[str]

    def render(self) -> str:
        header = ".".join(_render_key(part) for part in self.path)
        return "\n".join([f"[{header}]  {TAG}", *self.lines]) + "\n"


def _render_key(part: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_-]+", part):
        return part
    import json

    return json.dumps(part, ensure_ascii=False)


def render_block(begin: str, tables: Sequence[Table]) -> str:
    body = "\n".join(table.render() for table in tables)
    return f"{begin}\n{body}{END}\n"


def parse(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid TOML ({exc}); lossless will not rewrite a file it cannot "
            "read: fix it, then run the command again"
        ) from None


def _header(line: str) -> tuple[TablePath, bool] | None:
    """(path, tagged) when ``line`` is a table header."""
    match = _HEADER_RE.match(line)
    if match is None:
        return None
    try:
        parsed = tomllib.loads(f"[{match.group('key')}]")
    except tomllib.TOMLDecodeError:
        return None
    path: list[str] = []
    node: Any = parsed
    while isinstance(node, dict) and len(node) == 1:
        key = next(iter(node))
        path.append(key)
        node = node[key]
    comment = (match.group("comment") or "").strip()
    return tuple(path), comment == TAG.lstrip("# ").strip() or comment.startswith("lossless")


def remove(text: str, begin: str, owns: Owns) -> tuple[str, list[TablePath]]:
    """``text`` without the tables ``owns`` claims and the block markers of ``begin``;
    also the paths of the tables taken out."""
    lines = text.splitlines(keepends=True)
    drop = [False] * len(lines)
    removed: list[TablePath] = []
    data = tomllib.loads(text)
    in_block = False
    in_other_block = False
    current_owned = False
    for index, line in enumerate(lines):
        stripped = line.strip()
        if stripped == begin.strip():
            in_block, current_owned = True, False
            drop[index] = True
            continue
        if stripped.startswith(MARKER_PREFIX):
            in_other_block, current_owned = True, False
            continue
        if stripped == END:
            # Codex's writer may have dropped the begin marker (it rewrites a
            # table it edits), leaving a bare end marker: it goes too.
            drop[index] = in_block or not in_other_block
            in_block = in_other_block = current_owned = False
            continue
        header = _header(line)
        if header is not None:
            path, tagged = header
            current_owned = owns(path, tagged, in_block, lookup(data, path))
            drop[index] = current_owned
            if current_owned:
                removed.append(path)
            continue
        if current_owned and stripped and not stripped.startswith("#"):
            drop[index] = True
    # Blank lines between two removed lines (or a removed line and the end of
    # the file) go too, and so does the one blank line the installer puts
    # before a block.
    index = 0
    while index < len(lines):
        if lines[index].strip() or drop[index]:
            index += 1
            continue
        end = index
        while end < len(lines) and not lines[end].strip() and not drop[end]:
            end += 1
        before_dropped = index == 0 or drop[index - 1]
        after_dropped = end == len(lines) or drop[end]
        if before_dropped and after_dropped:
            for k in range(index, end):
                drop[k] = True
        elif after_dropped and end < len(lines) and lines[end].strip() == begin.strip():
            drop[end - 1] = True
        index = end
    kept = "".join(line for line, dropped in zip(lines, drop, strict=True) if not dropped)
    return kept, removed


def without(data: dict[str, Any], paths: Sequence[TablePath]) -> dict[str, Any]:
    """A copy of parsed TOML without the tables at ``paths`` (and containers left empty)."""
    import copy

    out = copy.deepcopy(data)
    for path in paths:
        trail: list[tuple[dict[str, Any], str]] = []
        node: Any = out
        for part in path[:-1]:
            if not isinstance(node, dict) or part not in node:
                node = None
                break
            trail.append((node, part))
            node = node[part]
        if isinstance(node, dict) and path[-1] in node:
            del node[path[-1]]
            for parent, key in reversed(trail):
                if parent[key] == {}:
                    del parent[key]
    return out


def lookup(data: dict[str, Any], path: TablePath) -> Any:
    node: Any = data
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node


def edit(
    path: Path,
    text: str,
    begin: str,
    owns: Owns,
    *,
    tables: Sequence[Table] = (),
    taken: Callable[[TablePath, Any], str] | None = None,
) -> str:
    """The new text: lossless's old tables out, ``tables`` (if any) appended as a block.

    Refuses (ConfigError) when taking lossless's tables out would change
    anything else, or when a table to write already exists outside what
    lossless owns (``taken`` words that message).
    """
    before = parse(path, text)
    stripped, removed = remove(text, begin, owns)
    after_removal = parse(path, stripped)
    if after_removal != without(before, removed):
        raise ConfigError(
            f"cannot take lossless's tables out of {path} without changing other settings "
            f"there; remove the tables tagged '{TAG}' by hand, then run the command again"
        )
    for table in tables:
        existing = lookup(after_removal, table.path)
        if existing is not None:
            name = ".".join(table.path)
            raise ConfigError(
                taken(table.path, existing)
                if taken is not None
                else f"{path} already defines [{name}]; remove it, then install again"
            )
    if not tables:
        return stripped
    if stripped and not stripped.endswith("\n"):
        stripped += "\n"
    after = stripped + ("\n" if stripped else "") + render_block(begin, tables)
    merged = parse(path, after)
    for table in tables:
        if not isinstance(lookup(merged, table.path), dict):
            raise ConfigError(
                f"internal: the table {'.'.join(table.path)} written to {path} is lost"
            )
    return after
