"""The identifiers an agent greps for, pulled out of text for a dense index.

At the default leaf target (~1,200 tokens for ~20,000 source tokens) most
sentences must go, but the handles in them are short: a path, a command, an
error code or a number costs a few tokens on its own, against thirty for the
sentence around it. The extractive summarizer therefore lists them separately
(``render_section``) and names the ones that still do not fit in its
"Expand for details about:" line, so a later grep or expand can find them.

Everything here is deterministic: items are ranked by weight, ties broken by
first appearance, never by hash or set order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# Kinds in the order the section lists them; ``round_robin`` ranks them in
# this order too, so no single kind (there are always many paths) crowds out
# the others.
KINDS = ("error", "path", "command", "number", "url", "name")
LABELS = {
    "error": "errors",
    "path": "files",
    "command": "commands",
    "number": "numbers",
    "url": "urls",
    "name": "names",
}
_KIND_OF_LABEL = {label: kind for kind, label in LABELS.items()}
# Items of each kind per round of ``IdentIndex.ranked``: files are both the most
# numerous and the most used handle.
_SHARE = {"error": 1, "path": 2, "command": 1, "number": 1, "url": 1, "name": 1}
# Commands and error messages may contain commas themselves.
_SEPARATOR = {"error": "; ", "command": "; "}
SECTION_TITLE = "References:"
TIME_LABEL = "time"

COMMAND_WORDS = (
    r"git|npm|npx|pnpm|yarn|pip3?|uv|uvx|poetry|pytest|python3?|node|deno|bun|cargo|rustc|go|"
    r"make|cmake|docker(?:-compose)?|kubectl|helm|terraform|ls|cd|cat|grep|rg|sed|awk|find|"
    r"curl|wget|psql|sqlite3|mysql|redis-cli|ssh|scp|rsync|chmod|chown|mkdir|rm|mv|cp|touch|"
    r"tar|brew|apt|apt-get|systemctl|journalctl|lcm|claude|codex|gh|ruff|mypy|black|eslint|"
    r"tsc|jest|vitest|mvn|gradle|dotnet|bundle|rake|rails|mix|export|source|alembic|bash|sh|"
    r"just|tox|nox|bd"
)
_STARTS_COMMAND_RE = re.compile(rf"^(?:\$\s+)?(?:sudo\s+)?(?:{COMMAND_WORDS}|\./[\w./-]+)\s+\S")
_PROMPT_LINE_RE = re.compile(r"^\s*[$❯]\s+(\S.*)$")
_LINE_COMMAND_RE = re.compile(rf"^\s*(?:sudo\s+)?(?:{COMMAND_WORDS})\s+\S")
# `command=...` as the summarizer's compacted tool-call JSON renders it, up to
# the next `key=` field; or the raw JSON form.
_KV_COMMAND_RE = re.compile(r"\b(?:command|cmd)=(.+?)(?=, [\w-]+=|, …$|$)")
_JSON_COMMAND_RE = re.compile(r'"(?:command|cmd)"\s*:\s*"((?:[^"\\]|\\.){2,})"')
# Sentences and code that merely start with a command word (`export async function`).
_NOT_COMMAND_RE = re.compile(r"[.:{(\[,;]\s*$|\bfunction\b|=>|\bclass\b|\breturn\b")
_BACKTICK_RE = re.compile(r"`([^`\n]{2,160})`")

URL_RE = re.compile(r"\b(?:https?|s3|gs|ftp|ssh|git|wss?|postgres(?:ql)?|redis)://[^\s<>\"'`)\]]+")
_FILE_EXTENSIONS = (
    r"py|pyi|ipynb|ts|tsx|js|jsx|mjs|cjs|rs|go|java|kt|rb|php|c|h|cc|cpp|hpp|cs|"
    r"swift|m|scala|ex|exs|erl|hs|lua|r|md|rst|txt|json|jsonl|toml|yaml|yml|ini|cfg|conf|sql|"
    r"sh|bash|zsh|fish|ps1|html|css|scss|vue|svelte|lock|env|xml|csv|log|proto|gradle|tf|"
    r"dockerfile|db|sqlite"
)
PATH_RE = re.compile(
    r"(?<![\w/.:-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*[\w]"
    rf"|\b[\w-]+\.(?:{_FILE_EXTENSIONS})\b",
    re.IGNORECASE,
)
# The tail of PATH_RE's second alternative: every match of it ends with one of
# these (and every match of the first holds a "/"). Searched alone it is far
# cheaper than PATH_RE: `re` skips straight to each "." (an uncased literal
# prefix), where PATH_RE tries both alternatives at every position.
_PATH_EXTENSION_RE = re.compile(rf"\.(?:{_FILE_EXTENSIONS})\b", re.IGNORECASE)
_EXTENSION_RE = re.compile(r"\.[A-Za-z][\w-]{0,9}$")
_ARITY_RE = re.compile(r"\d[\d-]*")
_TS_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)

# `psycopg.errors.UndefinedColumn: ...`, `KeyError: 'user'`: the report line itself.
_EXCEPTION_LINE_RE = re.compile(
    r"^\W{0,4}((?:(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Fault|Failure|Warning)"
    r"|(?:[a-z_]\w*\.)+[A-Z]\w*|(?i:error|fatal|panic)(?:\[\w+\])?)\s*:\s*\S.*)$"
)
_EXCEPTION_NAME_RE = re.compile(
    r"\b(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Fault|Failure)\b(?!\()"
)
# ERR_000342, ORA-00942, E_TIMEOUT_42: an upper-case prefix and a number.
_CODE_RE = re.compile(r"\b[A-Z][A-Z0-9]*(?:[_-][A-Z0-9]+)*[_-]\d{2,}[A-Z0-9]*\b")
# Shorter codes (E0425, TS2345, ENOENT, HTTP 503) only count in error lines:
# elsewhere `SHA256` or `EOF` are not errors.
_SHORT_CODE_RE = re.compile(
    r"\b(?:[A-Z]{1,5}\d{3,5}|HTTP [45]\d\d|exit (?:code|status) [1-9]\d*"
    r"|E(?:NO|ACCES|CONN|ADDR|PERM|AGAIN|EXIST|INVAL|PIPE|TIMEDOUT|HOSTUNREACH|NET|ISDIR|"
    r"NOTDIR|MFILE|BADF|BUSY|ROFS|DEADLK|INTR|IO|XDEV|NXIO|FAULT|NOMEM|RANGE|ALREADY)[A-Z]*)\b"
)
_NAME_CODE_WORDS = ("ERR", "ERROR", "EXC", "FAIL", "FATAL", "E")

_NUMBER_RE = re.compile(
    r"(?<![\w.:/#@-])(\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(%|ms|s|kb|mb|gb|k|x)?(?![\w.:/]\w|\w)",
    re.IGNORECASE,
)
_ANY_DIGIT_RE = re.compile(r"\d")
_CLOCK_RE = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?\b")
_VERSION_RE = re.compile(r"\bv?\d+(?:\.\d+){1,3}\b")
_HEXISH_RE = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{6,}\b")
_WORD_AFTER_RE = re.compile(r"^\s?([A-Za-z][A-Za-z-]{2,20})\b")
_WORD_BEFORE_RE = re.compile(r"\b([A-Za-z][A-Za-z_-]{1,20})[ =]$")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "in",
        "into",
        "is",
        "it",
        "of",
        "on",
        "or",
        "so",
        "than",
        "that",
        "the",
        "then",
        "to",
        "was",
        "were",
        "with",
        "which",
        "who",
        "has",
        "had",
        "have",
        "not",
        "but",
        "if",
        "this",
        "these",
        "those",
        "its",
        "per",
        "via",
    ]
)

_CAMEL_RE = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b|\b[a-z]+[A-Z][A-Za-z0-9]*\b")
_SNAKE_RE = re.compile(r"\b[A-Za-z][a-z0-9]*(?:_[A-Za-z0-9]+)+\b")
# A name has inner structure (`snake_case`, `camelCase`, `mod.fn`, `v2`); a
# backticked plain word (`with`, `Read`) is not worth listing.
_STRUCTURED_RE = re.compile(r"[_.:\d-]|[a-z][A-Z]")
_IDENT_SPAN_RE = re.compile(r"^[A-Za-z_][\w.:-]*(?:\(\))?$")
_MARKER_WORDS = frozenset(
    {"tool_use", "tool_result", "tool_call", "function_call", "file_path", "is_error"}
)

_KEY_RE = re.compile(r"\b\w+=")
# Compiled once: ``re.search(pattern, ...)`` looks its pattern up in a cache on
# every call, which the per-line helpers below paid thousands of times a chunk.
_LETTER_RE = re.compile(r"[A-Za-z]")
_VERSION_LIKE_RE = re.compile(r"v?\d[\d.]*")
_PATH_MARK_RE = re.compile(r"[._\d-]")
_CODE_SEPARATOR_RE = re.compile(r"[_-]")
_KEYED_RE = re.compile(r"\b([A-Za-z_][\w.-]{0,30})=$")
_ID_KEY_RE = re.compile(r"(?i)id$")
_MAX_COMMAND = 80
_MAX_ERROR = 80


@dataclass(slots=True)
class Ident:
    """One distinct identifier: ``value`` is what must appear verbatim, ``text`` what is shown."""

    kind: str
    value: str
    text: str
    first: int
    weight: float
    count: int = 1


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _blank(text: str, pattern: re.Pattern[str], *, needs: str | tuple[str, ...] = ()) -> str:
    """Replace matches with spaces of the same length, so offsets stay valid.

    ``needs``: strings every match contains one of (a text holding none
    cannot match, and a substring test is far cheaper than the pattern).
    """
    if needs and not _holds(text, needs):
        return text
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def _spaced(text: str, matches: list[re.Match[str]]) -> str:
    """``text`` with ``matches`` (of one ``finditer`` over it) replaced by spaces of
    the same length: what ``_blank`` makes of them."""
    if not matches:
        return text
    parts: list[str] = []
    last = 0
    for match in matches:
        start, end = match.span()
        parts.append(text[last:start])
        parts.append(" " * (end - start))
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _holds(text: str, needs: str | tuple[str, ...]) -> bool:
    """Whether ``text`` holds ``needs`` (one string) or one of them (a tuple)."""
    if isinstance(needs, str):
        return needs in text
    for need in needs:  # noqa: SIM110 - a loop: a generator costs more than its tests
        if need in text:
            return True
    return False


# What every match of a pattern contains, checked before running it: most
# lines hold no URL, backtick or `=`, and running ~25 patterns on every line
# of a chunk was most of the summarizer's scoring cost. Each is read off its
# pattern: URL_RE needs "://"; _TS_RE "-" (its date); _CLOCK_RE ":"; _VERSION_RE
# "."; PATH_RE "/" or an extension (``_may_hold_path``); _KEY_RE "=";
# _CODE_RE "_" or "-" before its digits; _SNAKE_RE "_"; _EXCEPTION_NAME_RE its
# suffix; _KV_COMMAND_RE "="; _JSON_COMMAND_RE a quote; _BACKTICK_RE a backtick.
_URL_NEEDS = "://"
_CODE_NEEDS = ("_", "-")
_EXCEPTION_NEEDS = ("Error", "Exception", "Fault", "Failure")


def is_path(candidate: str) -> bool:
    """Whether a PATH_RE match is a file path rather than `and/or` or a date."""
    if _TS_RE.fullmatch(candidate) or not _LETTER_RE.search(candidate):
        return False
    if candidate.startswith(("/", "~", "./", "../")):
        return True
    # Function arities in stack traces (`Enum.each/2`, `fn/7`, `-each/2-lists`).
    if candidate.startswith("-") or _ARITY_RE.fullmatch(candidate.rsplit("/", 1)[-1]):
        return False
    if candidate.count("/") >= 2:
        return True
    if _EXTENSION_RE.search(candidate):
        # `e.g` / `i.e` / `v1.2` are not file names.
        return len(candidate) > 4 and not _VERSION_LIKE_RE.fullmatch(candidate)
    return "/" in candidate and bool(_PATH_MARK_RE.search(candidate))


def _may_hold_path(text: str) -> bool:
    """False when PATH_RE cannot match ``text``: no "/" (its first alternative
    needs one) and no "." starting a file extension (its second ends with one)."""
    return "/" in text or ("." in text and _PATH_EXTENSION_RE.search(text) is not None)


def _path_matches(text: str) -> list[re.Match[str]]:
    """PATH_RE's matches in ``text`` (``_paths`` and ``_names`` share one pass)."""
    return list(PATH_RE.finditer(text)) if _may_hold_path(text) else []


def _paths(text: str, matches: list[re.Match[str]] | None = None) -> list[str]:
    """File paths in ``text``; ``matches``: ``_path_matches(text)``, when known."""
    out: list[str] = []
    for match in _path_matches(text) if matches is None else matches:
        candidate = match.group(0).rstrip(".")
        if text[match.end() : match.end() + 1] == "(":
            continue  # `Response.json()` is a call, not a file
        if is_path(candidate):
            out.append(candidate)
    return out


def _commands(text: str, *, in_tool: bool) -> list[tuple[str, bool]]:
    """(command, marked): marked when the writer set it off (`` `cmd` ``, `$ cmd`)."""
    found: list[tuple[str, bool]] = []
    prompt = _PROMPT_LINE_RE.match(text)
    if prompt:
        found.append((prompt.group(1), True))
    elif not in_tool and _LINE_COMMAND_RE.match(text) and not _NOT_COMMAND_RE.search(text):
        # A bare `git status` line in prose; in tool output such lines are
        # usually the body of a script being shown, not something that ran.
        found.append((text.strip(), False))
    if "=" in text:
        found.extend((m.group(1), False) for m in _KV_COMMAND_RE.finditer(text))
    if '"' in text:
        found.extend((m.group(1), False) for m in _JSON_COMMAND_RE.finditer(text))
    for match in _BACKTICK_RE.finditer(text) if "`" in text else ():
        span = match.group(1).strip()
        if _STARTS_COMMAND_RE.match(span):
            found.append((span.removeprefix("$").strip(), True))
    return [(_clip(c, _MAX_COMMAND), marked) for c, marked in found if len(c.strip()) > 2]


def _code_matches(text: str) -> list[str]:
    """_CODE_RE's matches in ``text`` (``_errors`` and ``_names`` share one pass)."""
    return [m.group(0) for m in _CODE_RE.finditer(text)] if _holds(text, _CODE_NEEDS) else []


def _errors(
    text: str, *, error_line: bool, codes: list[str] | None = None
) -> list[tuple[str, str]]:
    """(value, shown) pairs: codes, exception names, and an exception line itself.

    ``codes``: ``_code_matches(text)``, when known."""
    out: list[tuple[str, str]] = []
    line = _EXCEPTION_LINE_RE.match(text) if error_line else None
    if line:
        message = _clip(line.group(1), _MAX_ERROR)
        out.append((message, message))
    for code in _code_matches(text) if codes is None else codes:
        prefix = _CODE_SEPARATOR_RE.split(code, maxsplit=1)[0]
        if error_line or prefix in _NAME_CODE_WORDS:
            out.append((code, code))
    if error_line:
        out.extend((m.group(0), m.group(0)) for m in _SHORT_CODE_RE.finditer(text))
    if not line and _holds(text, _EXCEPTION_NEEDS):
        out.extend((m.group(0), m.group(0)) for m in _EXCEPTION_NAME_RE.finditer(text))
    return out


def _numbers(text: str) -> list[tuple[str, str, int]]:
    """(value, shown with a word of context, digit count) for numbers worth keeping.

    Two-digit counts and line numbers are everywhere; only numbers of three
    or more digits (or with a unit) identify something. Numbers inside
    timestamps, clock times, versions, paths, hex ids and names are skipped.
    """
    if not _ANY_DIGIT_RE.search(text):
        return []
    masked = text
    for pattern, needs in (
        (URL_RE, _URL_NEEDS),
        (_TS_RE, "-"),
        (_CLOCK_RE, ":"),
        (_VERSION_RE, "."),
        (_HEXISH_RE, ()),
    ):
        masked = _blank(masked, pattern, needs=needs)
    if _may_hold_path(masked):
        masked = _blank(masked, PATH_RE)
    out: list[tuple[str, str, int]] = []
    for match in _NUMBER_RE.finditer(masked):
        value = match.group(0)
        digits = sum(ch.isdigit() for ch in match.group(1))
        if digits < 3 and not (match.group(2) and digits >= 2):
            continue
        before = text[max(0, match.start() - 24) : match.start()]
        after = text[match.end() : match.end() + 24]
        keyed = _KEYED_RE.search(before)
        nxt = _WORD_AFTER_RE.match(after)
        prev = _WORD_BEFORE_RE.search(before)
        if keyed:
            shown = f"{keyed.group(1)}={value}"
            if not _ID_KEY_RE.search(keyed.group(1)):
                digits //= 2  # `latency_ms=1902` is a measurement, `request_id=` a handle
        elif nxt and nxt.group(1).lower() not in _STOP:
            shown = f"{value} {nxt.group(1)}"
        elif prev and prev.group(1).lower() not in _STOP:
            shown = f"{prev.group(1)} {value}"
        elif digits >= 6:
            shown = value
        else:
            continue  # a bare `1016` (a line number, a count) says nothing on its own
        out.append((value, shown, digits))
    return out


def camel_and_snake(text: str) -> tuple[list[str], list[str]]:
    """``_CAMEL_RE.findall(text)`` and ``_SNAKE_RE.findall(text)``, each run only
    where it can match: camelCase needs an upper-case ASCII letter (a text whose
    cased letters are all lower case has none), snake_case a "_"."""
    camel = _CAMEL_RE.findall(text) if not text.islower() else []
    snake = _SNAKE_RE.findall(text) if "_" in text else []
    return camel, snake


def _names(
    text: str,
    *,
    in_tool: bool,
    code: bool,
    paths: list[re.Match[str]] | None = None,
    codes: list[str] | None = None,
    words: tuple[list[str], list[str]] | None = None,
) -> list[str]:
    """Names in ``text``. Passes already made over ``text``, when known:
    ``paths`` is ``_path_matches(text)``, ``codes`` ``_code_matches(text)``,
    ``words`` _CAMEL_RE's and _SNAKE_RE's ``findall`` (each where it can match)."""
    out: list[str] = []
    for match in _BACKTICK_RE.finditer(text) if "`" in text else ():
        span = match.group(1).strip()
        if _IDENT_SPAN_RE.match(span) and len(span) >= 4:
            out.append(span)
    # Ticket ids (`PROJ-1234`) that are not error codes.
    out.extend(
        found
        for found in (_code_matches(text) if codes is None else codes)
        if _CODE_SEPARATOR_RE.split(found, maxsplit=1)[0] not in _NAME_CODE_WORDS
    )
    if not in_tool and not code:
        # Names written in prose; code and tool output are full of them. The
        # keys of a compacted tool call (`file_path=`) are not names.
        # Blanking the URLs first changes nothing when ``text`` had them
        # blanked already (``extract``): a URL match ends at a character no
        # scheme holds, so blanking one cannot expose another.
        plain = _blank(text, URL_RE, needs=_URL_NEEDS)
        if paths is None or plain is not text:
            paths = _path_matches(plain)
        plain = _blank(_spaced(plain, paths), _KEY_RE, needs="=")
        if words is None or plain is not text:  # when nothing was blanked: the same passes
            words = camel_and_snake(plain)
        out.extend(words[0])
        out.extend(words[1])
    return [n for n in out if n not in _MARKER_WORDS and len(n) >= 4 and _STRUCTURED_RE.search(n)]


def extract(
    text: str,
    *,
    in_tool: bool,
    error_line: bool,
    code: bool,
    words: tuple[list[str], list[str]] | None = None,
) -> list[tuple[str, str, str, float]]:
    """(kind, value, shown, specificity) for every identifier in one line of text.

    ``words``: ``camel_and_snake(text)`` when the caller has it and ``text``
    holds no URL (the names pass then reuses it where it blanks nothing)."""
    out: list[tuple[str, str, str, float]] = []
    has_url = _URL_NEEDS in text
    for url in URL_RE.findall(text) if has_url else ():
        out.append(("url", url.rstrip(".,;:"), url.rstrip(".,;:"), 0.0))
    without_urls = _blank(text, URL_RE) if has_url else text
    if has_url:
        words = None
    codes = _code_matches(without_urls)
    for value, shown in _errors(without_urls, error_line=error_line, codes=codes):
        out.append(("error", value, shown, 1.0))
    path_matches = _path_matches(without_urls)
    for path in _paths(without_urls, path_matches):
        out.append(("path", path, path, 0.1 * min(path.count("/"), 4)))
    for command, marked in _commands(without_urls, in_tool=in_tool):
        # A command quoted in prose is usually advice that outlives the turn
        # ("run `make fixtures` first"); one tool call among many is history.
        out.append(("command", command, f"`{command}`", 1.0 if marked else 0.0))
    for value, shown, digits in _numbers(without_urls):
        # The number itself is the handle: `347` greps everywhere, `336275613` once.
        out.append(("number", value, shown, min(digits, 12) / 2))
    taken = {value for _, value, _, _ in out}
    for name in _names(
        without_urls, in_tool=in_tool, code=code, paths=path_matches, codes=codes, words=words
    ):
        if name not in taken and not any(name in value for value in taken):
            out.append(("name", name, name, 0.0))
    return out


def specificity(kind: str, shown: str) -> float:
    """What ``extract`` would credit an item for on its own (for items merged from a section)."""
    found = extract(shown, in_tool=False, error_line=kind == "error", code=False)
    return max((spec for k, _, _, spec in found if k == kind), default=0.0)


class IdentIndex:
    """Distinct identifiers of one summarizer input, with where and how strongly they appeared."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, str], Ident] = {}

    def add(self, kind: str, value: str, text: str, *, pos: int, weight: float) -> None:
        key = (kind, value)
        item = self._items.get(key)
        if item is None:
            self._items[key] = Ident(kind, value, text, pos, weight)
            return
        item.count += 1
        item.weight = max(item.weight, weight)

    def __len__(self) -> int:
        return len(self._items)

    def _merge_paths(self) -> None:
        """One entry per file: `/home/u/app/src/a.py`, `src/a.py` and `a.py` become `src/a.py`.

        A path merges into the shortest other path it ends with that still has
        a directory (grepping for that finds both); a bare file name merges into
        the shortest path ending with it.
        """
        paths = sorted(
            (i for i in self._items.values() if i.kind == "path"),
            key=lambda i: (len(i.value), i.first),
        )
        by_value = {i.value: i for i in paths}
        for item in reversed(paths):  # longest first, so chains collapse fully
            parts = item.value.split("/")
            # Proper suffixes that keep a directory, shortest first.
            for cut in range(len(parts) - 2, 0, -1):
                target = by_value.get("/".join(parts[cut:]))
                if target is not None:
                    self._absorb(target, item)
                    del by_value[item.value]
                    break
        # A bare name's owners are the paths whose last part it is (ending
        # with "/name" means exactly that for a name without "/"), in
        # ``by_value``'s order; deleting bare names never changes them.
        by_last: dict[str, list[Ident]] = {}
        for value, item in by_value.items():
            if "/" in value:
                by_last.setdefault(value.rpartition("/")[2], []).append(item)
        for name, item in list(by_value.items()):
            if "/" in name:
                continue
            owners = by_last.get(name)
            if owners:
                self._absorb(min(owners, key=lambda i: (len(i.value), i.first)), item)
                del by_value[name]

    def _absorb(self, target: Ident, item: Ident) -> None:
        if (item.kind, item.value) not in self._items:
            return
        del self._items[(item.kind, item.value)]
        target.count += item.count
        target.weight = max(target.weight, item.weight)
        target.first = min(target.first, item.first)

    def ranked(self) -> list[Ident]:
        """All items, best first, taking one of each kind in turn (see ``KINDS``).

        Within a kind: the strongest context wins, repetition adds a little
        (a file touched ten times matters), ties go to the earliest.
        """
        self._merge_paths()
        by_kind: dict[str, list[Ident]] = {kind: [] for kind in KINDS}
        for item in self._items.values():
            by_kind[item.kind].append(item)
        queues = [sorted(by_kind[kind], key=lambda i: (-_strength(i), i.first)) for kind in KINDS]
        for kind, family in (("command", _command_family), ("path", _directory)):
            queues[KINDS.index(kind)] = _diversify(queues[KINDS.index(kind)], family)
        out: list[Ident] = []
        taken = [0] * len(KINDS)
        while any(t < len(q) for t, q in zip(taken, queues, strict=True)):
            for index, (kind, queue) in enumerate(zip(KINDS, queues, strict=True)):
                share = _SHARE[kind]
                out.extend(queue[taken[index] : taken[index] + share])
                taken[index] += share
        return out


def _strength(item: Ident) -> float:
    return item.weight + 0.25 * min(item.count - 1, 4)


def _command_family(item: Ident) -> tuple[str, float]:
    return " ".join(item.value.split()[:2]), 1.0


def _directory(item: Ident) -> tuple[str, float]:
    return item.value.rpartition("/")[0], 0.5


def _diversify(items: list[Ident], family: Callable[[Ident], tuple[str, float]]) -> list[Ident]:
    """Rank the n-th item of a family lower, by n times the family's penalty.

    Ten `pytest -q tests/test_x.py` runs or ten files of `tests/` would
    otherwise fill the list; the first of them shows the family, and the
    others go to the expand line.
    """
    seen: dict[str, int] = {}
    scored: list[tuple[float, int, Ident]] = []
    for item in items:
        name, penalty = family(item)
        repeats = seen.get(name, 0)
        seen[name] = repeats + 1
        scored.append((_strength(item) - penalty * repeats, item.first, item))
    return [item for _, _, item in sorted(scored, key=lambda t: (-t[0], t[1]))]


def render_section(items: Iterable[Ident], *, span: str | None, title: bool) -> list[str]:
    """Section lines: one bullet per kind, items in order of first appearance."""
    grouped: dict[str, list[Ident]] = {kind: [] for kind in KINDS}
    for item in items:
        grouped[item.kind].append(item)
    lines = [f"- {TIME_LABEL}: {span}"] if span else []
    for kind in KINDS:
        group = sorted(grouped[kind], key=lambda i: i.first)
        if group:
            joined = _SEPARATOR.get(kind, ", ").join(i.text for i in group)
            lines.append(f"- {LABELS[kind]}: {joined}")
    if not lines or (span and len(lines) == 1):
        return []
    return [SECTION_TITLE, *lines] if title else lines


_SECTION_LINE_RE = re.compile(r"^-\s+(" + "|".join(LABELS.values()) + r"):\s+(.+)$")


def parse_section_line(line: str) -> tuple[str, list[str]] | None:
    """(kind, shown items) of a line ``render_section`` wrote, else None.

    Used one level up, where source summaries' sections are merged rather than
    kept as (long, clipped) lines.
    """
    match = _SECTION_LINE_RE.match(line.strip())
    if not match:
        return None
    kind = _KIND_OF_LABEL[match.group(1)]
    separator = _SEPARATOR.get(kind, ", ")
    items = [part.strip() for part in match.group(2).split(separator) if part.strip()]
    return kind, items


def value_of(kind: str, shown: str) -> str:
    """The verbatim identifier inside an item as ``render_section`` shows it."""
    if kind == "command":
        return shown.strip("`")
    if kind == "number":
        keyed = shown.split("=", 1)
        if len(keyed) == 2:
            return keyed[1]
        for word in shown.split():
            if word[:1].isdigit():
                return word
    return shown
