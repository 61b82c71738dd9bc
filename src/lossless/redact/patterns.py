"""User-defined redaction patterns and their validation.

A user pattern is a Python regular expression whose matches are replaced by
``[REDACTED:user:<name>]``. If it defines a group named ``secret``, only that
group is replaced, so context can be matched without being hidden
(``employee_id=(?P<secret>E\\d{6})``).

Patterns run on every stored message, so a bad one must be refused when it is
added, not discovered when ingestion hangs. ``validate_pattern`` refuses:

* syntax errors;
* patterns that can match the empty string (they would match everywhere);
* patterns prone to catastrophic backtracking. Found two ways: statically, by
  walking the parsed pattern for the classic shapes (a quantified group whose body
  is itself just a quantifier, ``(a+)+``, ``(.*)*``, ``(\\w+\\s?)*``; a quantified
  alternation whose branches can match the same character, ``(a|a)*``,
  ``(\\w|\\d)+``), and empirically, by running the compiled pattern against
  adversarial inputs in a child process that is killed after a time bound.
  Python's ``re`` cannot be interrupted, so a separate process is the only
  reliable bound; it costs one interpreter start-up (~20 ms) per validation.
"""

from __future__ import annotations

import importlib
import itertools
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from lossless.errors import InputError

if TYPE_CHECKING:
    import queue
    import subprocess

Scope = Literal["global", "project"]
SCOPES: Final[tuple[Scope, ...]] = ("global", "project")

MAX_PATTERN_LENGTH: Final = 2000
#: How long the adversarial inputs may take to run, once the child is up.
DEFAULT_TIMEOUT: Final = 0.5
#: Bound on the child's interpreter start-up, kept apart from the run timeout so
#: a slow machine does not make good patterns look slow.
STARTUP_TIMEOUT: Final = 2.0

_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class InvalidPattern(InputError, ValueError):
    """A user pattern that cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class UserPattern:
    """A named user regex, global or limited to one project."""

    name: str
    regex: str
    scope: Scope = "global"
    project: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise InvalidPattern(
                f"pattern name {self.name!r} must be 1-64 characters of letters, digits,"
                " '_', '.' or '-', starting with a letter or digit"
            )
        if self.scope not in SCOPES:
            raise InvalidPattern(f"pattern scope must be 'global' or 'project', not {self.scope!r}")
        if self.scope == "project" and not self.project:
            raise InvalidPattern(f"project-scoped pattern {self.name!r} needs a project")
        if self.scope == "global" and self.project is not None:
            raise InvalidPattern(f"global pattern {self.name!r} cannot name a project")

    @property
    def category(self) -> str:
        return f"user:{self.name}"

    def applies_to(self, project: str | None) -> bool:
        return self.scope == "global" or self.project == project


def patterns_for_project(
    patterns: Iterable[UserPattern], project: str | None
) -> tuple[UserPattern, ...]:
    """The global patterns plus the ones scoped to ``project``."""
    return tuple(p for p in patterns if p.applies_to(project))


def compile_pattern(regex: str) -> re.Pattern[str]:
    """Compile ``regex`` or raise ``InvalidPattern`` (syntax only, no safety checks)."""
    if not isinstance(regex, str) or not regex:
        raise InvalidPattern("pattern is empty")
    if len(regex) > MAX_PATTERN_LENGTH:
        raise InvalidPattern(f"pattern is longer than {MAX_PATTERN_LENGTH} characters")
    try:
        return re.compile(regex)
    except (re.error, RecursionError, OverflowError) as exc:
        raise InvalidPattern(f"invalid regular expression {regex!r}: {exc}") from exc


def validate_pattern(regex: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Raise ``InvalidPattern`` unless ``regex`` is safe to run on every message."""
    compiled = compile_pattern(regex)
    tree = parse_regex(regex)
    if (tree is not None and tree.getwidth()[0] == 0) or compiled.search("") is not None:
        raise InvalidPattern(
            f"pattern {regex!r} can match the empty string, so it would match everywhere"
        )
    if tree is not None:
        reason = static_redos(tree)
        if reason is not None:
            raise InvalidPattern(f"pattern {regex!r} risks catastrophic backtracking: {reason}")
    _run_adversarial(regex, tree, timeout)


# ------------------------------------------------------------------ static analysis

# The parser behind ``re`` is private (``re._parser`` since 3.11); if a future
# Python moves it, validation falls back to the empirical check alone.
try:
    _parser: Any = importlib.import_module("re._parser")
    _c: Any = importlib.import_module("re._constants")
except ImportError:  # pragma: no cover - depends on the Python version
    _parser = None
    _c = None


def parse_regex(regex: str) -> Any:
    if _parser is None:
        return None
    try:
        return _parser.parse(regex)
    except Exception:  # the public compile() already accepted it; be lenient
        return None


def _repeat_ops() -> tuple[Any, ...]:
    return (_c.MAX_REPEAT, _c.MIN_REPEAT)


def _is_unbounded(hi: int) -> bool:
    return bool(hi == _c.MAXREPEAT or hi > 32)


def _unwrap(items: Sequence[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Drop non-capturing/capturing group wrappers around a single element."""
    seq = list(items)
    while len(seq) == 1 and seq[0][0] == _c.SUBPATTERN:
        seq = list(seq[0][1][-1])
    return seq


def _nullable(op: Any, av: Any) -> bool:
    if op in _repeat_ops() or op == getattr(_c, "POSSESSIVE_REPEAT", None):
        return bool(av[0] == 0)
    if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
        return True
    if op == _c.SUBPATTERN:
        return bool(av[-1].getwidth()[0] == 0)
    return False


def _single_char_set(op: Any, av: Any) -> frozenset[str] | None:
    """Characters (from a probe alphabet) a one-character element can match."""
    if op == _c.LITERAL:
        return frozenset({chr(av)})
    if op in (_c.NOT_LITERAL, _c.ANY, _c.IN):
        matcher = re.compile(_unparse_single(op, av), re.DOTALL)
        return frozenset(c for c in _PROBE_ALPHABET if matcher.fullmatch(c))
    return None


_PROBE_ALPHABET: Final = "".join(chr(c) for c in range(32, 127)) + "\t\n\u00e9\u4e2d"

_CATEGORY_CLASS: Final[dict[str, str]] = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}


def _unparse_single(op: Any, av: Any) -> str:
    """Rebuild a regex for a one-character element so it can be probed."""
    if op == _c.NOT_LITERAL:
        return "[^" + re.escape(chr(av)) + "]"
    if op == _c.ANY:
        return "."
    parts: list[str] = []
    negate = ""
    for item_op, item_av in av:
        if item_op == _c.NEGATE:
            negate = "^"
        elif item_op == _c.LITERAL:
            parts.append(re.escape(chr(item_av)))
        elif item_op == _c.RANGE:
            parts.append(re.escape(chr(item_av[0])) + "-" + re.escape(chr(item_av[1])))
        elif item_op == _c.CATEGORY:
            parts.append(_CATEGORY_CLASS.get(str(item_av), r"\w"))
        else:
            return "."  # unknown class item: assume it can match anything
    return "[" + negate + "".join(parts) + "]" if parts else "[^\\s\\S]"


def static_redos(tree: Any) -> str | None:
    """Describe the first catastrophic-backtracking shape found, if any."""
    for op, av in tree:
        reason = _check_node(op, av)
        if reason is not None:
            return reason
    return None


def _check_node(op: Any, av: Any) -> str | None:
    if op in _repeat_ops():
        _lo, hi, body = av
        if _is_unbounded(hi):
            reason = _check_repeat_body(body)
            if reason is not None:
                return reason
        elif hi >= _MANY and _has_unbounded_repeat(body):
            # (.*a){20}: each of the 20 copies may take any share of the
            # input, so a failing match tries about n**20 splits.
            return "a group repeated many times around an unbounded quantifier, like (.*a){20}"
        return static_redos(body)
    if op == _c.SUBPATTERN:
        return static_redos(av[-1])
    if op == _c.BRANCH:
        for branch in av[1]:
            reason = static_redos(branch)
            if reason is not None:
                return reason
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        return static_redos(av[1])
    # Atomic groups and possessive quantifiers never backtrack into their body.
    return None


#: Copies of a group with an unbounded quantifier inside that count as many.
_MANY = 8


def _has_unbounded_repeat(tree: Any) -> bool:
    for op, av in tree:
        if op in _repeat_ops() and (_is_unbounded(av[1]) or _has_unbounded_repeat(av[2])):
            return True
        if op == _c.SUBPATTERN and _has_unbounded_repeat(av[-1]):
            return True
        if op == _c.BRANCH and any(_has_unbounded_repeat(b) for b in av[1]):
            return True
    return False


def _check_repeat_body(body: Any) -> str | None:
    items = _unwrap(body)
    # The parser factors common prefixes out of alternations, so (a|a) arrives
    # as "a" followed by a branch of two empty alternatives.
    for op, av in items:
        if op == _c.BRANCH:
            dumps = [str(b) for b in av[1]]
            if len(set(dumps)) != len(dumps):
                return "a quantified alternation with identical branches, like (a|a)+"
    repeats = [(op, av) for op, av in items if op in _repeat_ops() and av[1] > 1]
    others = [(op, av) for op, av in items if op not in _repeat_ops() and not _nullable(op, av)]
    if repeats and not others:
        # Nothing but quantifiers: a run of input can be split between the inner
        # and outer loops in exponentially many ways.
        return "a quantified group whose body is itself a quantifier, like (a+)+ or (.*)*"
    core = [(op, av) for op, av in items if not _nullable(op, av)]
    if len(core) == 1 and core[0][0] == _c.BRANCH:
        branches = [list(b) for b in core[0][1][1]]
        for branch in branches:
            inner = [(op, av) for op, av in _unwrap(branch) if not _nullable(op, av)]
            if len(inner) == 1 and inner[0][0] in _repeat_ops() and inner[0][1][1] > 1:
                return "a quantified alternation with a quantified branch, like (a+|b)+"
        sets: list[frozenset[str] | None] = []
        for branch in branches:
            items = _unwrap(branch)
            if len(items) != 1:
                sets.append(None)
                continue
            sets.append(_single_char_set(*items[0]))
        seen: set[str] = set()
        for chars in sets:
            if chars is None:
                continue
            if seen & chars:
                return "a quantified alternation whose branches overlap, like (a|a)* or (\\w|\\d)+"
            seen |= chars
    return None


# --------------------------------------------------------------- empirical check

_GENERIC_CHARS: Final = "a0A _-./:=\n!\t@"


def _literal_chars(tree: Any) -> list[str]:
    """Characters the pattern names literally, in order of appearance."""
    found: list[str] = []

    def walk(items: Any) -> None:
        for op, av in items:
            if op == _c.LITERAL:
                found.append(chr(av))
            elif op == _c.IN:
                for item_op, item_av in av:
                    if item_op == _c.LITERAL:
                        found.append(chr(item_av))
                    elif item_op == _c.RANGE:
                        found.append(chr(item_av[0]))
            elif op in _repeat_ops() or op == getattr(_c, "POSSESSIVE_REPEAT", None):
                walk(av[2])
            elif op == _c.SUBPATTERN:
                walk(av[-1])
            elif op == _c.BRANCH:
                for branch in av[1]:
                    walk(branch)
            elif op in (_c.ASSERT, _c.ASSERT_NOT):
                walk(av[1])

    if tree is not None:
        walk(tree)
    return found


def _leading_literal(tree: Any) -> str:
    prefix = ""
    if tree is None:
        return prefix
    for op, av in tree:
        if op != _c.LITERAL:
            break
        prefix += chr(av)
    return prefix


SHORT_RUN: Final = 32
LONG_RUN: Final = 600


def adversarial_units(tree: Any) -> tuple[list[str], list[str]]:
    """Building blocks of inputs that make backtracking patterns blow up.

    Returns ``(units, prefixes)``: each input is a prefix, then a unit (a character
    the pattern names, a generic one, or a pair) repeated into a short and a long
    run, then possibly a NUL the pattern will not expect. Exponential patterns
    explode on the short runs, polynomial ones of degree 3 and up on the long
    ones; linear and quadratic patterns finish them all in milliseconds.
    """
    literal = _literal_chars(tree)
    chars = list(dict.fromkeys(literal + list(_GENERIC_CHARS)))[:24]
    pairs = [a + b for a, b in itertools.pairwise(chars)][:10]
    prefixes = list(dict.fromkeys(["", _leading_literal(tree)]))
    return chars + pairs, prefixes


_CHILD: Final = r"""
import json, re, sys
job = json.loads(sys.stdin.readline())
rx = re.compile(job["regex"])
sys.stdout.write("ready\n"); sys.stdout.flush()
for prefix in job["prefixes"]:
    for unit in job["units"]:
        short = unit * (job["short"] // len(unit))
        long_ = unit * (job["long"] // len(unit))
        for s in (prefix + short + "\0", prefix + short, prefix + long_ + "\0"):
            for _ in rx.finditer(s):
                pass
sys.stdout.write("done\n"); sys.stdout.flush()
"""


def _run_adversarial(regex: str, tree: Any, timeout: float) -> None:
    # Imported here: every hook loads this module, few ever check a pattern.
    import queue
    import subprocess
    import threading

    units, prefixes = adversarial_units(tree)
    job: dict[str, object] = {"regex": regex, "units": units, "prefixes": prefixes}
    job |= {"short": SHORT_RUN, "long": LONG_RUN}
    # The checker failing is not the pattern's fault, but an unchecked pattern is
    # refused rather than accepted.
    unchecked = "could not check the pattern for catastrophic backtracking"
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
    except OSError as exc:
        raise InvalidPattern(f"{unchecked}: {exc}") from exc
    lines: queue.Queue[str] = queue.Queue()
    # A thread reads the child's output so waits can time out on every platform
    # (select() does not work on pipes on Windows).
    reader = threading.Thread(target=_pump, args=(proc, lines), daemon=True)
    reader.start()
    try:
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(job) + "\n")
            proc.stdin.close()
        except OSError as exc:
            raise InvalidPattern(f"{unchecked}: {exc}") from exc
        if _next_line(lines, STARTUP_TIMEOUT) != "ready":
            raise InvalidPattern(f"{unchecked}: the checker process did not start")
        outcome = _next_line(lines, timeout)
        if outcome == "done":
            return
        if outcome == "":  # end of output: the child died (e.g. out of memory)
            raise InvalidPattern(f"{unchecked}: the checker process failed")
        raise InvalidPattern(
            f"pattern {regex!r} is too slow: adversarial input took over {timeout:g} s"
            " (catastrophic backtracking, e.g. nested quantifiers like (a+)+)"
        )
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        reader.join(timeout=1.0)


def _pump(proc: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
    assert proc.stdout is not None
    with proc.stdout:
        for line in proc.stdout:
            lines.put(line.strip())
    lines.put("")


def _next_line(lines: queue.Queue[str], timeout: float) -> str | None:
    import queue

    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        return None


def super_linear_reason(regex: str) -> str | None:
    """Why ``regex`` may backtrack catastrophically (nested or many-times-repeated
    quantifiers), or None. The static half of ``validate_pattern``, cheap enough
    to run on every search pattern."""
    tree = parse_regex(regex)
    return static_redos(tree) if tree is not None else None
