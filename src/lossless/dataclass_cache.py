"""The code ``@dataclass`` generates, compiled once and kept for the next hook.

``dataclasses`` writes each class's ``__init__``, ``__repr__``, ``__eq__``,
``__hash__`` and (frozen) ``__setattr__``/``__delattr__`` as source text and
compiles it with ``exec`` when the class is defined; no ``.pyc`` holds the
result. The ~60 records on a hook's import path (models, the store contract,
ingest) cost it about 30 ms of CPU that way on every agent turn, close to half
of its own work. The text depends only on the class's fields and options, so
``install`` gives the ``dataclasses`` module an ``exec`` that compiles a text
only the first time it sees it (later: the code object kept by an earlier
process), and ``keep`` stores the new code objects for the next one.

What is kept is what ``.pyc`` files hold: code objects (``marshal``), compiled
by this very interpreter from text ``dataclasses`` generated (names of fields
and types, never a field's value: defaults are passed to that code, not
written into it). The file lives beside this package's bytecode, keyed by the
exact interpreter and bytecode version, written atomically (not at all under
``PYTHONDONTWRITEBYTECODE``); a missing, stale or corrupt file is a miss.

Each code object is kept as its own ``marshal`` bytes and read only when its
text comes up: the file holds the methods of every record any command, hook
or server of this install met (1,264 in a checkout after a test run, 1.4 MB),
and a command uses a few hundred; reading them all cost every start ~5 ms of
CPU, reading the bytes ~1 ms.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import marshal
import os
import sys
import types
from pathlib import Path
from typing import Any

_MAX_ENTRIES = 2000
_state: dict[str, Any] = {}


def cache_path() -> Path | None:
    """Where the kept code lives: beside this package's bytecode."""
    import importlib.util

    try:
        bytecode = importlib.util.cache_from_source(__file__)
    except (NotImplementedError, ValueError):
        return None
    return Path(bytecode).with_name(f"dataclass-code.{sys.implementation.cache_tag}.marshal")


def _interpreter() -> tuple[Any, ...]:
    import importlib.util

    # The last item names the entries' form (a file of an earlier form is a miss).
    return (sys.version, sys.hexversion, importlib.util.MAGIC_NUMBER, "marshalled code")


def install(path: Path | None = None) -> int:
    """Give ``dataclasses`` a compiling ``exec`` that reuses kept code; how many were loaded."""
    if "path" in _state or hasattr(dataclasses, "exec"):
        return 0
    path = path if path is not None else cache_path()
    if path is None:
        return 0
    kept: dict[str, bytes] = {}
    with contextlib.suppress(Exception):
        header, entries = marshal.loads(path.read_bytes())
        if header == _interpreter() and isinstance(entries, dict):
            kept = entries
    new: dict[str, Any] = {}
    _state.update(path=path, kept=kept, new=new)

    def compiling_exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
        if isinstance(source, str):
            code = _kept_code(kept.get(source))
            if code is None:
                code = compile(source, "<string>", "exec")
                new[source] = code
            source = code
        builtins.exec(source, globals, locals)

    # A module global named `exec` shadows the builtin for dataclasses' own calls only.
    dataclasses.exec = compiling_exec  # type: ignore[attr-defined]
    return len(kept)


def _kept_code(blob: bytes | None) -> types.CodeType | None:
    """The code object kept as ``blob``; None for none or a corrupt one (a miss)."""
    if blob is None:
        return None
    try:
        code = marshal.loads(blob)
    except Exception:
        return None
    return code if isinstance(code, types.CodeType) else None


def keep() -> int:
    """Store the code compiled since ``install`` with what was kept; how many were added."""
    path: Path | None = _state.get("path")
    new: dict[str, Any] = _state.get("new", {})
    if path is None or not new or sys.dont_write_bytecode:  # as Python does with its .pyc
        return 0
    entries = {**_state["kept"], **{source: marshal.dumps(code) for source, code in new.items()}}
    if len(entries) > _MAX_ENTRIES:
        entries = dict(list(entries.items())[-_MAX_ENTRIES:])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps((_interpreter(), entries)))
        os.replace(tmp, path)
    except (OSError, ValueError):
        return 0  # a read-only install only costs the next hook its speed
    return len(new)


def uninstall() -> None:
    """``dataclasses`` back to the builtin ``exec``."""
    if "path" in _state:
        with contextlib.suppress(AttributeError):
            del dataclasses.exec  # type: ignore[attr-defined]
    _state.clear()
