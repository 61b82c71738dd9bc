"""Compiled regular expressions kept from one hook process to the next.

A hook is a new process on every agent turn, and ``re`` parses and compiles
in pure Python: the patterns the hook path's modules compile at import (the
secret detectors, the injection and quotation detectors, recall) cost a hook
more CPU than its own work. What ``re`` hands the C engine for a pattern
(``_sre.compile``: the opcode list, the group count and names) depends only on
the pattern, its flags and the interpreter. So ``install`` puts the patterns
kept by an earlier hook into ``re``'s own cache (their ``re.compile`` is then
a dictionary hit) and notes the patterns compiled while a ``lossless`` module
is being imported; ``keep`` stores those for the next process.

Safe by construction:
- only patterns compiled by module code at import are kept, never one made
  at run time (a search pattern, a prompt's words, a user's pattern);
- an entry is stored only after the pattern rebuilt from it compares equal
  to ``re.compile``'s own (same pattern, flags and code), so a Python whose
  ``re`` internals differ simply stores nothing;
- the file lives where Python keeps this package's bytecode (``__pycache__``,
  or ``sys.pycache_prefix``), is keyed by the exact interpreter, written
  atomically (and not at all under ``PYTHONDONTWRITEBYTECODE``), and a
  missing, unreadable, stale or corrupt file is a miss.
"""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]  # re's C engine, always loaded with re
import contextlib
import marshal
import os
import re
import sys
from pathlib import Path
from typing import Any

_MAX_ENTRIES = 400  # far below re's own cache (512), which must hold them all
_state: dict[str, Any] = {}


def cache_path() -> Path | None:
    """Where the kept patterns live: beside this package's bytecode."""
    import importlib.util

    try:
        bytecode = importlib.util.cache_from_source(__file__)
    except (NotImplementedError, ValueError):
        return None  # no bytecode cache in this interpreter
    return Path(bytecode).with_name(f"regex-cache.{sys.implementation.cache_tag}.marshal")


def _interpreter() -> tuple[Any, ...]:
    return (sys.version, sys.hexversion, _sre.MAGIC, _sre.CODESIZE)


def install(path: Path | None = None) -> int:
    """Seed ``re``'s cache from the kept patterns; note the ones compiled at
    import from now on. Returns how many were seeded."""
    if "path" in _state or not isinstance(getattr(re, "_cache", None), dict):
        return 0
    path = path if path is not None else cache_path()
    if path is None:
        return 0
    _state["path"] = path
    seeded = 0
    try:
        header, entries = marshal.loads(path.read_bytes())
        if header == _interpreter():
            for pattern, flags, args in entries:
                re._cache[(str, pattern, flags)] = _sre.compile(pattern, *args)  # type: ignore[attr-defined]
                seeded += 1
    except Exception:  # a miss: the patterns compile as usual
        pass
    _state["seeded"] = seeded
    _state["new"] = []
    original = re._compile  # type: ignore[attr-defined]

    def noting(pattern: Any, flags: Any) -> Any:
        cache = re._cache  # type: ignore[attr-defined]
        fresh = isinstance(pattern, str) and (str, pattern, flags) not in cache
        if fresh and _inside_lossless_import():
            _state["new"].append((pattern, int(flags)))
        return original(pattern, flags)

    re._compile = noting  # type: ignore[attr-defined]
    _state["original"] = original
    return seeded


def _inside_lossless_import() -> bool:
    """Whether a ``lossless`` module's top-level code is running (it runs only at import)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and str(
            frame.f_globals.get("__name__", "")
        ).startswith("lossless."):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def keep() -> int:
    """Store the kept patterns plus those compiled at import since ``install``,
    when there are any of the latter. Returns how many were added."""
    path: Path | None = _state.get("path")
    new: list[tuple[str, int]] = _state.get("new", [])
    if path is None or not new or sys.dont_write_bytecode:  # as Python does with its .pyc
        return 0
    from re import _compiler, _parser  # type: ignore[attr-defined]

    entries: dict[tuple[str, int], tuple[Any, ...]] = {}
    with contextlib.suppress(Exception):
        header, old = marshal.loads(path.read_bytes())
        if header == _interpreter():
            entries = {(p, f): args for p, f, args in old}
    added = 0
    for pattern, flags in new:
        try:
            # What re._compiler.compile hands _sre.compile, rebuilt and checked.
            parsed = _parser.parse(pattern, flags)
            code = [int(op) for op in _compiler._code(parsed, flags)]
            groupindex = {str(k): int(v) for k, v in parsed.state.groupdict.items()}
            indexgroup: list[str | None] = [None] * parsed.state.groups
            for name, index in groupindex.items():
                indexgroup[index] = name
            args = (
                int(flags | parsed.state.flags),
                code,
                int(parsed.state.groups - 1),
                groupindex,
                tuple(indexgroup),
            )
            if _sre.compile(pattern, *args) != re.compile(pattern, flags):
                continue
        except Exception:
            continue
        entries[(pattern, flags)] = args
        added += 1
    if not added:
        return 0
    kept = [(p, f, args) for (p, f), args in list(entries.items())[-_MAX_ENTRIES:]]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps((_interpreter(), kept)))
        os.replace(tmp, path)
    except OSError:
        return 0  # a read-only install only costs the next hook its speed
    return added


def uninstall() -> None:
    """Back to ``re`` as it was (the seeded patterns stay in its cache)."""
    original = _state.pop("original", None)
    if original is not None:
        re._compile = original  # type: ignore[attr-defined]
    _state.clear()
