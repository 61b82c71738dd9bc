from __future__ import annotations

import dataclasses

import pytest

from lossless.summarize import (
    ExtractiveSummarizer,
    Summarizer,
    SummarizerAuthError,
    SummarizerError,
    SummarizerFatalError,
    SummarizerRefused,
    SummarizerUnavailable,
    SummaryRequest,
)


def test_request_is_frozen_and_validated() -> None:
    request = SummaryRequest(text="x", depth=0, target_tokens=10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.text = "y"  # type: ignore[misc]
    with pytest.raises(ValueError, match="depth"):
        SummaryRequest(text="x", depth=-1, target_tokens=10)
    with pytest.raises(ValueError, match="target_tokens"):
        SummaryRequest(text="x", depth=0, target_tokens=0)
    with pytest.raises(ValueError, match="mode"):
        SummaryRequest(text="x", depth=0, target_tokens=10, mode="gentle")  # type: ignore[arg-type]


def test_budget_halves_only_in_aggressive_mode() -> None:
    assert SummaryRequest(text="x", depth=0, target_tokens=1200).budget_tokens == 1200
    assert (
        SummaryRequest(text="x", depth=0, target_tokens=1200, mode="aggressive").budget_tokens
        == 600
    )
    assert SummaryRequest(text="x", depth=0, target_tokens=1, mode="aggressive").budget_tokens == 1


def test_error_hierarchy() -> None:
    assert issubclass(SummarizerAuthError, SummarizerFatalError)
    for cls in (SummarizerFatalError, SummarizerUnavailable, SummarizerRefused):
        assert issubclass(cls, SummarizerError)
    assert not issubclass(SummarizerUnavailable, SummarizerFatalError)
    assert SummarizerUnavailable("x", retry_after_s=3).retry_after_s == 3


def test_extractive_satisfies_protocol() -> None:
    assert isinstance(ExtractiveSummarizer(), Summarizer)


def test_summarizer_errors_are_lossless_errors() -> None:
    from lossless.errors import LosslessError

    assert issubclass(SummarizerError, LosslessError)
