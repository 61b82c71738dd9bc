"""Standard modules a command's imports bring in but its work never uses, executed when first used.

``dataclasses`` imports ``inspect`` at its top (Python 3.11; and with it
``ast``, ``dis``, ``tokenize`` and ``linecache``: ~4 ms of every command's
start) and uses it only to call ``inspect.signature`` for a class without a
docstring, to write it one. ``urllib.parse``, which ``pathlib`` imports,
imports ``ipaddress`` (~1 ms) for URLs with a bracketed host only.

``defer`` puts each of them in ``sys.modules`` unexecuted, before the module
that imports it is imported; it executes in place (the same module object, so
whoever imported it holds the real module) when a name it does not hold yet
is first asked for. The records on the start-up path of ``lcm grep``,
``describe`` and ``status`` have docstrings, so those commands execute
neither (``tests/cli/test_lazy_commands.py``); any other use executes it as
an import would have.

Not ``importlib.util.LazyLoader``: on Python 3.11 an ``import`` of a module
already in ``sys.modules`` reads its ``__spec__``, which executes a
LazyLoader module at once. ``load`` executes them now: before click's
commands run, which may start threads (two threads must not execute one at
once).
"""

from __future__ import annotations

import sys
import types
from typing import Any

# A module deferred -> the module whose import would execute it.
DEFERRED = {"inspect": "dataclasses", "ipaddress": "urllib.parse"}


class _Deferred(types.ModuleType):
    """A module whose code runs at the first look-up of a name it lacks.

    Its ``__spec__``, ``__name__``, ``__file__`` (what ``import`` reads) are set
    by ``module_from_spec``; only other names reach ``__getattr__``.
    """

    def __getattr__(self, name: str) -> Any:
        _execute(self)
        return getattr(self, name)


def _execute(module: types.ModuleType) -> None:
    module.__class__ = types.ModuleType  # executed once, then a plain module
    spec = module.__spec__
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(module)


def defer() -> list[str]:
    """Defer each of ``DEFERRED`` that nothing has imported yet (nor its importer): their names."""
    import importlib.util

    deferred = []
    for name, importer in DEFERRED.items():
        if name in sys.modules or importer in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        module.__class__ = _Deferred
        sys.modules[name] = module
        deferred.append(name)
    return deferred


def is_deferred(module: object) -> bool:
    """Whether ``module`` is one of these, not executed yet."""
    return isinstance(module, _Deferred)


def load() -> None:
    """Execute every deferred module now (nothing to do for one not deferred)."""
    for name in DEFERRED:
        module = sys.modules.get(name)
        if isinstance(module, _Deferred):
            _execute(module)
