"""What kind of line a piece of text is: an error, a decision, code, a command.

The extractive summarizer asks these of every line it scores. The reference
definitions are the regular expressions below (``ERROR_RE`` and the rest);
as written, most of them are case-insensitive word lists, which CPython's
``re`` tries at every position of a line with a case-folding comparison per
character, and one (``\\w+(?:Error|Exception)\\b``) backtracks over every
word. Together they were the larger part of the summarizer's scoring time.

``LineKinds`` answers the same questions exactly, faster, for ASCII text (the
great majority of lines): each case-insensitive pattern is matched,
case-sensitively, against the lower-cased line (for ASCII text a
case-insensitive match of an ASCII literal is a match of its lower case in
the lower-cased text, and lower-casing ASCII keeps every offset); a pattern
that is an alternation is split into its alternatives (a search for ``A|B``
finds something exactly when a search for ``A`` or one for ``B`` does, and a
match at the start likewise), each anchored alternative tried only at the
start, and an alternative run only when a string every match of it holds is
present. Other text takes the reference patterns.
``tests/summarize/test_line_kinds.py`` compares both on the injection corpus,
the real transcripts and generated lines.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from lossless.regex_literals import LiteralGate
from lossless.summarize import identifiers as ids

__all__ = [
    "CODE_RE",
    "COMMAND_RE",
    "DECISION_STRONG_RE",
    "DECISION_WEAK_RE",
    "ERROR_RE",
    "ERROR_REPORT_RE",
    "LineKinds",
    "word_hints",
]

_ERROR_WORDS = (
    r"errors?|exception|traceback|failed|failing|failure|fatal|panic(?:ked)?|denied|"
    r"refused|segfault|abort(?:ed)?|cannot|can't|couldn't|unable to|"
    r"not found|no such file|timed? ?out|exit (?:code|status) [1-9]\d*|broken|crash(?:ed|es)?"
)
_REPORT_PHRASES = (
    r"no such file or directory|permission denied|command not found|connection refused|"
    r"timed out|segmentation fault|test(?:s)? failed|\d+ (?:failed|errors?)|does not exist|"
    r"is not defined|no module named|undefined (?:column|table|variable|method|reference)"
)
_STRONG_WORDS = (
    r"decided|decide|decision|we will|we'll|i will|i'll|let's|going to|instead(?: of)?|"
    r"switch(?:ed|ing)? to|chose|choose|chosen|agreed|settled on|root cause|because|"
    r"the fix|fixed|fixes|resolved|solved|conclusion|turns out|todo|next step|must|"
    r"don't|do not|never|always|requirement|goal"
)
_WEAK_WORDS = (
    r"should|plan|fix|implemented|added|removed|renamed|created|updated|changed|"
    r"moved|deleted|works|working|passes|passed|so that|need(?:s|ed)? to|want(?:s|ed)?"
)
_CODE_WORDS = (
    r"def|defp|defmodule|class|import|from|return|raise|throw|const|let|var|function|if|"
    r"elif|else|for|while|assert|end|fn|pub|use|alias|case|when|try|catch|except|with|async|"
    r"await|export|module|package|public|private|protected|static|struct|impl|match|switch|"
    r"#include|@\w+"
)
_CODE_START = rf"(?:{_CODE_WORDS})\b|[}})\].|:]|<[\w/!%]"
_CODE_END = r"[{(\[,;]$|->$|\bdo$"
_CODE_MIDDLE = r"\w=[{\"']|==|=~|=>|:=|!=|&&|\|\|"
_COMMAND_START = rf"\s*(?:[$❯%>]\s+|(?:sudo\s+)?(?:{ids.COMMAND_WORDS})\s+\S)"
_COMMAND_KEY = r'"(?:command|cmd)"\s*:\s*"|\b(?:command|cmd)=\S'

# -- the reference definitions ---------------------------------------------------

ERROR_RE = re.compile(
    rf"\b(?:{_ERROR_WORDS})\b"
    r"|\w+(?:Error|Exception)\b|\bE\d{3,4}\b|\bHTTP [45]\d\d\b|\b[45]\d\d (?:Not|Internal|Bad)",
    re.IGNORECASE,
)
# Tool output is full of code that merely *mentions* errors (`{:error, _}`,
# `except ValueError`); there only report-shaped errors count.
ERROR_REPORT_RE = re.compile(
    r"^\W*(?:error|fatal|panic|failed|failure)\b\s*[:!\[]|^\W*\w*(?:Error|Exception)\s*:"
    r"|^\W*(?-i:[a-z_][\w]*\.)+(?-i:[A-Z]\w*):\s"  # qualified exception: `psycopg.errors.X: ...`
    r"|(?-i:\bFAILED\b|\bERROR\b)|\bexit (?:code|status) [1-9]"
    rf"|\b(?:{_REPORT_PHRASES})\b"
    r"|\bHTTP [45]\d\d\b",
    re.IGNORECASE,
)
CODE_RE = re.compile(rf"^(?:{_CODE_WORDS})\b|{_CODE_END}|^[}})\].|:]|^<[\w/!%]|{_CODE_MIDDLE}")
DECISION_STRONG_RE = re.compile(rf"\b(?:{_STRONG_WORDS})\b", re.IGNORECASE)
DECISION_WEAK_RE = re.compile(rf"\b(?:{_WEAK_WORDS})\b", re.IGNORECASE)
COMMAND_RE = re.compile(rf"^{_COMMAND_START}|{_COMMAND_KEY}")

# -- the same, split and lower-cased, for ASCII text -----------------------------

# ERROR_RE's alternatives on the lower-cased line: the words, the names
# ending in "error" or "exception" (`\w+X\b` finds something exactly when
# `\BX\b` does: one word character before X is all it needs, and X starts
# with one), and those that need a digit.
_ERROR_WORDS_LOW = re.compile(rf"\b(?:{_ERROR_WORDS})\b")
_ERROR_NAME_LOW = re.compile(r"\B(?:error|exception)\b")
_ERROR_NUMBERED_LOW = re.compile(r"\be\d{3,4}\b|\bhttp [45]\d\d\b|\b[45]\d\d (?:not|internal|bad)")
_DIGITS = frozenset("0123456789")
# ERROR_REPORT_RE's alternatives: those anchored at the start (lower-cased,
# and the case-sensitive qualified exception), the case-sensitive words, and
# the phrases anywhere (lower-cased).
_REPORT_START_LOW = re.compile(
    r"\W*(?:(?:error|fatal|panic|failed|failure)\b\s*[:!\[]|\w*(?:error|exception)\s*:)"
)
_REPORT_QUALIFIED = re.compile(r"\W*(?:[a-z_][\w]*\.)+[A-Z]\w*:\s")
_REPORT_UPPER = re.compile(r"\bFAILED\b|\bERROR\b")
_REPORT_ANYWHERE_LOW = re.compile(
    rf"\bexit (?:code|status) [1-9]|\b(?:{_REPORT_PHRASES})\b|\bhttp [45]\d\d\b"
)
_STRONG_LOW = re.compile(rf"\b(?:{_STRONG_WORDS})\b")
_WEAK_LOW = re.compile(rf"\b(?:{_WEAK_WORDS})\b")
_CODE_START_RE = re.compile(_CODE_START)
_CODE_END_RE = re.compile(_CODE_END)
_CODE_MIDDLE_RE = re.compile(_CODE_MIDDLE)
_COMMAND_START_RE = re.compile(_COMMAND_START)
_COMMAND_KEY_RE = re.compile(_COMMAND_KEY)

# The word lists searched anywhere in a lower-cased ASCII line, by bit: the
# costliest tests left (``re`` tries every alternative at every position).
# ``word_hints`` answers, for all the lines of a chunk from one Aho-Corasick
# pass, which of them each line may match: every match of one holds one of
# its words (``regex_literals.required_literals``), so a line without any
# cannot match it.
_ERROR_WORDS_BIT, _REPORT_ANYWHERE_BIT, _STRONG_BIT, _WEAK_BIT = 1, 2, 4, 8
_WORD_LISTS = (_ERROR_WORDS_LOW, _REPORT_ANYWHERE_LOW, _STRONG_LOW, _WEAK_LOW)
_EVERY_LIST = 15


@functools.cache
def _word_gate() -> LiteralGate:
    return LiteralGate((p.pattern, p.pattern, p.flags) for p in _WORD_LISTS)


def word_hints(lines: Sequence[str]) -> list[int]:
    """For each line, the bits of the word lists its lower case may match
    (``LineKinds(line, hints)`` then skips the others; exact for any line)."""
    gate = _word_gate()
    if gate.always:  # pragma: no cover - every list has its words
        return [_EVERY_LIST] * len(lines)
    low = [line.lower() if line.isascii() else "" for line in lines]
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for line in low:
        starts.append(at)
        at += len(line)
        ends.append(at)
        at += 1
    hints = [0] * len(lines)
    for position, held in gate.line_candidates("\n".join(low), starts, ends, pairs=False).items():
        bit = 1 << position
        for k in held:
            hints[k] |= bit
    return hints


class LineKinds:
    """The kinds of one line (``ERROR_RE`` and the others, answered as they would)."""

    __slots__ = ("_ascii", "_hints", "_low", "text")

    def __init__(self, text: str, hints: int = _EVERY_LIST) -> None:
        """``hints``: ``word_hints`` of this line, when known (read for ASCII text only)."""
        self.text = text
        self._ascii = text.isascii()
        self._low = text.lower() if self._ascii else ""
        self._hints = hints

    def error(self) -> bool:
        """``ERROR_RE.search(text)``: a line that talks about an error."""
        if not self._ascii:
            return ERROR_RE.search(self.text) is not None
        low = self._low
        return (
            (self._hints & _ERROR_WORDS_BIT != 0 and _ERROR_WORDS_LOW.search(low) is not None)
            or (("error" in low or "exception" in low) and _ERROR_NAME_LOW.search(low) is not None)
            or (not _DIGITS.isdisjoint(low) and _ERROR_NUMBERED_LOW.search(low) is not None)
        )

    def error_report(self) -> bool:
        """``ERROR_REPORT_RE.search(text)``: a line shaped like an error report."""
        if not self._ascii:
            return ERROR_REPORT_RE.search(self.text) is not None
        text, low = self.text, self._low
        return (
            _REPORT_START_LOW.match(low) is not None
            or ("." in text and _REPORT_QUALIFIED.match(text) is not None)
            or (("FAILED" in text or "ERROR" in text) and _REPORT_UPPER.search(text) is not None)
            or (
                self._hints & _REPORT_ANYWHERE_BIT != 0
                and _REPORT_ANYWHERE_LOW.search(low) is not None
            )
        )

    def starts_error_report(self) -> bool:
        """``ERROR_REPORT_RE.match(text)``: the line begins as an error report."""
        if not self._ascii:
            return ERROR_REPORT_RE.match(self.text) is not None
        text, low = self.text, self._low
        return (
            _REPORT_START_LOW.match(low) is not None
            or ("." in text and _REPORT_QUALIFIED.match(text) is not None)
            or _REPORT_UPPER.match(text) is not None
            or (
                self._hints & _REPORT_ANYWHERE_BIT != 0
                and _REPORT_ANYWHERE_LOW.match(low) is not None
            )
        )

    def decision(self) -> int:
        """4 when ``DECISION_STRONG_RE`` finds something, else 2 when ``DECISION_WEAK_RE`` does, else 0."""
        if not self._ascii:
            if DECISION_STRONG_RE.search(self.text):
                return 4
            return 2 if DECISION_WEAK_RE.search(self.text) else 0
        if self._hints & _STRONG_BIT != 0 and _STRONG_LOW.search(self._low):
            return 4
        return 2 if self._hints & _WEAK_BIT != 0 and _WEAK_LOW.search(self._low) else 0

    def code(self) -> bool:
        """``CODE_RE.search(text)``: the line looks like source code (case-sensitive:
        the split holds for any text)."""
        text = self.text
        # `$` is the end or before a final newline, and `\bdo$` looks one
        # character before "do": the last four characters decide the end
        # alternatives (the whole text when it is that short).
        return (
            _CODE_START_RE.match(text) is not None
            or _CODE_END_RE.search(text[-4:]) is not None
            or (
                ("=" in text or "&&" in text or "||" in text)
                and _CODE_MIDDLE_RE.search(text) is not None
            )
        )

    def command(self) -> bool:
        """``COMMAND_RE.search(text)``: a shell command, or a tool call's command field
        (case-sensitive: the split holds for any text)."""
        text = self.text
        return _COMMAND_START_RE.match(text) is not None or (
            ("cmd" in text or "command" in text) and _COMMAND_KEY_RE.search(text) is not None
        )
