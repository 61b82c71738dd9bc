"""``lossless.deferred_modules``: ``dataclasses`` without executing ``inspect``,
``urllib.parse`` without ``ipaddress``, and each whole as soon as anything uses it.

Each case runs in a fresh interpreter: deferring works only before anything
imports ``inspect`` or ``dataclasses``, and changes ``sys.modules`` for good.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_CASE = """
import json, sys
from lossless import deferred_modules
deferred = deferred_modules.defer()
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
report["again"] = deferred_modules.defer()
deferred_modules.load()
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
    assert report["deferred"] == ["inspect", "ipaddress"]
    # A class with a docstring is made without inspect's code ...
    assert report["executed_by_documented"] is False
    # ... one without gets the docstring dataclasses always wrote it, from inspect.
    assert report["executed_by_undocumented"] is True
    assert report["generated_doc"] == "Undocumented(a: int, b: str = 'x')"
    # One module object throughout: whoever imported it holds the real one.
    assert report["same_module"] is True
    assert report["signature"] == "(a: int, b: str = 'x') -> None"
    # Once they are imported, there is nothing left to defer.
    assert report["again"] == []


def test_load_executes_it_and_import_reads_it_without_executing() -> None:
    report = _run(
        "import json, sys\n"
        "from lossless import deferred_modules\n"
        "deferred_modules.defer()\n"
        "import inspect\n"  # reads __spec__, which must not execute it
        "from inspect import isclass as _\n"  # a name it lacks: executes it
        "executed = 'ast' in sys.modules\n"
        "deferred_modules.load()\n"
        "print(json.dumps({'executed': executed, 'plain': type(inspect).__name__,"
        " 'doc': bool(inspect.__doc__), 'getsource': callable(inspect.getsource)}))\n"
    )
    assert report == {"executed": True, "plain": "module", "doc": True, "getsource": True}
    report = _run(
        "import json, sys\n"
        "from lossless import deferred_modules\n"
        "deferred_modules.defer()\n"
        "import inspect\n"
        "before = 'ast' in sys.modules\n"
        "deferred_modules.load()\n"
        "print(json.dumps({'before': before, 'after': 'ast' in sys.modules,"
        " 'plain': type(inspect).__name__, 'ip': type(sys.modules['ipaddress']).__name__,"
        " 'v4': sys.modules['ipaddress'].ip_address('127.0.0.1').version}))\n"
    )
    assert report == {"before": False, "after": True, "plain": "module", "ip": "module", "v4": 4}


def test_a_module_is_not_deferred_once_its_importer_is_imported() -> None:
    report = _run(
        "import json, sys, dataclasses\n"
        "from lossless import deferred_modules\n"
        "print(json.dumps({'deferred': deferred_modules.defer(),"
        " 'plain': type(sys.modules['inspect']).__name__}))\n"
    )
    assert report == {"deferred": ["ipaddress"], "plain": "module"}


def test_ipaddress_runs_when_a_url_needs_it() -> None:
    report = _run(
        "import json, sys\n"
        "from lossless import deferred_modules\n"
        "deferred_modules.defer()\n"
        "import pathlib, urllib.parse\n"
        "before = deferred_modules.is_deferred(sys.modules['ipaddress'])\n"
        "plain = urllib.parse.urlsplit('http://example.org:8080/x').port\n"
        "still = deferred_modules.is_deferred(sys.modules['ipaddress'])\n"
        "host = urllib.parse.urlsplit('http://[::1]:8080/x').hostname\n"
        "print(json.dumps({'before': before, 'plain': plain, 'still': still, 'host': host,"
        " 'after': deferred_modules.is_deferred(sys.modules['ipaddress'])}))\n"
    )
    assert report == {"before": True, "plain": 8080, "still": True, "host": "::1", "after": False}
    # A bracketed host that is no address is refused as before.
    report = _run(
        "import json\n"
        "from lossless import deferred_modules\n"
        "deferred_modules.defer()\n"
        "import urllib.parse\n"
        "try:\n"
        "    urllib.parse.urlsplit('http://[not-an-address]/')\n"
        "    refused = None\n"
        "except ValueError as exc:\n"
        "    refused = str(exc)\n"
        "print(json.dumps({'refused': refused}))\n"
    )
    assert report["refused"]


def test_a_module_looking_itself_up_while_it_runs_sees_what_is_there_yet(tmp_path: Path) -> None:
    (tmp_path / "selfref.py").write_text(
        "import sys\n"
        "early = getattr(sys.modules[__name__], 'later', 'absent')\n"
        "later = 1\n"
        "again = getattr(sys.modules[__name__], 'later', 'absent')\n"
    )
    report = _run(
        "import json, sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from lossless import deferred_modules\n"
        "deferred_modules.DEFERRED = {'selfref': 'no-such-importer'}\n"
        "assert deferred_modules.defer() == ['selfref']\n"
        "import selfref\n"
        "print(json.dumps({'early': selfref.early, 'later': selfref.later,"
        " 'again': selfref.again, 'plain': not deferred_modules.is_deferred(selfref)}))\n"
    )
    assert report == {"early": "absent", "later": 1, "again": 1, "plain": True}
