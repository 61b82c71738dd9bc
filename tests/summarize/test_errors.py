"""Provider exception -> summarizer error mapping, by duck typing (no SDK needed)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lossless.summarize import (
    SummarizerAuthError,
    SummarizerError,
    SummarizerFatalError,
    SummarizerUnavailable,
)
from lossless.summarize.errors import classify_provider_error


class StatusError(Exception):
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"status {status}")
        self.status_code = status
        self.response = SimpleNamespace(status_code=status, headers=headers or {})


class APITimeoutError(Exception):
    pass


def classify(exc: BaseException) -> SummarizerError:
    return classify_provider_error(exc, provider="openai", model="m")


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (401, SummarizerAuthError),
        (403, SummarizerAuthError),
        (404, SummarizerFatalError),
        (402, SummarizerFatalError),
        (408, SummarizerUnavailable),
        (429, SummarizerUnavailable),
        (500, SummarizerUnavailable),
        (503, SummarizerUnavailable),
        (529, SummarizerUnavailable),
    ],
)
def test_status_codes(status: int, expected: type[SummarizerError]) -> None:
    error = classify(StatusError(status))
    assert type(error) is expected
    assert f"HTTP {status}" in str(error)
    assert "openai (m)" in str(error)


def test_other_client_errors_are_plain() -> None:
    error = classify(StatusError(400))
    assert type(error) is SummarizerError


def test_status_from_response_only() -> None:
    exc = Exception("boom")
    exc.response = SimpleNamespace(status_code=401, headers={})  # type: ignore[attr-defined]
    assert isinstance(classify(exc), SummarizerAuthError)


def test_retry_after_header() -> None:
    error = classify(StatusError(429, {"retry-after": "2.5"}))
    assert isinstance(error, SummarizerUnavailable)
    assert error.retry_after_s == 2.5
    error = classify(StatusError(503, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}))
    assert isinstance(error, SummarizerUnavailable)
    assert error.retry_after_s is None


@pytest.mark.parametrize(
    "exc", [APITimeoutError("slow"), TimeoutError("slow"), ConnectionRefusedError("no")]
)
def test_transport_failures_are_unavailable(exc: BaseException) -> None:
    assert isinstance(classify(exc), SummarizerUnavailable)


def test_unknown_errors_are_plain_and_summarizer_errors_pass_through() -> None:
    assert type(classify(RuntimeError("weird"))) is SummarizerError
    original = SummarizerUnavailable("x")
    assert classify(original) is original


def test_messages_are_one_line_and_bounded() -> None:
    error = classify(StatusError(500).with_traceback(None))
    assert "\n" not in str(error)
    long = classify(RuntimeError("x\n" * 1000))
    assert len(str(long)) < 500
