from __future__ import annotations

import sys

import pytest

from lossless.summarize import (
    PROVIDERS,
    ExtractiveSummarizer,
    ResilientSummarizer,
    SummarizerFatalError,
    build_summarizer,
)
from lossless.summarize.anthropic import AnthropicSummarizer
from lossless.summarize.command import CommandSummarizer
from lossless.summarize.openai import OpenAISummarizer


def test_extractive_is_plain() -> None:
    assert isinstance(build_summarizer("extractive"), ExtractiveSummarizer)
    assert isinstance(build_summarizer(" Extractive "), ExtractiveSummarizer)


def test_command_is_wrapped_with_retry_settings() -> None:
    summarizer = build_summarizer(
        "command", command=["claude", "-p"], timeout_s=30, retries=4, model="haiku"
    )
    assert isinstance(summarizer, ResilientSummarizer)
    assert summarizer.retries == 4
    inner = summarizer.inner
    assert isinstance(inner, CommandSummarizer)
    assert inner.argv == ["claude", "-p"]
    assert inner.timeout_s == 30
    assert inner.model == "haiku"
    assert summarizer.name == "command"


def test_command_requires_argv() -> None:
    with pytest.raises(ValueError, match=r"\['claude', '-p'\]"):
        build_summarizer("command")


def test_network_providers_are_wrapped() -> None:
    pytest.importorskip("anthropic")
    pytest.importorskip("openai")
    anthropic = build_summarizer("anthropic", model="claude-x", api_key="sk-a", timeout_s=7)
    assert isinstance(anthropic, ResilientSummarizer)
    assert isinstance(anthropic.inner, AnthropicSummarizer)
    assert anthropic.inner.model == "claude-x"
    assert anthropic.inner.timeout_s == 7
    openai = build_summarizer(
        "openai", model="llama3", base_url="http://localhost:11434/v1", retries=0
    )
    assert isinstance(openai, ResilientSummarizer)
    assert isinstance(openai.inner, OpenAISummarizer)
    assert openai.retries == 0


def test_unknown_provider_lists_valid_names() -> None:
    with pytest.raises(ValueError) as info:
        build_summarizer("gpt")
    for name in PROVIDERS:
        assert name in str(info.value)


def test_missing_sdk_is_a_clear_fatal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(SummarizerFatalError, match=r"pip install 'lossless-context\[anthropic\]'"):
        build_summarizer("anthropic", api_key="sk")
