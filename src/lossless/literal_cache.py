"""The literal sets of the detector's patterns, kept from one process to the next.

``regex_literals.required_literals`` reads, off each parsed pattern, the
strings any match must contain; the injection detector's gates need them for
its ~120 patterns, and reading them (CPython's regex parser, then the walk
over the parsed pattern, both pure Python) costs the first ``scan`` in a
process some 30 ms of CPU: every hook that surfaces a memory, the MCP
server's first recall. The sets depend only on the pattern, its flags, the
whitespace the texts may hold, the interpreter's parser and the derivation's
own code, so they are kept in a file beside ``regex_cache``'s, keyed by all
of those:

- an entry is looked up by the exact pattern text, flags and whitespace set,
  so a changed pattern is simply a miss (and derived again);
- the file's header holds the exact interpreter and a hash of
  ``regex_literals.py``'s source, so another Python or a changed derivation
  reads nothing from it;
- only the patterns of a gate built with ``kept=True`` (code's own constants,
  never a user's pattern) are stored;
- written atomically, not at all under ``PYTHONDONTWRITEBYTECODE`` (as Python
  does with its ``.pyc``); a missing, unreadable, stale or corrupt file, or an
  entry of the wrong shape, is a miss: the sets are derived as without it.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
from pathlib import Path
from typing import Any

Key = tuple[str, int, frozenset[str] | None]
Literals = tuple[frozenset[str], ...]

_MAX_ENTRIES = 1000  # the detector has ~120 patterns: room for a few versions of them


def cache_path() -> Path | None:
    """Where the kept sets live: beside the kept compiled patterns."""
    from lossless import regex_cache

    beside = regex_cache.cache_path()
    if beside is None:
        return None
    return beside.with_name(f"regex-literals.{sys.implementation.cache_tag}.marshal")


def _header(derivation: Path) -> tuple[Any, ...] | None:
    """The interpreter and the derivation's source hash; None when unreadable."""
    import importlib.util

    try:
        source = derivation.read_bytes()
    except OSError:
        return None
    return (sys.version, sys.hexversion, importlib.util.source_hash(source))


def _valid(value: object) -> bool:
    return isinstance(value, tuple) and all(
        isinstance(options, frozenset) and all(isinstance(s, str) for s in options)
        for options in value
    )


class KeptLiterals:
    """The kept sets, read on first use (a process that never builds a gate reads nothing)."""

    def __init__(self, derivation: Path, path: Path | None = None) -> None:
        """``derivation``: the source file whose code computes the sets."""
        self._derivation = derivation
        self._path = path
        self._loaded = False
        self._header: tuple[Any, ...] | None = None
        self._kept: dict[Key, Literals] = {}
        self._new: dict[Key, Literals] = {}

    def _load(self) -> None:
        self._loaded = True
        if self._path is None:
            self._path = cache_path()
        self._header = _header(self._derivation)
        if self._path is None or self._header is None:
            return
        with contextlib.suppress(Exception):  # a miss: the sets are derived
            header, entries = marshal.loads(self._path.read_bytes())
            if header == self._header and isinstance(entries, dict):
                self._kept = entries

    def get(self, key: Key) -> Literals | None:
        if not self._loaded:
            self._load()
        found = self._kept.get(key)
        return found if _valid(found) else None

    def add(self, key: Key, literals: Literals) -> None:
        self._new[key] = literals

    def keep(self) -> int:
        """Store the sets derived since the last call with the kept ones; how many were new."""
        new, self._new = self._new, {}
        if not new or sys.dont_write_bytecode:
            return 0
        if not self._loaded:
            self._load()
        if self._path is None or self._header is None:
            return 0
        # Re-read: another process may have kept sets since this one loaded.
        entries: dict[Key, Literals] = {}
        with contextlib.suppress(Exception):
            header, old = marshal.loads(self._path.read_bytes())
            if header == self._header and isinstance(old, dict):
                entries = old
        entries.update(new)
        if len(entries) > _MAX_ENTRIES:
            entries = dict(list(entries.items())[-_MAX_ENTRIES:])
        self._kept = entries
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._path.with_name(f"{self._path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(marshal.dumps((self._header, entries)))
            os.replace(tmp, self._path)
        except (OSError, ValueError):
            return 0  # a read-only install only costs the next process its speed
        return len(new)
