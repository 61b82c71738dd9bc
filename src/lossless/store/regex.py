"""Regex helpers shared by backends: validation, index pre-filter literals, snippets.

Regex grep runs a user's pattern over candidate rows in Python on both
backends. To avoid scanning every message, a backend asks ``required_literal``
for a plain substring (3+ characters) that every match must contain, and uses
its trigram index to fetch only rows holding it.

The pattern is checked with the standard library's ``re`` (its syntax is the
one documented, and its parser gives the literals), then run by the ``regex``
package, whose matcher takes a timeout: ``re`` cannot be stopped once a match
starts, so one row that backtracks catastrophically (``(a|aa)+$`` on a long
run of ``a``) would run past any budget, hold the GIL and wedge every other
thread of the process (the MCP server's next ``lcm_status``). With a timeout
the budget holds for any pattern, not only for shapes recognised up front.
A plain literal (the common ``lcm grep some_name``) cannot backtrack: ``re``
finds it in linear time, so it runs there, and the command does not import
the ``regex`` package (several milliseconds of its start-up).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

# The stdlib regex parser (re._parser since 3.11) gives the pattern's structure.
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

from lossless.errors import InputError

#: A pattern runs under the ``regex`` package, imported on first use (hooks
#: and the MCP server start without it).
_regex_pkg: Any = None

MIN_LITERAL = 3
# Characters that would need escaping in a LIKE pattern; literals avoid them.
LIKE_SPECIAL = "%_\\"
# The same for GLOB (SQLite's trigram index serves GLOB, but not LIKE ... ESCAPE).
GLOB_SPECIAL = "*?[]"


#: Longer search patterns are refused: compiling and running them costs memory
#: and time out of proportion (a 2,000,000-character pattern took minutes).
MAX_PATTERN_CHARS = 2000


class UserRegex:
    """A user's search pattern: checked by ``re``, matched by ``regex`` under a deadline."""

    def __init__(self, pattern: str, checked: re.Pattern[str], engine: Any) -> None:
        self.pattern = pattern
        self.flags = checked.flags
        self._engine = engine

    def search(self, text: str, timeout_s: float | None = None) -> re.Match[str] | None:
        """The first match in ``text``; raises ``TimeoutError`` after ``timeout_s``.

        ``concurrent`` lets the match run without the GIL, so other threads
        (the MCP server answering another call) go on meanwhile.
        """
        found: re.Match[str] | None = self._engine.search(text, timeout=timeout_s, concurrent=True)
        return found

    def finditer(self, text: str, timeout_s: float | None = None) -> list[re.Match[str]]:
        """Every match in ``text``; raises ``TimeoutError`` after ``timeout_s``."""
        found: list[re.Match[str]] = list(
            self._engine.finditer(text, timeout=timeout_s, concurrent=True)
        )
        return found


def compile_user_regex(pattern: str) -> UserRegex:
    """Compile a search pattern, or raise ``InputError`` saying why it is refused.

    Only the length and the syntax are refused: any pattern, however much it
    backtracks, runs under the scan's deadline (``ScanBudget.search``).
    """
    shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InputError(
            f"regular expression is {len(pattern):,} characters long; "
            f"at most {MAX_PATTERN_CHARS:,} are accepted"
        )
    try:
        checked = re.compile(pattern)
        if _plain_literal(pattern, checked):
            return UserRegex(pattern, checked, _LinearPattern(checked))
    except (re.error, OverflowError, RecursionError, ValueError, MemoryError) as exc:
        raise _refused(shown, exc) from None
    engine = _regex_package()
    try:
        # VERSION0: the ``re``-compatible behaviour, so a pattern means what
        # ``re`` (and the documentation) says it means.
        compiled = engine.compile(pattern, engine.VERSION0)
    except (engine.error, OverflowError, RecursionError, ValueError, MemoryError) as exc:
        raise _refused(shown, exc) from None
    return UserRegex(pattern, checked, compiled)


def _refused(shown: str, exc: BaseException) -> InputError:
    if isinstance(exc, OverflowError | RecursionError | ValueError | MemoryError):
        return InputError(f"invalid regular expression {shown!r}: {exc or 'nested too deeply'}")
    return InputError(f"invalid regular expression {shown!r}: {exc}")


def _plain_literal(pattern: str, checked: re.Pattern[str]) -> bool:
    """Whether ``pattern`` is only literal characters (no repetition, class,
    group or alternation, so no backtracking), matched by ``re`` exactly as by
    ``regex``: ASCII when case is ignored (the two fold some other letters
    differently)."""
    if checked.flags & re.IGNORECASE and not pattern.isascii():
        return False
    parsed = sre_parse.parse(pattern)
    return len(parsed) > 0 and all(op is sre_parse.LITERAL for op, _ in parsed)


class _LinearPattern:
    """A literal's ``re`` pattern behind the ``regex`` matcher's signature: it
    needs no deadline (it runs in time linear in the text)."""

    def __init__(self, compiled: re.Pattern[str]) -> None:
        self._compiled = compiled

    def search(
        self, text: str, timeout: float | None = None, concurrent: bool = False
    ) -> re.Match[str] | None:
        return self._compiled.search(text)

    def finditer(
        self, text: str, timeout: float | None = None, concurrent: bool = False
    ) -> Iterator[re.Match[str]]:
        return self._compiled.finditer(text)


def _regex_package() -> Any:
    global _regex_pkg
    if _regex_pkg is None:
        import regex

        _regex_pkg = regex
    return _regex_pkg


def is_case_insensitive(pattern: str) -> bool:
    try:
        return bool(sre_parse.parse(pattern).state.flags & re.IGNORECASE)
    except re.error:
        return False


def required_literal(pattern: str, *, avoid: str = LIKE_SPECIAL) -> str | None:
    """The longest plain substring every match of ``pattern`` must contain, if 3+ chars.

    Only top-level literal runs count (a literal inside an alternation or an
    optional group is not required). Returns None for case-insensitive
    patterns with non-ASCII literals, where the index would disagree with ``re``.
    """
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return None
    ignore_case = bool(parsed.state.flags & re.IGNORECASE)
    best = ""
    run: list[str] = []

    def flush() -> None:
        nonlocal best, run
        text = "".join(run)
        run = []
        for piece in _split_on(text, avoid):
            if len(piece) > len(best):
                best = piece

    for op, arg in parsed:
        if op is sre_parse.LITERAL:
            run.append(chr(arg))
        elif op in (sre_parse.AT,):
            continue
        elif op is sre_parse.SUBPATTERN and _subpattern_flags_ok(arg):
            # A plain capturing group: its body is required but may not join runs.
            flush()
            inner = _literal_body(arg[-1])
            if inner is not None:
                run.append(inner)
            flush()
        else:
            flush()
    flush()
    if len(best) < MIN_LITERAL:
        return None
    if ignore_case and not best.isascii():
        return None
    return best


def _subpattern_flags_ok(arg: Any) -> bool:
    add_flags, del_flags = arg[1], arg[2]
    return not add_flags and not del_flags


def _literal_body(sub: Any) -> str | None:
    chars: list[str] = []
    for op, arg in sub:
        if op is not sre_parse.LITERAL:
            return None
        chars.append(chr(arg))
    return "".join(chars)


def _split_on(text: str, avoid: str) -> list[str]:
    pieces: list[str] = []
    current: list[str] = []
    for ch in text:
        if ch in avoid:
            pieces.append("".join(current))
            current = []
        else:
            current.append(ch)
    pieces.append("".join(current))
    return pieces


def snippet_around(text: str, start: int, end: int, width: int = 80) -> str:
    """A one-line excerpt of ``text`` around [start, end), the match in brackets."""
    left = max(0, start - width)
    right = min(len(text), end + width)
    before = text[left:start]
    match = text[start:end]
    after = text[end:right]
    snippet = f"{'…' if left else ''}{before}[{match}]{after}{'…' if right < len(text) else ''}"
    return " ".join(snippet.split())


class ScanBudget:
    """The time a regex scan may take; rows are visited newest first.

    ``spent`` is asked before each row; once the budget is gone it records
    that row's time as ``stopped_at`` (everything older went unsearched) and
    says stop. The clock is read every ``CHECK_EVERY`` rows only. Each row is
    matched with ``search``, which stops a match still running at the
    deadline: the budget holds even within one row.
    """

    CHECK_EVERY = 64
    MIN_ROW_S = 0.05

    def __init__(self, seconds: float | None) -> None:
        self.deadline = None if seconds is None else time.monotonic() + max(0.0, seconds)
        self.stopped_at: str | None = None
        self._rows = 0
        self._timed_out = False

    def spent(self, row_time: str | None) -> bool:
        if self.deadline is None:
            return False
        if self._timed_out:
            self._stop(row_time)
            return True
        self._rows += 1
        if self._rows % self.CHECK_EVERY or time.monotonic() < self.deadline:
            return False
        self._stop(row_time)
        return True

    def search(self, regex: UserRegex, text: str, row_time: str | None) -> re.Match[str] | None:
        """``regex`` searched in one row's ``text``, stopped at the deadline.

        A match cut off by the deadline counts as no match, and the row as the
        first one not searched; the next ``spent`` says stop. Every row gets
        at least ``MIN_ROW_S``, so rows up to the next clock check are still
        searched (a budget spent on the query itself still finds the newest
        hits), and the overshoot stays under ``MIN_ROW_S`` plus ordinary rows.
        """
        if self.deadline is None:
            return regex.search(text)
        left = max(self.MIN_ROW_S, self.deadline - time.monotonic())
        try:
            return regex.search(text, left)
        except TimeoutError:
            self._timed_out = True
            self._stop(row_time)
            return None

    def stop(self, row_time: str | None) -> None:
        """The budget ran out before the row at ``row_time`` was searched (a
        statement interrupted at the deadline): stop there and say so."""
        self._timed_out = True
        self._stop(row_time)

    def _stop(self, row_time: str | None) -> None:
        # Messages and summaries are scanned one after the other: keep the
        # newer of the two stopping points, the one a user can trust.
        if self.stopped_at is None or (row_time or "") > self.stopped_at:
            self.stopped_at = row_time or ""
