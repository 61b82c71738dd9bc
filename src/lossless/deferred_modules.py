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
LazyLoader module at once (and its first look-up is not safe from two
threads there). Here one lock serialises the execution: a thread that asks
meanwhile waits, then finds the module whole. ``load`` executes them now:
before click's commands run.
"""

from __future__ import annotations

import _thread
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
        if not _execute(self):
            # Asked by its own code while it runs: not there yet, as in any
            # module being imported.
            raise AttributeError(f"partially executed module {self.__name__!r} has no {name!r}")
        return getattr(self, name)


# Reentrant: a module's own code may look itself up while it runs.
_lock = _thread.RLock()
_running: set[str] = set()


def _execute(module: types.ModuleType) -> bool:
    """Run a deferred module's code (once); False while that code is running in this thread."""
    with _lock:
        if not isinstance(module, _Deferred):
            return True  # executed meanwhile (by another thread)
        if module.__name__ in _running:
            return False
        _running.add(module.__name__)
        try:
            spec = module.__spec__
            assert spec is not None and spec.loader is not None
            spec.loader.exec_module(module)
        finally:
            _running.discard(module.__name__)
            plain: types.ModuleType = module
            plain.__class__ = types.ModuleType  # from now on a plain module
        return True


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
