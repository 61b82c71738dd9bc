"""``lossless.regex_cache`` and ``lossless.dataclass_cache``: what a hook compiles at
import (regular expressions, the methods of its records) is kept for the next one.

Each case runs in a fresh interpreter (the cache is per process, its file in
a bytecode cache folder of the test's own). That folder starts as a copy of one
where everything the cases import was compiled once for the module, without
the caches under test: compiling the standard library and the dependencies
again for every case cost each one tens of seconds on a busy machine.
"""

from __future__ import annotations

import json
import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SAMPLE = (
    "token ghp_"
    + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    + " and AWS_SECRET=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY1"
)

_RUN = """
import json, re, sys
from re import _compiler
compiled = []
original = _compiler.compile
def counting(pattern, flags=0):
    caller = sys._getframe(3).f_globals.get("__name__", "")
    compiled.append(f"{caller}: {pattern}")
    return original(pattern, flags)
_compiler.compile = counting
from lossless import regex_cache
seeded = regex_cache.install()
from lossless.redact import Redactor
import lossless.injection
re.compile("runtime-only-" + sys.argv[2])  # as a search pattern would be
out = Redactor().redact_text(sys.argv[1]).text
added = regex_cache.keep()
print(json.dumps({"seeded": seeded, "added": added, "compiled": compiled, "out": out}))
"""


def python(code: str, prefix: Path, *args: str, write: bool = True) -> dict[str, Any]:
    """``code`` in a fresh interpreter whose bytecode cache is under ``prefix``; its JSON."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def run(prefix: Path, *, write: bool = True, marker: str = "x") -> dict[str, Any]:
    return python(_RUN, prefix, SAMPLE, marker, write=write)


def cache_file(prefix: Path) -> Path:
    (found,) = prefix.rglob("regex-cache.*.marshal")
    return found


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bytecode folder holding everything the cases import, and none of the caches."""
    folder = tmp_path_factory.mktemp("compiled")
    run(folder)
    run_dataclasses(folder)
    run_literals(folder)
    for kept in folder.rglob("*.marshal"):
        kept.unlink()
    return folder


@pytest.fixture
def prefix(compiled: Path, tmp_path: Path) -> Path:
    """This case's own bytecode folder: a copy of ``compiled``."""
    return Path(shutil.copytree(compiled, tmp_path / "pycache"))


def test_the_second_process_compiles_nothing_and_redacts_the_same(prefix: Path) -> None:
    first = run(prefix)
    assert first["seeded"] == 0 and first["added"] > 20
    second = run(prefix)
    assert second["seeded"] == first["added"] and second["added"] == 0
    # Only the run-time pattern (and none of lossless's) is compiled again.
    lossless = [p for p in second["compiled"] if p.startswith("lossless")]
    assert lossless == [], lossless
    assert len(second["compiled"]) < 10 < len(first["compiled"]), second["compiled"]
    assert second["out"] == first["out"] != SAMPLE
    assert "ghp_a1B2" not in second["out"]


def test_patterns_made_at_run_time_are_never_kept(prefix: Path) -> None:
    run(prefix, marker="hunter2-password")
    _header, entries = marshal.loads(cache_file(prefix).read_bytes())
    assert entries and not any("hunter2" in pattern for pattern, _flags, _args in entries)


def test_a_corrupt_file_is_a_miss(prefix: Path) -> None:
    run(prefix)
    path = cache_file(prefix)
    path.write_bytes(b"\x00garbage")
    again = run(prefix)
    assert again["seeded"] == 0 and again["added"] > 20 and again["out"] != SAMPLE
    assert run(prefix)["seeded"] == again["added"]


def test_nothing_is_written_when_bytecode_is_not(prefix: Path) -> None:
    assert run(prefix, write=False)["added"] == 0
    assert list(prefix.rglob("regex-cache.*")) == []


# --------------------------------------------------------------------------- dataclass code

_RUN_DATACLASSES = """
import builtins, dataclasses, json, sys
compiled = []
original = builtins.compile
def counting(source, *args, **kwargs):
    if isinstance(source, str) and "__create_fn__" in source:
        compiled.append(source)
    return original(source, *args, **kwargs)
builtins.compile = counting
from lossless import dataclass_cache
loaded = dataclass_cache.install()
from lossless.models import NewMessage, NewPart
part = NewPart(kind="text", text="hi")
message = NewMessage(role="user", content="hi", parts=(part,))
try:
    message.role = "assistant"
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
same = message == NewMessage(role="user", content="hi", parts=(NewPart(kind="text", text="hi"),))
added = dataclass_cache.keep()
print(json.dumps({
    "loaded": loaded, "added": added, "compiled": len(compiled),
    "repr": repr(message), "frozen": frozen, "same": same, "hash": hash(part) == hash(NewPart(kind="text", text="hi")),
}))
"""


def run_dataclasses(prefix: Path) -> dict[str, Any]:
    return python(_RUN_DATACLASSES, prefix)


def test_dataclass_methods_are_compiled_once_and_behave_the_same(prefix: Path) -> None:
    first = run_dataclasses(prefix)
    assert first["loaded"] == 0 and first["added"] == first["compiled"] > 10
    second = run_dataclasses(prefix)
    assert second["loaded"] == first["added"] and second["added"] == second["compiled"] == 0
    for key in ("repr", "frozen", "same", "hash"):
        assert second[key] == first[key], key
    assert second["frozen"] and second["same"] and second["hash"]
    (path,) = prefix.rglob("dataclass-code.*.marshal")
    path.write_bytes(b"not marshal")
    assert run_dataclasses(prefix)["loaded"] == 0  # a corrupt file is a miss


def test_kept_code_is_read_entry_by_entry(prefix: Path) -> None:
    first = run_dataclasses(prefix)
    (path,) = prefix.rglob("dataclass-code.*.marshal")
    header, entries = marshal.loads(path.read_bytes())
    # Each entry is its code object's own marshal bytes, read when its text comes up.
    assert len(entries) == first["added"]
    assert all(isinstance(blob, bytes) for blob in entries.values())
    # A corrupt entry, or one that is not code, is a miss for that text alone:
    # compiled again, behaving the same; the others are still used.
    sources = sorted(entries)
    entries[sources[0]] = b"\x00garbage"
    entries[sources[1]] = marshal.dumps("not code")
    path.write_bytes(marshal.dumps((header, entries)))
    again = run_dataclasses(prefix)
    assert again["compiled"] == again["added"] == 2
    for key in ("repr", "frozen", "same", "hash"):
        assert again[key] == first[key], key
    # A file of the earlier form (code objects, a header without the form's
    # name) is a miss as a whole, then rewritten in this form.
    old = {
        source: marshal.loads(blob) for source, blob in entries.items() if source not in sources[:2]
    }
    path.write_bytes(marshal.dumps((header[:3], old)))
    assert run_dataclasses(prefix)["loaded"] == 0
    assert run_dataclasses(prefix)["loaded"] == first["added"]


# --------------------------------------------------------------------------- literal sets

_RUN_LITERALS = """
import json, sys
from lossless import regex_literals
derived = []
original = regex_literals.required_literals
def counting(pattern, *args, **kwargs):
    derived.append(pattern)
    return original(pattern, *args, **kwargs)
regex_literals.required_literals = counting
from tests.summarize.injection_corpus import BENIGN, PAYLOADS
import lossless.injection as injection
texts = [" ".join(entry.parts) for entry in PAYLOADS[::6] + BENIGN[::6]]
findings = [sorted({f.kind for f in injection.scan(text)}) for text in texts]
# A gate of patterns a user or a text supplied: never kept.
regex_literals.LiteralGate([("k", "user-secret-" + sys.argv[1], 0)]).indices("x")
print(json.dumps({"derived": len(derived), "findings": findings}))
"""


def run_literals(prefix: Path, *, write: bool = True, marker: str = "hunter2") -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", _RUN_LITERALS, marker],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[1],  # for tests.summarize.injection_corpus
        timeout=300,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def literals_file(prefix: Path) -> Path:
    (found,) = prefix.rglob("regex-literals.*.marshal")
    return found


def test_the_detector_s_literal_sets_are_derived_once_and_scan_the_same(prefix: Path) -> None:
    first = run_literals(prefix)
    # ~120 detector patterns derived, plus the user's gate (derived every time).
    assert first["derived"] > 100
    second = run_literals(prefix)
    assert second["derived"] == 1, "only the user's pattern is derived again"
    assert second["findings"] == first["findings"]
    assert any(first["findings"]) and not all(first["findings"])
    _header, entries = marshal.loads(literals_file(prefix).read_bytes())
    assert len(entries) == first["derived"] - 1
    assert not any("hunter2" in pattern for pattern, _flags, _spaces in entries)


def test_kept_sets_are_used_only_under_the_same_interpreter_and_derivation(
    prefix: Path,
) -> None:
    honest = run_literals(prefix)
    path = literals_file(prefix)
    header, entries = marshal.loads(path.read_bytes())
    # Sets no text meets: a gate reading them runs no pattern, so only what is
    # found without the gates (zero-width characters inside words) remains.
    poisoned = {key: (frozenset({"\x00never\x00"}),) for key in entries}
    path.write_bytes(marshal.dumps((header, poisoned)))
    blinded = run_literals(prefix)["findings"]
    assert {kind for kinds in blinded for kind in kinds} <= {"encoded"}, blinded
    assert blinded != honest["findings"], "the kept sets are what the gates read"
    # The same file under another derivation (regex_literals.py changed) or
    # another interpreter: read as a miss, derived again, the honest findings.
    for other in ((*header[:2], header[2] + b"x"), ("3.0.0", *header[1:])):
        path.write_bytes(marshal.dumps((other, poisoned)))
        again = run_literals(prefix)
        assert again["derived"] > 100 and again["findings"] == honest["findings"]
    # A changed pattern is a key the file does not hold: derived, not guessed.
    renamed = {(p + " ", f, s): v for (p, f, s), v in poisoned.items()}
    path.write_bytes(marshal.dumps((header, renamed)))
    assert run_literals(prefix)["findings"] == honest["findings"]


def test_a_corrupt_literal_file_is_a_miss(prefix: Path) -> None:
    honest = run_literals(prefix)
    path = literals_file(prefix)
    header, entries = marshal.loads(path.read_bytes())
    for broken in (
        b"\x00garbage",
        marshal.dumps((header, ["not", "a", "dict"])),
        marshal.dumps((header, dict.fromkeys(entries, "not sets"))),
    ):
        path.write_bytes(broken)
        again = run_literals(prefix)
        assert again["derived"] > 100 and again["findings"] == honest["findings"]


def test_no_literal_file_is_written_when_bytecode_is_not(prefix: Path) -> None:
    assert run_literals(prefix, write=False)["derived"] > 100
    assert list(prefix.rglob("regex-literals.*")) == []
