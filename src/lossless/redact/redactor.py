"""The redactor: finds secrets, replaces them with typed placeholders, counts them.

Overlapping findings are merged into one span (nothing in the union leaks) that
takes the category of its most specific detector. Text that is already a
placeholder is never touched, and a changed text is scanned again until nothing
new turns up, so ``redact(redact(x)) == redact(x)``.

JSON documents (native transcript lines, tool-call inputs) are redacted in place
on their raw text: unchanged lines stay byte-identical and a redacted line keeps
every byte outside the secret. A finding is only applied where it lies inside
one JSON string and does not cut an escape sequence, so the result is still
valid JSON; if some finding does not, the document is decoded, every string in
it (keys too) is redacted and it is re-encoded (valid, no longer byte-faithful).
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from lossless.models import NewMessage, NewNativeRecord, NewPart
from lossless.redact.detectors import (
    PLACEHOLDER_PREFIX,
    PLACEHOLDER_RE,
    PRIORITY,
    USER_PRIORITY,
    Finding,
    find_builtin,
    find_named_value,
    placeholder,
)
from lossless.redact.patterns import UserPattern, compile_pattern

T = TypeVar("T")

_JSON_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")
#: Rounds of find-and-replace before giving up on reaching a fixpoint; one is
#: the norm, two when a secret was glued to another.
_MAX_ROUNDS: Final = 4
#: Off only in tests: decoded documents are then always walked string by
#: string, the reference ``_decoded_clean`` is checked against.
JOINED_SCAN = True


@dataclass(frozen=True, slots=True)
class Redaction:
    """Redacted text and how many secrets of each category it had."""

    text: str
    counts: dict[str, int]

    @property
    def changed(self) -> bool:
        return bool(self.counts)


def merge_counts(*counts: Mapping[str, int]) -> dict[str, int]:
    """Sum per-category counts."""
    total: dict[str, int] = {}
    for c in counts:
        _add(total, c)
    return total


class Redactor:
    """Redacts secrets from text, JSON, nested values and whole messages.

    ``user_patterns`` are applied as given (filter them by project with
    ``patterns_for_project`` first); their regexes are only compiled here, so
    run ``validate_pattern`` when a pattern is added. With ``enabled=False``
    every method returns its input unchanged.
    """

    def __init__(self, user_patterns: Iterable[UserPattern] = (), *, enabled: bool = True) -> None:
        self._enabled = enabled
        self._patterns = tuple(user_patterns)
        self._compiled = tuple((p.category, compile_pattern(p.regex)) for p in self._patterns)

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def user_patterns(self) -> tuple[UserPattern, ...]:
        return self._patterns

    # ------------------------------------------------------------------ finding

    def find(self, text: str) -> list[Finding]:
        """Secrets in ``text``: sorted, non-overlapping, never inside a placeholder.

        Backslash escapes (``\\n``, ``\\t``, ``\\r``) count as the blanks they
        stand for (see ``_escape_view``): in JSON text, and in code or tool
        input quoted as text, the letter would otherwise hide a token's start.
        """
        if not self._enabled or not text:
            return []
        view = _escape_view(text)
        return self._finish(view, find_builtin(view))

    def _finish(self, text: str, found: list[Finding]) -> list[Finding]:
        """Add the user patterns' findings to the built-in ``found`` and merge.

        ``text`` is the escape view that ``found`` was computed on."""
        for category, regex in self._compiled:
            has_secret_group = "secret" in regex.groupindex
            for m in regex.finditer(text):
                start, end = m.span("secret") if has_secret_group else m.span()
                if end > start:
                    found.append(Finding(start, end, category))
        if not found:
            return []
        if PLACEHOLDER_PREFIX in text:
            found = _outside_placeholders(text, found)
        return _merge(found)

    # ---------------------------------------------------------------- redacting

    def redact_text(self, text: str) -> Redaction:
        """Replace every secret in ``text`` with ``[REDACTED:<category>]``."""
        findings = self.find(text)
        if not findings:
            return Redaction(text, {})
        return self._to_fixpoint(text, findings)

    def _to_fixpoint(self, text: str, findings: list[Finding]) -> Redaction:
        """Apply ``findings``, then look again until nothing new turns up.

        Replacing a secret changes its neighbours' context: a token glued to the
        end of a PEM block ("...KEY-----ghp_...") fails its boundary check until
        the block has become a placeholder. Each round hides at least one more
        character and placeholders are never matched again, so this ends; the
        extra scan is only paid by texts that had a secret.
        """
        counts: dict[str, int] = {}
        for _ in range(_MAX_ROUNDS):
            result = _apply(text, findings)
            _add(counts, result.counts)
            text = result.text
            findings = self.find(text)
            if not findings:
                break
        return Redaction(text, counts)

    def redact_json(self, text: str) -> Redaction:
        """Redact a JSON document (e.g. one JSONL line) keeping it valid JSON.

        Unchanged documents are returned as the very same string, and a changed
        one differs only inside its secrets' JSON strings -- unless a finding
        straddles JSON syntax (a user pattern, a PEM block whose markers sit in
        different strings). Then the document is decoded, every string (keys
        too) is redacted and it is re-encoded: valid, but not byte-faithful.
        Text that is not JSON is redacted like ``redact_text``.
        """
        return self._redact_json(text, self.find(text))

    def _redact_json(self, text: str, findings: list[Finding]) -> Redaction:
        """``redact_json`` given the findings of ``text`` itself."""
        if not text.lstrip().startswith(("{", "[", '"')):
            return self._to_fixpoint(text, findings) if findings else Redaction(text, {})
        counts: dict[str, int] = {}
        for _ in range(_MAX_ROUNDS):
            if not findings:
                break
            if len(_json_safe(text, findings)) != len(findings):
                structural = self._redact_decoded(text)
                return Redaction(structural.text, merge_counts(counts, structural.counts))
            result = _apply(text, findings)
            _add(counts, result.counts)
            text = result.text
            findings = self.find(text)
        if _hides_text(text):
            decoded = self._redact_decoded(text)
            if decoded.counts:
                return Redaction(decoded.text, merge_counts(counts, decoded.counts))
        return Redaction(text, counts)

    def _redact_decoded(self, text: str) -> Redaction:
        try:
            document = json.loads(text)
        except (ValueError, RecursionError):
            # Not JSON after all (a line cut short): nothing to corrupt.
            findings = self.find(text)
            return self._to_fixpoint(text, findings) if findings else Redaction(text, {})
        if JOINED_SCAN and self._decoded_clean(text):
            return Redaction(text, {})
        counts: dict[str, int] = {}
        value = self._walk(document, None, counts, keys=True)
        if not counts:
            return Redaction(text, {})
        return Redaction(_dump_json(value), counts)

    def _decoded_clean(self, text: str) -> bool:
        """Whether ``_walk`` of the JSON document ``text`` would find nothing, shown cheaply.

        The walk scans every string on its own: tens of thousands of calls
        for a large document. Here its strings (keys, and the strings of JSON
        documents inside strings that the walk would decode) are joined with
        newlines and scanned once. Each is then a piece bounded by newlines,
        and the built-in detectors find nothing in the joined text only if
        they find nothing in any piece (the argument of ``_PartScan``: no
        detector's trigger or value crosses a newline, and a newline reads
        like the end of the text). A finding in the joined text, even one
        spanning two strings, only sends the document to the walk, which
        decides. A value under a secret-looking key is judged as the walk
        judges it. User patterns may anchor on the text's ends, so with any
        the walk always runs.
        """
        if self._compiled:
            return False
        strings: list[str] = []
        try:
            clean = _collect_strings(text, strings)
        except (ValueError, RecursionError):
            return False
        return clean and not self.find("\n".join(strings))

    def redact_value(self, value: T) -> tuple[T, dict[str, int]]:
        """Redact every string inside nested dicts/lists/tuples; keys are kept.

        A string stored under a secret-looking key (``{"password": "..."}``) is
        judged as a whole, like an assignment. Unchanged containers are returned
        as the same objects.
        """
        if not self._enabled:
            return value, {}
        counts: dict[str, int] = {}
        return self._walk(value, None, counts, keys=False), counts

    def _walk(self, value: Any, key: str | None, counts: dict[str, int], *, keys: bool) -> Any:
        """Redact every string in ``value``; unchanged containers come back as themselves.

        Iterative, with an explicit stack: a document nested a thousand levels
        deep (valid JSON, hostile or not) must not exhaust Python's recursion
        limit half-way through a message.
        """
        if not isinstance(value, dict | list | tuple):
            return self._walk_string(value, key, counts) if isinstance(value, str) else value
        stack = [_Frame(value, key)]
        while True:
            frame = stack[-1]
            item: Any = next(frame.items, _DONE)
            if item is _DONE:
                stack.pop()
                done = frame.result()
                if not stack:
                    return done
                stack[-1].accept(done)
                continue
            child: Any
            if frame.is_dict:
                k: Any = item[0]
                child = item[1]
                new_k = self._walk_string(k, None, counts) if keys and isinstance(k, str) else k
                # The value is judged under its key as stored (redacted), so a
                # second redaction of the result judges it the same way.
                child_key = new_k if isinstance(new_k, str) else None
                frame.pending = (k, new_k, child)
            else:
                child, child_key = item, frame.key
                frame.pending = (None, None, child)
            if isinstance(child, dict | list | tuple):
                stack.append(_Frame(child, child_key))
                continue
            new_child = (
                self._walk_string(child, child_key, counts) if isinstance(child, str) else child
            )
            frame.accept(new_child)

    def _walk_string(self, value: str, key: str | None, counts: dict[str, int]) -> str:
        findings = self.find(value)
        named = find_named_value(key, value) if key is not None else None
        if named is not None and PLACEHOLDER_PREFIX not in value:
            result = self._to_fixpoint(value, _merge([*findings, named]))
        elif _looks_like_json(value):
            # A JSON document inside a string (tool arguments, a tool's JSON
            # output): its own strings may hide escaped values.
            result = self._redact_json(value, findings)
        elif findings:
            result = self._to_fixpoint(value, findings)
        else:
            return value
        if not result.counts:
            return value
        _add(counts, result.counts)
        return result.text

    def redact_message(self, msg: NewMessage) -> tuple[NewMessage, dict[str, int]]:
        """Redact content, parts (text and metadata), metadata and native records."""
        if not self._enabled:
            return msg, {}
        counts: list[dict[str, int]] = []

        def value(v: T) -> T:
            new, c = self.redact_value(v)
            counts.append(c)
            return new

        view = _escape_view(msg.content)
        builtin = find_builtin(view) if msg.content else []
        findings = self._finish(view, builtin) if msg.content else []
        scan = self._to_fixpoint(msg.content, findings) if findings else Redaction(msg.content, {})
        counts.append(scan.counts)
        # Part texts are usually pieces of the content (render_content joins
        # them): see _PartScan for when the content's scan covers them.
        seen = _PartScan(msg.content, scan, builtin_clean=not builtin)
        parts = tuple(self._redact_part(p, counts, seen) for p in msg.parts)
        metadata = value(msg.metadata)
        records = tuple(self._redact_record(r, counts) for r in msg.native_records)
        total = merge_counts(*counts)
        if not total:
            return msg, {}
        redacted = dataclasses.replace(
            msg, content=scan.text, parts=parts, metadata=metadata, native_records=records
        )
        return redacted, total

    def _redact_part(
        self, part: NewPart, counts: list[dict[str, int]], seen: _PartScan | None = None
    ) -> NewPart:
        new_text = part.text
        if part.text is not None:
            text = part.text
            if seen is not None and text == seen.content and part.kind != "tool_use":
                result = seen.scan  # a plain message's only part repeats its content
            else:
                # Covered text has no built-in finding: only user patterns can fire.
                covered = seen is not None and seen.covers(text)
                findings = self._finish(_escape_view(text), []) if covered else self.find(text)
                # A tool_use part's text is the JSON-encoded input: keep it parseable.
                if part.kind == "tool_use":
                    result = self._redact_json(text, findings)
                elif findings:
                    result = self._to_fixpoint(text, findings)
                else:
                    result = Redaction(text, {})
            counts.append(result.counts)
            new_text = result.text
        metadata, c = self.redact_value(part.metadata)
        counts.append(c)
        if new_text is part.text and metadata is part.metadata:
            return part
        return dataclasses.replace(part, text=new_text, metadata=metadata)

    def _redact_record(
        self, record: NewNativeRecord, counts: list[dict[str, int]]
    ) -> NewNativeRecord:
        result = self.redact_json(record.raw)
        if not result.counts:
            return record
        counts.append(result.counts)
        return dataclasses.replace(record, raw=result.text)


_DEFAULT: Redactor | None = None


def redact_text(text: str) -> Redaction:
    """Redact ``text`` with the built-in detectors only."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Redactor()
    return _DEFAULT.redact_text(text)


# ------------------------------------------------------------------- internals

# An escape glues its letter to what follows: "\\nghp_..." (JSON text, or a
# tool's input quoted in a message) reads as "nghp_...", and a token's start
# fails the detectors' boundary check. They see every backslash followed by
# n, t or r as two blanks instead: the same length, so every span still
# indexes the text. That includes an escaped backslash and an n in JSON text:
# decoded, it is the same backslash-n, which a scan of the decoded text blanks.


def _escape_view(text: str) -> str:
    if "\\" not in text:
        return text
    return text.replace("\\n", "  ").replace("\\t", "  ").replace("\\r", "  ")


_DONE: Final = object()


class _Frame:
    """One container being walked: its items so far, and whether one changed."""

    __slots__ = ("changed", "is_dict", "items", "key", "out", "pending", "value")

    def __init__(self, value: dict[Any, Any] | list[Any] | tuple[Any, ...], key: str | None):
        self.value = value
        self.key = key
        self.is_dict = isinstance(value, dict)
        self.items: Any = iter(value.items()) if isinstance(value, dict) else iter(value)
        self.out: Any = {} if self.is_dict else []
        self.changed = False
        self.pending: tuple[Any, Any, Any] = (None, None, None)

    def accept(self, new_child: Any) -> None:
        k, new_k, child = self.pending
        self.changed = self.changed or new_child is not child or new_k is not k
        if self.is_dict:
            self.out[new_k] = new_child
        else:
            self.out.append(new_child)

    def result(self) -> Any:
        if not self.changed:
            return self.value
        return tuple(self.out) if isinstance(self.value, tuple) else self.out


def _looks_like_json(text: str) -> bool:
    return len(text) > 2 and text[0] in "{[" and '"' in text


def _collect_strings(text: str, strings: list[str]) -> bool:
    """Append every string the walk of JSON ``text`` would scan to ``strings``.

    False as soon as a value under a secret-looking key is a secret. The
    decoder hands each object's pairs to a hook (in C, no walk in Python);
    the hook returns None, as the objects themselves are not needed.
    """
    clean = True

    def add(value: Any, key: str | None) -> None:
        nonlocal clean
        if isinstance(value, str):
            if key is not None and find_named_value(key, value) is not None:
                clean = False
            strings.append(value)
            # The walk decodes a JSON document inside a string that hides text.
            if len(value) > 2 and value[0] in "{[" and _hides_text(value):
                # Not JSON after all: scanned as the text it is, as the walk does.
                with contextlib.suppress(ValueError, RecursionError):
                    clean = _collect_strings(value, strings) and clean
        elif isinstance(value, list):
            for item in value:
                add(item, key)

    def pairs(items: list[tuple[str, Any]]) -> None:
        for k, v in items:
            strings.append(k)
            add(v, k)

    add(json.loads(text, object_pairs_hook=pairs), None)
    return clean


# A JSON escape that can hide what a detector looks for in the raw text: an
# escaped printable ASCII character ("g\u0068p_..."; encoders only escape
# control and non-ASCII characters, so this is deliberate or hostile), an
# escaped slash (inside base64 and AWS secrets), or an escaped backslash before
# an escaped quote (a JSON string inside a JSON string: "\\\"api_key\\\": ...").
_PRINTABLE_ESCAPE: Final = re.compile(r"\\u00[2-7][0-9a-fA-F]")


def _hides_text(text: str) -> bool:
    """Whether the raw JSON ``text`` may read differently once decoded."""
    if "\\" not in text:
        return False
    return (
        "\\/" in text
        or '\\\\\\"' in text
        or ("\\u00" in text and _PRINTABLE_ESCAPE.search(text) is not None)
    )


#: Occurrences of a part text tried before scanning it on its own instead.
_MAX_OCCURRENCES: Final = 4


@dataclass(frozen=True, slots=True)
class _PartScan:
    """A message's content, its redaction, and whether the built-ins found nothing.

    ``render_content`` joins part texts with blank lines and puts "[tool_result] "
    and the like before them. If ``content`` has no built-in finding, neither
    has a piece of it that starts at the start, after a newline or after "] "
    and ends at the end or before a newline. Every detector needs its trigger
    inside the text. Tokens, URLs, names and unquoted values never contain
    whitespace, and the look-arounds at a token's edges, the "alphanumeric
    before ://" test and a name's backward walk treat a newline or a blank like
    the ends of the text. A construct that starts before the piece and runs into
    it (a quoted value with blanks, a truncated PEM body) is either a finding,
    which ``builtin_clean`` rules out, or is dropped without consuming the
    triggers after it. A PEM body that runs on past the piece only adds base64
    lines, which never turns a key into a non-key. The one construct with a
    blank that could consume a trigger inside the piece is a PEM marker
    ("-----BEGIN RSA PRIVATE KEY-----"), hence "] " and not any blank.
    So a finding in the piece would be one in the content too.
    """

    content: str
    scan: Redaction
    builtin_clean: bool

    def covers(self, text: str) -> bool:
        """Whether ``text`` is known to have no built-in finding."""
        if not self.builtin_clean or not text:
            return False
        content = self.content
        start = content.find(text)
        for _ in range(_MAX_OCCURRENCES):
            if start < 0:
                return False
            end = start + len(text)
            if (
                start == 0 or content[start - 1] == "\n" or content[start - 2 : start] == "] "
            ) and (end == len(content) or content[end] == "\n"):
                return True
            start = content.find(text, start + 1)
        return False


def _outside_placeholders(text: str, findings: list[Finding]) -> list[Finding]:
    existing = [m.span() for m in PLACEHOLDER_RE.finditer(text)]
    if not existing:
        return findings
    starts = [s for s, _ in existing]
    kept = []
    for f in findings:
        i = bisect.bisect_right(starts, f.end - 1) - 1
        # The only placeholder that can overlap [start, end) is the last one
        # starting before ``end``, since placeholders never overlap each other.
        if i >= 0 and existing[i][1] > f.start:
            continue
        kept.append(f)
    return kept


def _add(total: dict[str, int], counts: Mapping[str, int]) -> None:
    for category, n in counts.items():
        total[category] = total.get(category, 0) + n


def _priority(category: str) -> int:
    return PRIORITY.get(category, USER_PRIORITY)


def _merge(findings: list[Finding]) -> list[Finding]:
    findings.sort(key=lambda f: (f.start, -f.end))
    merged: list[Finding] = []
    for f in findings:
        if merged and f.start < merged[-1].end:
            last = merged[-1]
            category = min(last.category, f.category, key=_priority)
            merged[-1] = Finding(last.start, max(last.end, f.end), category)
        else:
            merged.append(f)
    return merged


def _apply(text: str, findings: list[Finding]) -> Redaction:
    pieces: list[str] = []
    counts: dict[str, int] = {}
    pos = 0
    for f in findings:
        pieces.append(text[pos : f.start])
        pieces.append(placeholder(f.category))
        counts[f.category] = counts.get(f.category, 0) + 1
        pos = f.end
    pieces.append(text[pos:])
    return Redaction("".join(pieces), counts)


def _dump_json(value: Any) -> str:
    dumped = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        dumped.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from \udXXX escapes: keep them escaped
        dumped = json.dumps(value, separators=(",", ":"))
    return dumped


def _json_safe(text: str, findings: list[Finding]) -> list[Finding]:
    """The findings that lie inside one JSON string body without cutting an escape."""
    bodies = [(m.start() + 1, m.end() - 1) for m in _JSON_STRING.finditer(text)]
    starts = [s for s, _ in bodies]
    safe = []
    for f in findings:
        i = bisect.bisect_right(starts, f.start) - 1
        if i < 0 or f.end > bodies[i][1]:
            continue
        if _inside_escape(text, f.start) or _inside_escape(text, f.end):
            continue
        safe.append(f)
    return safe


def _inside_escape(text: str, pos: int) -> bool:
    """Whether ``pos`` falls strictly inside an escape sequence such as ``\\n`` or ``\\u00e9``."""
    if _odd_backslashes_before(text, pos):
        return True
    # Inside the four hex digits of a \\uXXXX escape?
    for back in range(1, 5):
        u = pos - back
        if u < 1 or text[u] != "u":
            continue
        if all(c in _HEX_DIGITS for c in text[u + 1 : pos]) and _odd_backslashes_before(text, u):
            return True
    return False


def _odd_backslashes_before(text: str, pos: int) -> bool:
    n = 0
    while pos - n - 1 >= 0 and text[pos - n - 1] == "\\":
        n += 1
    return n % 2 == 1
