"""``inspect`` loaded when first used, not when ``dataclasses`` is imported.

``dataclasses`` imports ``inspect`` at its top (and with it ``ast``, ``dis``,
``tokenize`` and ``linecache``: ~4 ms of every command's start), and uses it
only to call ``inspect.signature`` for a class without a docstring, to write
it one. ``defer`` puts in ``sys.modules`` an ``inspect`` module not executed
yet, which executes in place (the same module object, so whoever imported it
holds the real module) when a name it does not hold yet is first asked for.
The records on the start-up path of ``lcm grep``, ``describe`` and
``status`` have docstrings, so those commands never execute it
(``tests/cli/test_lazy_commands.py``); any other use loads it as before.

Not ``importlib.util.LazyLoader``: on Python 3.11 an ``import`` of a module
already in ``sys.modules`` reads its ``__spec__``, which loads a LazyLoader
module at once. ``load`` executes it now: before click's commands run, which
may start threads (two threads must not execute it at once).
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _Deferred(types.ModuleType):
    """A module whose code runs at the first look-up of a name it lacks.

    Its ``__spec__``, ``__name__``, ``__file__`` (what ``import`` reads) are set
    by ``module_from_spec``; only other names reach ``__getattr__``.
    """

    def __getattr__(self, name: str) -> Any:
        module: types.ModuleType = self
        module.__class__ = types.ModuleType  # executed once, then a plain module
        spec = module.__spec__
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(module)
        return getattr(module, name)


def defer() -> bool:
    """Make ``inspect`` deferred if nothing has imported it (nor ``dataclasses``) yet."""
    if "inspect" in sys.modules or "dataclasses" in sys.modules:
        return False
    import importlib.util

    spec = importlib.util.find_spec("inspect")
    if spec is None or spec.loader is None:
        return False
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _Deferred
    sys.modules["inspect"] = module
    return True


def load() -> None:
    """Execute a deferred ``inspect`` now (nothing to do if it is not deferred)."""
    module = sys.modules.get("inspect")
    if isinstance(module, _Deferred):
        getattr(module, "signature")  # noqa: B009 - the look-up is what executes it
