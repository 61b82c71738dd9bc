"""User patterns: naming, scoping, and validation of unsafe regexes."""

from __future__ import annotations

import time

import pytest

from lossless.errors import InputError
from lossless.redact import (
    InvalidPattern,
    Redactor,
    UserPattern,
    compile_pattern,
    patterns_for_project,
    validate_pattern,
)

# The validation call itself, child process included, must return this fast.
TIME_BOUND = 3.0


def _validate_timed(regex: str) -> tuple[InvalidPattern | None, float]:
    start = time.monotonic()
    try:
        validate_pattern(regex)
    except InvalidPattern as exc:
        return exc, time.monotonic() - start
    return None, time.monotonic() - start


@pytest.mark.parametrize(
    ("regex", "reason"),
    [
        ("(", "invalid regular expression"),
        ("[a-", "invalid regular expression"),
        ("a{2,1}", "invalid regular expression"),
        ("", "empty"),
        ("a*", "empty string"),
        ("(?:x|)", "empty string"),
        (r"\b", "empty string"),
        ("(?=secret)", "empty string"),
        ("(a|a)*", "empty string"),
        ("(.*)*", "empty string"),
    ],
)
def test_invalid_and_empty_matching_patterns_are_refused(regex: str, reason: str) -> None:
    error, elapsed = _validate_timed(regex)
    assert error is not None
    assert reason in str(error)
    assert elapsed < TIME_BOUND


@pytest.mark.parametrize(
    "regex",
    [
        "(a+)+",
        "^(a+)+$",
        "(a+)+b",
        "(?:a*)*b",
        r"(\w+\s?)+$",
        "(a|a)+x",
        "(x+x+)+y",
        r"(\s|.)+$",
        r"token=(\w+)*;",
    ],
)
def test_classic_catastrophic_patterns_are_refused_statically(regex: str) -> None:
    error, elapsed = _validate_timed(regex)
    assert error is not None
    assert "catastrophic backtracking" in str(error)
    # Refused by the static check, before any child process is started.
    assert elapsed < 0.2


@pytest.mark.parametrize("regex", ["(a|aa)+b", "(x|y|xy)+z", r"x(?:\w+\d)+y", ".*.*.*=.*;"])
def test_slow_patterns_the_static_check_misses_are_refused_by_timing(regex: str) -> None:
    error, elapsed = _validate_timed(regex)
    assert error is not None
    assert "too slow" in str(error)
    assert elapsed < TIME_BOUND


@pytest.mark.parametrize(
    "regex",
    [
        r"acme_[A-Za-z0-9]{32}",
        r"employee_id=(?P<secret>E\d{6})",
        r"(?i)internal-[a-z]+-\d+",
        r"(\d+\.)+\d+",
        r"[a-z]+(?:-[a-z]+)*=\d+",
        r"\b(?:corp|int)\.example\.com\b",
        r"(ab|cd)*e",
    ],
)
def test_good_patterns_are_accepted_quickly(regex: str) -> None:
    error, elapsed = _validate_timed(regex)
    assert error is None
    assert elapsed < TIME_BOUND


def test_invalid_pattern_is_an_input_error_and_a_value_error() -> None:
    with pytest.raises(InvalidPattern) as info:
        compile_pattern("(unclosed")
    assert isinstance(info.value, InputError)
    assert isinstance(info.value, ValueError)
    assert "(unclosed" in str(info.value)


def test_overlong_pattern_is_refused() -> None:
    with pytest.raises(InvalidPattern, match="longer than"):
        compile_pattern("a" * 5000)


def test_redactor_refuses_a_pattern_that_does_not_compile() -> None:
    with pytest.raises(InvalidPattern):
        Redactor([UserPattern("bad", "(")])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "", "regex": "x"}, "pattern name"),
        ({"name": "has space", "regex": "x"}, "pattern name"),
        ({"name": "a]b", "regex": "x"}, "pattern name"),
        ({"name": "ok", "regex": "x", "scope": "team"}, "scope"),
        ({"name": "ok", "regex": "x", "scope": "project"}, "needs a project"),
        ({"name": "ok", "regex": "x", "scope": "global", "project": "p"}, "cannot name a project"),
    ],
)
def test_user_pattern_fields_are_checked(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidPattern, match=message):
        UserPattern(**kwargs)  # type: ignore[arg-type]


def test_scoping_and_category() -> None:
    everywhere = UserPattern("corp-host", r"[a-z0-9]+\.corp\.example")
    alpha_only = UserPattern("alpha-id", r"ALPHA-\d{4}", scope="project", project="alpha")
    patterns = [everywhere, alpha_only]
    assert everywhere.category == "user:corp-host"
    assert patterns_for_project(patterns, "alpha") == (everywhere, alpha_only)
    assert patterns_for_project(patterns, "beta") == (everywhere,)
    assert patterns_for_project(patterns, None) == (everywhere,)

    redactor = Redactor(patterns_for_project(patterns, "alpha"))
    result = redactor.redact_text("ALPHA-1234 on db1.corp.example")
    assert result.text == "[REDACTED:user:alpha-id] on [REDACTED:user:corp-host]"
    assert result.counts == {"user:alpha-id": 1, "user:corp-host": 1}


def test_validated_pattern_round_trip() -> None:
    regex = r"ticket-(?P<secret>[A-Z]{3}\d{5})"
    validate_pattern(regex)
    redactor = Redactor([UserPattern("ticket", regex)])
    assert redactor.redact_text("see ticket-ABC12345.").text == "see ticket-[REDACTED:user:ticket]."


def test_a_checker_that_cannot_run_refuses_instead_of_accepting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.executable", "/nonexistent/python")
    with pytest.raises(InvalidPattern, match="could not check"):
        validate_pattern(r"acme_[A-Za-z0-9]{32}")
