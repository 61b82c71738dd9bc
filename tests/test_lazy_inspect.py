"""``lossless.lazy_inspect``: ``dataclasses`` without executing ``inspect``, and
``inspect`` whole as soon as anything uses it.

Each case runs in a fresh interpreter: deferring works only before anything
imports ``inspect`` or ``dataclasses``, and changes ``sys.modules`` for good.
"""

from __future__ import annotations

import json
import subprocess
import sys

_CASE = """
import json, sys
from lossless import lazy_inspect
deferred = lazy_inspect.defer()
import dataclasses

@dataclasses.dataclass(frozen=True, slots=True)
class Documented:
    \"\"\"A record with its own docstring.\"\"\"
    a: int
    b: str = "x"

report = {"deferred": deferred, "executed_by_documented": "ast" in sys.modules}

@dataclasses.dataclass
class Undocumented:
    a: int
    b: str = "x"

report["executed_by_undocumented"] = "ast" in sys.modules
report["generated_doc"] = Undocumented.__doc__
import inspect
report["same_module"] = inspect is dataclasses.inspect is sys.modules["inspect"]
report["signature"] = str(inspect.signature(Documented))
report["again"] = lazy_inspect.defer()
lazy_inspect.load()
print(json.dumps(report))
"""


def _run(script: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_inspect_runs_only_when_a_dataclass_needs_it() -> None:
    report = _run(_CASE)
    assert report["deferred"] is True
    # A class with a docstring is made without inspect's code ...
    assert report["executed_by_documented"] is False
    # ... one without gets the docstring dataclasses always wrote it, from inspect.
    assert report["executed_by_undocumented"] is True
    assert report["generated_doc"] == "Undocumented(a: int, b: str = 'x')"
    # One module object throughout: whoever imported it holds the real one.
    assert report["same_module"] is True
    assert report["signature"] == "(a: int, b: str = 'x') -> None"
    # Once inspect is imported, there is nothing left to defer.
    assert report["again"] is False


def test_load_executes_it_and_import_reads_it_without_executing() -> None:
    report = _run(
        "import json, sys\n"
        "from lossless import lazy_inspect\n"
        "lazy_inspect.defer()\n"
        "import inspect\n"  # reads __spec__, which must not execute it
        "from inspect import isclass as _\n"  # a name it lacks: executes it
        "executed = 'ast' in sys.modules\n"
        "lazy_inspect.load()\n"
        "print(json.dumps({'executed': executed, 'plain': type(inspect).__name__,"
        " 'doc': bool(inspect.__doc__), 'getsource': callable(inspect.getsource)}))\n"
    )
    assert report == {"executed": True, "plain": "module", "doc": True, "getsource": True}
    report = _run(
        "import json, sys\n"
        "from lossless import lazy_inspect\n"
        "lazy_inspect.defer()\n"
        "import inspect\n"
        "before = 'ast' in sys.modules\n"
        "lazy_inspect.load()\n"
        "print(json.dumps({'before': before, 'after': 'ast' in sys.modules,"
        " 'plain': type(inspect).__name__}))\n"
    )
    assert report == {"before": False, "after": True, "plain": "module"}


def test_nothing_is_deferred_once_dataclasses_is_imported() -> None:
    report = _run(
        "import json, sys, dataclasses\n"
        "from lossless import lazy_inspect\n"
        "print(json.dumps({'deferred': lazy_inspect.defer(),"
        " 'plain': type(sys.modules['inspect']).__name__}))\n"
    )
    assert report == {"deferred": False, "plain": "module"}
