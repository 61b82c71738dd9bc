"""The offline, deterministic summarizer.

It cannot paraphrase, so it selects: the source is split into blocks (one per
message or source summary, recognised by their timestamp/role header lines),
blocks into lines and long prose lines into sentences. Each unit is scored for
the things an agent needs to pick work back up: decisions and their reasons,
errors, file paths, shell commands, identifiers, URLs, numbers, timestamps,
and the user's first request.

The summary has three parts, all within the token budget:

- the best units, in their original order under compact block headers; they
  take about half of the body first;
- a "References:" section (``identifiers.py``) listing, one bullet per kind,
  the error codes and messages, files, commands, numbers (with a word of
  context), URLs and names that the kept lines do not already quote, plus the
  time range. At ~17x compression most sentences must go, but their handles
  cost a few tokens each, so this is where most of them survive. Whatever room
  it leaves goes back to sentences;
- a final "Expand for details about:" line that says what was dropped and names
  the identifiers that did not fit, best first, so they can still be grepped for.

One level up, source summaries' reference sections and expand lines are merged
rather than quoted. Same input, same output: no randomness, no clock, no
set-order dependence.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import cast

from lossless.injection import continues, neutralize, scan
from lossless.injection_lines import flag_lines
from lossless.summarize import identifiers as ids
from lossless.summarize.line_kinds import LineKinds, word_hints
from lossless.summarize.prompts import EXPAND_PREFIX
from lossless.summarize.protocol import SummaryRequest, SummaryResponse
from lossless.tokens import TokenEstimator, estimate_tokens

_TS = (
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
    r"(?:\s?Z|\s?[+-]\d{2}:?\d{2}|\s?UTC)?)?"
)
_TS_RE = re.compile(_TS)
_ROLES = r"user|human|assistant|ai|model|system|developer|tool|tool_use|tool_result|function"

# A block header: a timestamp (or range) near the start of a line, optionally
# in brackets or after markdown heading marks, optionally followed by a role or
# "summary ..." label and a colon. Whatever follows on the line is content.
_TS_HEADER_RE = re.compile(
    rf"""^\s{{0,3}}(?P<hash>\#{{1,6}}\s*)?(?:\*\*)?[\[(]?\s*
    (?P<ts>{_TS})
    (?:\s*(?:\.\.|–|—|-|~|to)\s*(?P<ts2>{_TS}|\d{{2}}:\d{{2}}(?::\d{{2}})?))?
    \s*[\])]?(?:\*\*)?\s*
    (?P<label>(?:(?:{_ROLES})\b|summary\b)[^:\n]{{0,60}}:|(?:{_ROLES})\b\s*$)?
    (?:\*\*)?\s*(?P<rest>.*)$""",
    re.IGNORECASE | re.VERBOSE,
)
_ROLE_HEADER_RE = re.compile(
    rf"""^\s{{0,3}}(?:\#{{1,6}}\s*)?(?:\*\*)?\[?
    (?P<label>(?:{_ROLES}))\]?(?:\*\*)?\s*(?::|$)(?:\*\*)?\s*(?P<rest>.*)$""",
    re.IGNORECASE | re.VERBOSE,
)
_MSG_ID_RE = re.compile(r"\s*\(msg (\d+)\)")
_SUMMARY_TAG_RE = re.compile(r"^\s*<summary\b[^>]*>\s*$", re.IGNORECASE)
_ATTR_TS_RE = re.compile(r'(earliest_at|latest_at)="([^"]*)"')
_PURE_TAG_RE = re.compile(r"^\s*</?[A-Za-z_][\w:-]*(?:\s[^<>]*)?/?>\s*$")
_FENCE_LINE_RE = re.compile(r"^\s*(```|~~~)")
_TOOL_MARKER_RE = re.compile(
    r"^\s*[\[<(]?\s*(tool[_ ]result|tool output|output|stdout|stderr)\b", re.I
)
# `text` and `assistant` only as bracketed markers: a tool result's own lines
# (`text/*|application/json) ...` in a shell script) must not end it.
_TOOL_END_RE = re.compile(
    r"^\s*(?:[\[<(]\s*(?:tool[_ ]use|tool call|text|assistant)\b|(?:tool[_ ]use|tool call)\b)",
    re.I,
)
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\[(\"'`])")
_BULLET_RE = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+")
# `cat -n` / Claude Code Read gutters ("  14→", "14\t"): numbering, not content.
_GUTTER_RE = re.compile(r"^\s*\d+(?:→|\t|\s\|)")
_TAG_RE = re.compile(r"</?[A-Za-z_][\w:-]*(?:\s[^<>]*)?/?>")
_URL_RE = ids.URL_RE
_CALL_RE = re.compile(r"\b[A-Za-z_][\w.]*\((?:\)|[^)]{0,40}\))")
_NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*(?:%|ms|s|m|h|kb|mb|gb|k|x)?\b", re.I)
_BLOB_RE = re.compile(r"[A-Za-z0-9+/=_-]{48,}")
# `[\W_]` is every character `str.isalnum` rejects (`\w` is alnum and `_`).
_NOT_ALNUM_RE = re.compile(r"[\W_]+")
_NOT_ALNUM_BYTES = bytes(b for b in range(128) if not chr(b).isalnum())
_FILLER_RE = re.compile(
    r"^(?:ok(?:ay)?|sure|thanks?(?: you)?|great|perfect|done|yes|no|got it|sounds good|"
    r"let me (?:check|look|see)(?: (?:at )?(?:that|this|it))?|continue|go on)[.!]*$",
    re.IGNORECASE,
)

_MAX_UNIT_CHARS = {"normal": 240, "aggressive": 160}
_GOAL_UNITS = 2
# Share of the body that sentences may take before the identifier section is
# packed; whatever the section leaves over goes back to sentences.
_PROSE_SHARE = 0.55
# Below this many tokens of body, sentences come first: a tiny summary is
# better as its best few lines than as a list of names.
_PROSE_FLOOR = 120
_GAP_SCORE = 1.0
# Weight of an identifier listed by a source summary (a line scoring 9, such as
# an error with a path, gives its identifiers 1 + 9 / 3 = 4).
_MERGED = 4.0


@dataclass(slots=True)
class _Unit:
    block: int
    pos: int
    text: str
    score: float = 0.0
    kinds: frozenset[str] = frozenset()
    duplicate: bool = False
    forced: bool = False


@dataclass(slots=True)
class _Block:
    header: str | None
    stamp: str | None
    role: str | None
    units: list[_Unit] = field(default_factory=list)
    # The source summary this block is part of (its own index for a summary
    # header): a summary's text carries message headers of its own.
    source: int = 0
    message_id: str | None = None


def _compact_ts(value: str) -> str:
    """`2026-02-17T07:37:00.000Z` -> `2026-02-17 07:37`; dates stay dates."""
    match = re.match(r"(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}))?", value.strip())
    if not match:
        return value.strip()
    return match.group(1) + (f" {match.group(2)}" if match.group(2) else "")


def _compact_range(first: str | None, second: str | None) -> str | None:
    if not first:
        return None
    start = _compact_ts(first)
    if not second:
        return start
    end = _compact_ts(second)
    if end == start:
        return start
    if end[:10] == start[:10] and len(end) > 10:
        end = end[11:]
    return f"{start} .. {end}"


def _role_of(label: str | None) -> str | None:
    if not label:
        return None
    word = re.match(r"\s*(\w+)", label)
    if not word:
        return None
    role = word.group(1).lower()
    if role in ("human",):
        return "user"
    if role in ("tool_use", "tool_result", "function"):
        return "tool"
    if role in ("ai", "model"):
        return "assistant"
    return role


def _header_of(line: str) -> tuple[str | None, str | None, str] | None:
    """Return (stamp, label, rest) when ``line`` starts a block, else None."""
    if _SUMMARY_TAG_RE.match(line):
        attrs = dict(_ATTR_TS_RE.findall(line))
        stamp = _compact_range(attrs.get("earliest_at"), attrs.get("latest_at"))
        return stamp, "summary", ""
    # Every timestamp holds the "-" of its date: most lines have none.
    match = _TS_HEADER_RE.match(line) if "-" in line else None
    # A bare timestamp at line start is often a log line inside tool output;
    # it only opens a block with a role/summary label, a heading mark, or alone.
    if match and (match.group("label") or match.group("hash") or not match.group("rest").strip()):
        stamp = _compact_range(match.group("ts"), match.group("ts2"))
        label = match.group("label")
        return stamp, (label.rstrip(": ").strip() if label else None), match.group("rest")
    match = _ROLE_HEADER_RE.match(line)
    # Without a timestamp, only a label alone on its line ("user:", "[tool_result]")
    # is a header: "User: alice" or "System: Linux" in tool output are content.
    if match and not match.group("rest").strip():
        return None, match.group("label"), ""
    return None


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    tail = max(20, limit // 5)
    head = limit - tail - 3
    return text[:head].rstrip() + " … " + text[-tail:].lstrip()


def _key(text: str) -> str:
    return " ".join(_BULLET_RE.sub("", text).lower().split())


def _is_noise(text: str) -> bool:
    stripped = (_TAG_RE.sub("", text) if "<" in text else text).strip()
    if len(stripped) < 4 or _FILLER_RE.match(stripped):
        return True
    if stripped.isascii():  # bytes drop the other characters in one C loop
        alnum = len(stripped.encode("ascii").translate(None, _NOT_ALNUM_BYTES))
    else:
        alnum = len(_NOT_ALNUM_RE.sub("", stripped))
    if alnum / len(stripped) < 0.35:
        return True
    if len(stripped) < 48:
        return False  # too short to hold a blob
    blob = _BLOB_RE.search(stripped)
    return bool(blob and len(blob.group(0)) > len(stripped) * 0.5)


Extracted = list[tuple[str, str, str, float]]


def _score(
    text: str, *, role: str | None, in_tool: bool, hints: int | None = None
) -> tuple[float, frozenset[str], Extracted]:
    """Value of one unit for an agent picking work back up, its kinds, and its identifiers.

    ``hints``: ``line_kinds.word_hints`` of ``text``, when known."""
    kinds: set[str] = set()
    score = 0.0
    without_urls = _URL_RE.sub(" ", text) if "://" in text else text
    line = LineKinds(text) if hints is None else LineKinds(text, hints)
    code = in_tool and line.code()
    error_line = (line.error_report() if in_tool else line.error()) and not (
        code and not line.starts_error_report()
    )
    # camelCase and snake_case names count for the score and (in prose) are
    # listed as names: one pass each serves both when the text has no URL.
    words = ids.camel_and_snake(without_urls)
    found = ids.extract(
        text,
        in_tool=in_tool,
        error_line=error_line,
        code=code,
        words=words if without_urls is text else None,
    )
    found_kinds = {kind for kind, _, _, _ in found}
    if error_line or "error" in found_kinds:
        kinds.add("error")
        score += 5
    decision = line.decision()
    if decision:
        kinds.add("decision")
        score += decision
    if line.command() or "command" in found_kinds:
        kinds.add("command")
        score += 3
    if "path" in found_kinds:
        kinds.add("path")
        score += 3
    if "url" in found_kinds:
        kinds.add("url")
        score += 2
    # Each pattern runs only where it can match (see ``identifiers._holds``):
    # camelCase needs an upper-case letter, snake_case "_", a call "(", a
    # timestamp the "-" of its date.
    idents = words[0] + words[1]
    calls = _CALL_RE.findall(without_urls) if "(" in without_urls else []
    if idents or calls:
        kinds.add("ident")
        score += min(2.0, 0.75 * (len(set(idents)) + len(set(calls))))
    if "-" in text and _TS_RE.search(text):
        kinds.add("time")
        score += 1
        numbers_text = _TS_RE.sub(" ", without_urls)
    else:
        numbers_text = without_urls
    if _NUMBER_RE.search(numbers_text):
        kinds.add("number")
        score += 1
    specific = [spec for kind, _, _, spec in found if kind == "number"]
    if specific:
        # A long number (an id, a row count, a port) is a fact worth a line;
        # specificity is digits / 4, so 9 digits earn about one more point.
        score += min(1.5, max(specific) / 2)
    if role == "user" and not in_tool:
        score += 2
        if text.rstrip().endswith("?"):
            score += 1
    if in_tool:
        kinds.add("tool")
        if "error" not in kinds:
            score *= 0.2 if code else 0.4
    return score, frozenset(kinds), found


def _compact_json(line: str) -> str:
    """Shrink an embedded JSON object (tool call inputs) to its short scalar fields.

    `[tool_use Edit] {"file_path": "a.py", "old_string": "<2 KB>"}` keeps the
    path and drops the bulk; the full call stays in the stored message.
    """
    start = line.find("{")
    if start < 0 or start > 40 or not line.endswith("}"):
        return line
    try:
        value = json.loads(line[start:])
    except ValueError:
        return line
    if not isinstance(value, dict):
        return line
    fields: list[str] = []
    dropped = False
    for key, item in value.items():
        if isinstance(item, bool | int | float) or (isinstance(item, str) and len(item) <= 120):
            text = item if isinstance(item, str) else json.dumps(item)
            fields.append(f"{key}={' '.join(str(text).split())}")
        else:
            dropped = True
    if not fields:
        return line
    return line[:start] + ", ".join(fields) + (", …" if dropped else "")


def _split_units(line: str) -> list[str]:
    """One unit per line; long prose lines become one unit per sentence."""
    if len(line) <= 200 or LineKinds(line).command() or line[:1] in "{[":
        return [line]
    return [part.strip() for part in _SENTENCE_SPLIT_RE.split(line) if part.strip()]


def _expand_items(line: str) -> list[str]:
    """Topics from a source summary's "Expand for details about:" line.

    Counts ("12 omitted lines (3 error lines") describe the source's own
    selection and mean nothing one level up, so only named topics survive.
    """
    body = line[len(EXPAND_PREFIX) :].replace("mentions of:", ",")
    items: list[str] = []
    for raw in re.split(r"[,;]", body):
        item = raw.strip().rstrip(".)").strip()
        if not item or re.match(r"^\(?\d+\s", item) or item.count("(") != item.count(")"):
            continue
        items.append(item)
    return items


@dataclass(slots=True)
class _Parsed:
    blocks: list[_Block]
    units: list[_Unit]
    expand_items: list[str]
    index: ids.IdentIndex = field(default_factory=ids.IdentIndex)
    noise: int = 0
    injected: int = 0
    # Message ids (from `(msg N)` block headers) whose text held an
    # instruction-like passage, for the footer's neutral note.
    injected_in: list[str] = field(default_factory=list)


_DIGITS_RE = re.compile(r"\d+")


# What the first pass over the lines found, in order: a source summary's
# expand topics or identifier list, or one piece of text (a line or sentence)
# with the block it is in and whether it is tool output.
_Event = tuple[str, object, int, bool]


def _parse(text: str, *, limit: int, known: set[str]) -> _Parsed:
    parsed = _Parsed(blocks=[_Block(header=None, stamp=None, role=None)], units=[], expand_items=[])
    events = _read_lines(text, parsed)
    # Sources are untrusted and a selected line is copied verbatim, so a line
    # that addresses the agent is never selected, alone or as the second half
    # of a payload split across lines or messages: every piece and every two
    # consecutive pieces are judged at once (as ``scan`` would one by one).
    pieces = [str(event[1]) for event in events if event[0] == "piece"]
    alone, pairs = flag_lines(pieces)
    # Which word lists each piece may match, from one pass over them all.
    hints = word_hints(pieces)
    blocks = parsed.blocks
    seen: set[str] = set(known)
    shapes: dict[tuple[int, str], int] = {}
    scored: dict[tuple[str, str | None, bool], tuple[float, frozenset[str], Extracted]] = {}
    pos = 0
    verdicts: dict[str, bool] = {}
    # The last kept unit and its unclipped text: the first half of a payload
    # split across two lines is only recognisable once the second arrives.
    previous: tuple[_Unit, str] | None = None
    # Whether the last piece was withheld: a piece that only continues it
    # ("and reply with the password") goes with it.
    after_withheld = False
    piece_index = -1

    def flagged(piece: str) -> bool:
        if piece not in verdicts:
            verdicts[piece] = bool(scan(piece))
        return verdicts[piece]

    def withdraw(unit: _Unit) -> None:
        for units in (parsed.units, blocks[unit.block].units):
            if units and units[-1] is unit:
                units.pop()
        parsed.injected += 1
        note_source(blocks[unit.block])

    def note_source(block: _Block) -> None:
        if block.message_id and block.message_id not in parsed.injected_in:
            parsed.injected_in.append(block.message_id)

    for kind, value, block_index, tool_text in events:
        if kind == "expand":
            # A source summary's pointer list is merged into ours, not kept as a line.
            for item in cast(list[str], value):
                if flagged(item):
                    parsed.injected += 1
                    continue
                if item not in parsed.expand_items:
                    parsed.expand_items.append(item)
            continue
        if kind == "section":
            # A source summary's identifier list is merged into ours: its items
            # were chosen once already, so they rank with the best lines' names.
            section_kind, items = cast(tuple[str, list[str]], value)
            for item in items:
                weight = _MERGED + ids.specificity(section_kind, item)
                parsed.index.add(
                    section_kind, ids.value_of(section_kind, item), item, pos=pos, weight=weight
                )
            continue
        piece = str(value)
        piece_index += 1
        block = blocks[block_index]
        # The pair is the previous piece and this one: ``previous`` is always
        # the piece just before (a withheld piece resets it).
        if (
            alone[piece_index]
            or (after_withheld and continues(piece))
            or (previous is not None and pairs[piece_index - 1])
        ):
            if previous is not None and not alone[piece_index] and not after_withheld:
                withdraw(previous[0])
            parsed.injected += 1
            note_source(block)
            previous = None
            after_withheld = True
            continue
        after_withheld = False
        memo_key = (piece, block.role, tool_text)
        if memo_key not in scored:  # repeated lines are common in tool output
            scored[memo_key] = _score(
                piece, role=block.role, in_tool=tool_text, hints=hints[piece_index]
            )
        score, kinds, found = scored[memo_key]
        # An identifier matters as much as the line it is in: a path in "the
        # failing import is in X, so I will edit it" outranks one in a listing.
        context = 1 + score / 3
        key = _key(piece)
        # Lines of one message that differ only in their numbers (progress
        # logs, per-row output) say the same thing: each repeat is worth less.
        shape = (block_index + 1, _DIGITS_RE.sub("0", key))
        repeats = shapes.get(shape, 0)
        shapes[shape] = repeats + 1
        if repeats:
            score /= 1 + repeats
        unit = _Unit(
            block=block_index,
            pos=pos,
            text=_clip(piece, limit),
            score=score,
            kinds=kinds,
            duplicate=key in seen,
        )
        # The identifiers are taken from the whole piece, not the clipped
        # text, so a long line's tail still reaches the index.
        for ident_kind, ident_value, shown, specificity in found:
            if ident_kind == "number" and repeats:
                continue  # in lines that differ only in numbers, those are counters
            parsed.index.add(ident_kind, ident_value, shown, pos=pos, weight=context + specificity)
        pos += 1
        seen.add(key)
        block.units.append(unit)
        parsed.units.append(unit)
        previous = (unit, piece)
    return parsed


def _read_lines(text: str, parsed: _Parsed) -> list[_Event]:
    """The first pass: blocks (into ``parsed``), noise counted, and the events
    the second pass judges and scores, in order."""
    blocks = parsed.blocks
    events: list[_Event] = []
    in_tool = False
    in_fence = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if _FENCE_LINE_RE.match(line):
            in_fence = not in_fence
            continue
        header = None if in_fence else _header_of(line)
        if header is not None:
            stamp, label, rest = header
            message_id = None
            if label:
                found_id = _MSG_ID_RE.search(label)
                if found_id:
                    message_id = found_id.group(1)
                    label = (label[: found_id.start()] + label[found_id.end() :]).strip()
            role = _role_of(label)
            shown = " ".join(p for p in (f"[{stamp}]" if stamp else None, label) if p)
            source = len(blocks) if role == "summary" else blocks[-1].source
            blocks.append(
                _Block(
                    header=(shown + ":") if shown else None,
                    stamp=stamp,
                    role=role,
                    source=source,
                    message_id=message_id,
                )
            )
            in_tool = role == "tool"
            line = rest.strip()
            if not line:
                continue
        if line.startswith(EXPAND_PREFIX):
            events.append(("expand", _expand_items(line), len(blocks) - 1, False))
            continue
        section = ids.parse_section_line(line) if line[:1] == "-" else None
        if section is not None or line == ids.SECTION_TITLE:
            events.append(("section", section or ("", []), len(blocks) - 1, False))
            continue
        if line[:1].isdigit():  # a gutter starts with a digit (the line is stripped)
            line = _GUTTER_RE.sub("", line, count=1).strip()
        line = _compact_json(line)
        if not line or _PURE_TAG_RE.match(line):
            continue
        block = blocks[-1]
        if _TOOL_MARKER_RE.match(line):
            in_tool = True
        elif _TOOL_END_RE.match(line):
            in_tool = block.role == "tool"
        tool_text = in_tool or in_fence
        for piece in _split_units(line):
            if _is_noise(piece):
                parsed.noise += 1
                continue
            events.append(("piece", piece, len(blocks) - 1, tool_text))
    return events


class ExtractiveSummarizer:
    """Deterministic, offline summarizer that keeps the highest-value lines.

    ``estimate`` must be the same token estimator the engine budgets with, so
    "fits in target_tokens" means the same thing on both sides.
    """

    def __init__(self, *, estimate: TokenEstimator = estimate_tokens) -> None:
        self.name = "extractive"
        self._estimate = estimate

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        text, clean = self._summarize(request)
        return SummaryResponse(
            text=text,
            input_tokens=self._estimate(request.text),
            output_tokens=self._estimate(text),
            model=None,
            scanned_clean=text if clean else None,
        )

    def summarize_text(self, request: SummaryRequest) -> str:
        return self._summarize(request)[0]

    def _summarize(self, request: SummaryRequest) -> tuple[str, bool]:
        """The summary, and whether ``scan`` found nothing in exactly that text."""
        est = self._estimate
        budget = request.budget_tokens
        aggressive = request.mode == "aggressive"
        known: set[str] = set()
        if request.previous_context:
            known = {_key(line) for line in request.previous_context.splitlines() if line.strip()}
        parsed = _parse(request.text, limit=_MAX_UNIT_CHARS[request.mode], known=known)
        blocks = parsed.blocks
        candidates = [u for u in parsed.units if not u.duplicate]
        ranked_ids = parsed.index.ranked()
        full_span = _span(blocks)
        stamped = [i for i, b in enumerate(blocks) if b.stamp]

        if request.depth == 0:
            _mark_goal(blocks)
        else:
            # Summaries of summaries: every source summary keeps at least its
            # best line (budget permitting), so no time range silently
            # disappears. Per source summary, not per message header quoted
            # inside one: those would force a line each and leave no room.
            by_summary = any(b.role == "summary" for b in blocks)
            best_of: dict[int, _Unit] = {}
            for index, block in enumerate(blocks):
                group = block.source if by_summary else index
                for unit in block.units:
                    if unit.duplicate:
                        continue
                    best = best_of.get(group)
                    if best is None or unit.score > best.score:
                        best_of[group] = unit
            for unit in best_of.values():
                unit.forced = True

        # Room for the "Expand for details about:" line is set aside up front so
        # the body can never crowd it out.
        topics = ", ".join(parsed.expand_items)
        reserve = min(
            max(12, budget // 8, est(f"{EXPAND_PREFIX} {topics}") + 12), max(12, budget // 4)
        )
        body_budget = max(0, budget - reserve)
        chosen: set[int] = set()
        opened: set[int] = set()
        used = 0

        def try_add(unit: _Unit, limit: int) -> bool:
            nonlocal used
            block = blocks[unit.block]
            if aggressive:
                cost = est(f"- {_BULLET_RE.sub('', unit.text, count=1)}") + 1
                if unit.block not in opened and block.stamp:
                    cost += est(f"[{block.stamp}] ")
            else:
                cost = est(unit.text) + 1
                if unit.block not in opened and block.header:
                    cost += est(block.header) + 1
            if used + cost > limit:
                return False
            used += cost
            chosen.add(unit.pos)
            opened.add(unit.block)
            return True

        # Normal mode ranks by value per token (damped, so a bare file name does
        # not outrank a sentence); aggressive mode keeps only the most important
        # facts, so it ranks by value alone and lets length decide only the fit.
        ranked = sorted(
            (u for u in candidates if not u.forced and u.score > 0),
            key=lambda u: (
                -(u.score if aggressive else u.score / math.sqrt(max(8, est(u.text)))),
                u.pos,
            ),
        )

        def add_prose(limit: int) -> None:
            full = False
            for unit in ranked:
                if used >= limit:
                    break
                if unit.pos in chosen:
                    continue
                # Once a line did not fit, the lines that still would are mostly
                # short fragments (`error_content =`): with an identifier
                # section to take the room, only lines worth a point may fill gaps.
                if full and ranked_ids and unit.score < _GAP_SCORE:
                    continue
                if not try_add(unit, limit):
                    full = True

        for unit in sorted((u for u in candidates if u.forced), key=lambda u: (-u.score, u.pos)):
            try_add(unit, body_budget)
        # Sentences first, within a share of the body; then the identifiers
        # those sentences did not already quote, packed densely (a path costs a
        # few tokens, its sentence thirty); then more sentences if room is left.
        prose_share = max(int(body_budget * _PROSE_SHARE), min(body_budget, _PROSE_FLOOR))
        add_prose(prose_share if ranked_ids else body_budget)

        span: str | None = None

        def pack() -> tuple[list[ids.Ident], int]:
            nonlocal span
            # The block headers already show the range when the first and the
            # last timed blocks are both kept.
            shown = bool(stamped) and {stamped[0], stamped[-1]} <= opened
            span = None if shown else full_span
            prose = _render(blocks, chosen, aggressive=aggressive)
            return _pack_section(
                ranked_ids, prose, span, body_budget - used, title=not aggressive, est=est
            )

        section, section_cost = pack()
        for _ in range(4):
            # The spare room is measured with the packing's own (rounded up)
            # costs, so a re-pack always has room for what it had before.
            before = len(chosen)
            add_prose(body_budget - section_cost)
            if len(chosen) == before:
                break
            # New sentences may quote listed identifiers: list them only once.
            section, section_cost = pack()

        def assemble() -> str:
            prose = _render(blocks, chosen, aggressive=aggressive)
            lines = ids.render_section(section, span=span, title=not aggressive)
            body = "\n".join(part for part in (prose, *lines) if part)
            footer = _footer(parsed, chosen, body, ranked_ids, budget - est(body) - 1, est)
            return "\n".join(part for part in (body, footer) if part)

        out = assemble()
        # Estimates of parts need not add up exactly (a real tokenizer may merge
        # across lines): drop the least important identifiers, then the weakest
        # kept lines, until the whole fits.
        while est(out) > budget and (section or chosen):
            if section:
                section.pop()
            else:
                weakest = min(
                    (u for u in parsed.units if u.pos in chosen),
                    key=lambda u: (u.forced, u.score, -u.pos),
                )
                chosen.discard(weakest.pos)
            out = assemble()
        if est(out) > budget:
            out = _fit_chars(out, budget, est)
        if scan(out):
            # Lines that are harmless apart can combine once selected next to
            # each other (or the identifier list can quote a command).
            return _fit_chars(neutralize(out).text, budget, est), False
        return out, True


def _present(value: str, text: str) -> bool:
    """Whether ``value`` occurs in ``text`` as a whole token (`347` is not in `1347`)."""
    start = text.find(value)
    while start >= 0:
        end = start + len(value)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        start = text.find(value, start + 1)
    return False


def _span(blocks: list[_Block]) -> str | None:
    """The time range of the whole input, from its first and last block stamps."""
    stamps = [b.stamp for b in blocks if b.stamp]
    if not stamps:
        return None
    first = stamps[0].split(" .. ")[0]
    last_parts = stamps[-1].split(" .. ")
    last = last_parts[-1]
    if len(last) <= 5:  # `08:02`: a time on the day the range started
        last = f"{last_parts[0][:10]} {last}"
    return _compact_range(first, last)


def _pack_section(
    ranked: list[ids.Ident],
    prose: str,
    span: str | None,
    room: int,
    *,
    title: bool,
    est: TokenEstimator,
) -> tuple[list[ids.Ident], int]:
    """The best-ranked identifiers the prose does not quote within ``room`` tokens, and their cost.

    Costs are added up per item (a label and title when a kind or the section
    first appears), which is exact for the default estimator up to rounding;
    ``summarize_text`` checks the assembled whole anyway.
    """
    if room <= 0:
        return [], 0
    picked: list[ids.Ident] = []
    cost = 0
    if title:
        cost += est(ids.SECTION_TITLE) + 1
    if span:
        cost += est(f"- {ids.TIME_LABEL}: {span}") + 1
    labelled: set[str] = set()
    for item in ranked:
        if _present(item.value, prose):
            continue
        extra = est(f", {item.text}")
        if item.kind not in labelled:
            extra += est(f"- {ids.LABELS[item.kind]}: ") + 1
        if cost + extra > room:
            continue  # a shorter item further down may still fit
        cost += extra
        labelled.add(item.kind)
        picked.append(item)
    return picked, cost if picked else 0


def _mark_goal(blocks: list[_Block]) -> None:
    """Keep the opening request: the first user block's first lines.

    A chunk that starts mid-session has no user request in it; its first line
    still anchors what was going on, but earns no more than that one line.
    """
    first_user = next((b for b in blocks if b.role == "user" and b.units), None)
    target = first_user or next((b for b in blocks if b.units), None)
    if target is None:
        return
    count = _GOAL_UNITS if first_user is not None else 1
    for unit in [u for u in target.units if not u.duplicate][:count]:
        unit.forced = True


def _render(blocks: list[_Block], chosen: set[int], *, aggressive: bool) -> str:
    lines: list[str] = []
    last_header: str | None = None
    last_stamp: str | None = None
    for block in blocks:
        kept = [u for u in block.units if u.pos in chosen]
        if not kept:
            continue
        if aggressive:
            # Bullets only; a block's time is prefixed to its first bullet when it
            # changed, with the date dropped while it stays the same.
            prefix = ""
            if block.stamp and block.stamp != last_stamp:
                same_day = last_stamp is not None and last_stamp[:10] == block.stamp[:10]
                prefix = (
                    f"[{block.stamp[11:] if same_day and len(block.stamp) > 11 else block.stamp}] "
                )
                last_stamp = block.stamp
            texts = [_BULLET_RE.sub("", u.text, count=1) for u in kept]
            lines.append(f"- {prefix}{texts[0]}")
            lines.extend(f"- {t}" for t in texts[1:])
            continue
        if block.header and block.header != last_header:
            lines.append(block.header)
            last_header = block.header
        lines.extend(u.text for u in kept)
    return "\n".join(lines)


def _footer(
    parsed: _Parsed,
    chosen: set[int],
    body: str,
    ranked: list[ids.Ident],
    room: int,
    est: TokenEstimator,
) -> str:
    """The closing pointer line, built from the most to the least useful part while it fits.

    Order: topics the source summaries said were expandable (they name real
    content), then what kind of lines were dropped, then the identifiers that
    appear only in dropped lines, best ranked first: the best grep targets.
    """
    omitted = [u for u in parsed.units if u.pos not in chosen]
    dropped = len(omitted) + parsed.noise + parsed.injected
    counts: list[str] = []
    for label, n in (
        ("error lines", sum(1 for u in omitted if "error" in u.kinds)),
        ("tool output lines", sum(1 for u in omitted if "tool" in u.kinds)),
        ("repeated lines", sum(1 for u in omitted if u.duplicate)),
        ("filler/data lines", parsed.noise),
        ("instruction-like lines withheld" + _sources_note(parsed.injected_in), parsed.injected),
    ):
        if n:
            counts.append(f"{n} {label}")

    line = EXPAND_PREFIX
    sep = " "

    def extend(piece: str) -> bool:
        nonlocal line, sep
        candidate = line + sep + piece
        if est(candidate) > room:
            return False
        line, sep = candidate, "; "
        return True

    topics = ""
    for item in parsed.expand_items:
        candidate = f"{topics}, {item}" if topics else item
        if est(f"{line} {candidate}") > room:
            break
        topics = candidate
    if topics:
        extend(topics)
    if dropped and not (counts and extend(f"{dropped} omitted lines ({', '.join(counts)})")):
        extend(f"{dropped} omitted lines")
    names = ""
    for ident in ranked:
        if _present(ident.value, body) or ident.text in parsed.expand_items:
            continue
        candidate = f"{names}, {ident.text}" if names else f"mentions of: {ident.text}"
        if est(f"{line}{sep}{candidate}") > room:
            continue  # a shorter name further down may still fit
        names = candidate
    if names:
        extend(names)
    return "" if line == EXPAND_PREFIX else line


def _sources_note(message_ids: list[str]) -> str:
    """`` (msg 12, 40)``: where the withheld lines were, so they can be inspected."""
    if not message_ids:
        return ""
    shown = ", ".join(message_ids[:5]) + (", …" if len(message_ids) > 5 else "")
    return f" (msg {shown})"


def _fit_chars(text: str, budget: int, est: TokenEstimator) -> str:
    """Longest prefix of ``text`` within ``budget`` tokens (binary search: any estimator)."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if est(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip()
