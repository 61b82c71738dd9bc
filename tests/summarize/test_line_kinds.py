"""``LineKinds`` answers exactly as its reference regular expressions.

The summarizer scores lines with ``LineKinds`` (split, lower-cased, gated
alternatives for ASCII text); the reference definitions are the patterns in
``line_kinds``. These tests compare both on the injection corpus, on lines of
the real transcripts and on generated lines built from the patterns' own words
in every case, glued by the punctuation the alternatives look for, with a few
non-ASCII characters that case-insensitive matching treats specially.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.summarize.injection_corpus import BENIGN, PAYLOADS

from lossless.summarize import line_kinds as lk
from lossless.summarize.line_kinds import LineKinds

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

_CHECKS: tuple[tuple[str, Callable[[LineKinds], object], Callable[[str], object]], ...] = (
    ("error", LineKinds.error, lambda t: bool(lk.ERROR_RE.search(t))),
    ("error_report", LineKinds.error_report, lambda t: bool(lk.ERROR_REPORT_RE.search(t))),
    (
        "starts_error_report",
        LineKinds.starts_error_report,
        lambda t: bool(lk.ERROR_REPORT_RE.match(t)),
    ),
    (
        "decision",
        LineKinds.decision,
        lambda t: (
            4 if lk.DECISION_STRONG_RE.search(t) else 2 if lk.DECISION_WEAK_RE.search(t) else 0
        ),
    ),
    ("code", LineKinds.code, lambda t: bool(lk.CODE_RE.search(t))),
    ("command", LineKinds.command, lambda t: bool(lk.COMMAND_RE.search(t))),
)


def _differences(lines: list[str]) -> tuple[list[tuple[str, str]], dict[str, set[object]]]:
    wrong: list[tuple[str, str]] = []
    answers: dict[str, set[object]] = {name: set() for name, _, _ in _CHECKS}
    for line in lines:
        kinds = LineKinds(line)
        for name, fast, reference in _CHECKS:
            expected = reference(line)
            answers[name].add(expected)
            if fast(kinds) != expected:
                wrong.append((name, line))
    return wrong, answers


def _generated(count: int) -> list[str]:
    """Lines of the patterns' words (and near misses) in random case and glue."""
    sources = " ".join(
        p.pattern
        for p in (
            lk.ERROR_RE,
            lk.ERROR_REPORT_RE,
            lk.CODE_RE,
            lk.DECISION_STRONG_RE,
            lk.DECISION_WEAK_RE,
            lk.COMMAND_RE,
        )
    )
    words = sorted(set(re.findall(r"[A-Za-z']{2,}", sources)))
    words += ["ValueError", "KeyError", "xerror", "Exception", "_error", "errorx", "psycopg"]
    words += ["errors.UndefinedColumn", "E0425", "e123", "E12345", "404", "503", "200", "0", "7"]
    words += ["HTTP", "Not", "Bad", "Internal", "FAILED", "ERROR", "Failed", "timed", "time"]
    words += ["sudo", "./run.sh", "$", "❯", "%", ">", "@app", "#include", "do", "undo", "x"]
    words += ["ſ", "K", "İ", "é", "ﬁ", "Ω"]  # case folding outside ASCII
    glue = [" ", " ", " ", "", ": ", ":", ".", "!", "[", "(", "{", ";", ",", "->", "=", "=="]
    glue += ["&&", "||", "=~", "=>", ":=", "!=", "='", '="', "={", "`", '"', "'", "_", "-", "\t"]
    glue += ["\n", " / ", "  "]
    rng = random.Random(17)
    out: list[str] = []
    for _ in range(count):
        parts: list[str] = [rng.choice(["", "", "", " ", "- ", "  ", "**", "> ", "$ "])]
        for _ in range(rng.randint(1, 6)):
            word = rng.choice(words)
            word = rng.choice([word, word, word.lower(), word.upper(), word.title()])
            parts += [word, rng.choice(glue)]
        out.append("".join(parts[:-1]) if rng.random() < 0.5 else "".join(parts))
    return out


def test_the_same_answers_on_generated_lines() -> None:
    wrong, answers = _differences(_generated(6_000))
    assert not wrong, wrong[:5]
    # Both answers (all three for decisions) occur: the comparison is not vacuous.
    for name, seen in answers.items():
        assert len(seen) >= (3 if name == "decision" else 2), name


def test_the_same_answers_on_the_injection_corpus() -> None:
    lines = [line for entry in [*PAYLOADS, *BENIGN] for line in entry.text.splitlines()]
    lines += [line.upper() for line in lines] + [line.strip() for line in lines]
    wrong, _ = _differences(lines)
    assert not wrong, wrong[:5]


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield from value.splitlines()
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_the_same_answers_on_real_transcripts() -> None:
    if not DATA.is_dir():
        pytest.skip(f"real transcripts not found at {DATA}")
    lines: list[str] = []
    paths = sorted(DATA.glob("claude-code/**/*.jsonl")) + sorted(DATA.glob("codex/**/*.jsonl"))
    for path in paths:
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            lines.extend(s.strip() for s in _strings(record) if s.strip())
        if len(lines) >= 5_000:
            break
    assert lines
    wrong, answers = _differences(lines[:5_000])
    assert not wrong, wrong[:5]
    assert len(answers["error"]) == 2 and len(answers["decision"]) == 3, answers


def test_word_hints_never_skip_a_match() -> None:
    # LineKinds(line, hints) skips the word lists ``word_hints`` rules out for
    # the line; on the same lines it must answer as the reference does.
    lines = _generated(6_000)
    lines += [line for entry in [*PAYLOADS, *BENIGN] for line in entry.text.splitlines()]
    hints = lk.word_hints(lines)
    wrong: list[tuple[str, str]] = []
    for line, hint in zip(lines, hints, strict=True):
        kinds = LineKinds(line, hint)
        for name, fast, reference in _CHECKS:
            if fast(kinds) != reference(line):
                wrong.append((name, line))
    assert not wrong, wrong[:5]
    # The hints rule something out, and not everything (the test is not vacuous).
    ascii_hints = [h for line, h in zip(lines, hints, strict=True) if line.isascii()]
    assert 0 in ascii_hints and any(ascii_hints)
