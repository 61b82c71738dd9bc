"""Regex helpers shared by backends: validation, index pre-filter literals, snippets.

Regex grep runs Python's ``re`` over candidate rows. To avoid scanning every
message, a backend asks ``required_literal`` for a plain substring (3+
characters) that every match must contain, and uses its trigram index to fetch
only rows holding it.
"""

from __future__ import annotations

import re
import time

# The stdlib regex parser (re._parser since 3.11) gives the pattern's structure.
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

from lossless.errors import InputError

MIN_LITERAL = 3
# Characters that would need escaping in a LIKE pattern; literals avoid them.
LIKE_SPECIAL = "%_\\"
# The same for GLOB (SQLite's trigram index serves GLOB, but not LIKE ... ESCAPE).
GLOB_SPECIAL = "*?[]"


#: Longer search patterns are refused: compiling and running them costs memory
#: and time out of proportion (a 2,000,000-character pattern took minutes).
MAX_PATTERN_CHARS = 2000


def compile_user_regex(pattern: str) -> re.Pattern[str]:
    """Compile a search pattern, or raise ``InputError`` saying why it is refused.

    ``re`` has no timeout, and the scan budget is only checked between rows, so
    a pattern that backtracks catastrophically on one row would run past any
    budget: such patterns (nested quantifiers, many copies of a group holding
    ``.*``) are refused up front, as ``lcm sensitive add`` refuses them.
    """
    from lossless.redact.patterns import super_linear_reason

    shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InputError(
            f"regular expression is {len(pattern):,} characters long; "
            f"at most {MAX_PATTERN_CHARS:,} are accepted"
        )
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise InputError(f"invalid regular expression {shown!r}: {exc}") from None
    except (OverflowError, RecursionError, ValueError) as exc:
        raise InputError(
            f"invalid regular expression {shown!r}: {exc or 'nested too deeply'}"
        ) from None
    reason = super_linear_reason(pattern)
    if reason is not None:
        raise InputError(
            f"regular expression {shown!r} is refused: {reason}; it could run for minutes. "
            "Rewrite it without nested repeats (an atomic group (?>...) or a possessive "
            "quantifier such as a++ never backtracks), or use --mode full_text"
        )
    return compiled


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
    says stop. The clock is read every ``CHECK_EVERY`` rows only.
    """

    CHECK_EVERY = 64

    def __init__(self, seconds: float | None) -> None:
        self.deadline = None if seconds is None else time.monotonic() + max(0.0, seconds)
        self.stopped_at: str | None = None
        self._rows = 0

    def spent(self, row_time: str | None) -> bool:
        if self.deadline is None:
            return False
        self._rows += 1
        if self._rows % self.CHECK_EVERY or time.monotonic() < self.deadline:
            return False
        # Messages and summaries are scanned one after the other: keep the
        # newer of the two stopping points, the one a user can trust.
        if self.stopped_at is None or (row_time or "") > self.stopped_at:
            self.stopped_at = row_time or ""
        return True
