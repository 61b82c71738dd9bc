"""Build a summarizer from plain settings.

Deliberately free of any Config object and of environment variables: the
integrator resolves configuration (including API keys) and passes values in.
"""

from __future__ import annotations

from collections.abc import Sequence

from lossless.summarize.extractive import ExtractiveSummarizer
from lossless.summarize.protocol import Summarizer
from lossless.summarize.resilience import ResilientSummarizer
from lossless.tokens import TokenEstimator, estimate_tokens

PROVIDERS: tuple[str, ...] = ("extractive", "anthropic", "openai", "command")


def build_summarizer(
    provider: str,
    *,
    model: str | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    command: Sequence[str] | None = None,
    timeout_s: float = 60.0,
    retries: int = 2,
    max_output_tokens: int | None = None,
    breaker_threshold: int = 3,
    breaker_cooldown_s: float = 60.0,
    estimate: TokenEstimator = estimate_tokens,
) -> Summarizer:
    """Return the summarizer named by ``provider``.

    Network-backed providers (anthropic, openai, command) come wrapped in a
    ``ResilientSummarizer`` (``retries`` retries of transient failures, then a
    circuit breaker). Raises ``ValueError`` for an unknown provider or a
    missing command, and ``SummarizerFatalError`` when the provider's SDK is not
    installed (the message names the pip extra to install).
    """
    name = provider.strip().lower()
    inner: Summarizer
    if name == "extractive":
        return ExtractiveSummarizer(estimate=estimate)
    if name == "anthropic":
        from lossless.summarize.anthropic import AnthropicSummarizer

        inner = AnthropicSummarizer(
            model,
            api_key=api_key,
            base_url=base_url,
            timeout_s=timeout_s,
            max_output_tokens=max_output_tokens,
        )
    elif name == "openai":
        from lossless.summarize.openai import OpenAISummarizer

        inner = OpenAISummarizer(
            model,
            api_key=api_key,
            base_url=base_url,
            timeout_s=timeout_s,
            max_output_tokens=max_output_tokens,
        )
    elif name == "command":
        from lossless.summarize.command import CommandSummarizer

        if not command:
            raise ValueError(
                "provider 'command' needs the command to run, as a list of arguments, "
                "e.g. ['claude', '-p']"
            )
        inner = CommandSummarizer(command, timeout_s=timeout_s, model=model)
    else:
        raise ValueError(
            f"unknown summarizer provider {provider!r}; valid providers: {', '.join(PROVIDERS)}"
        )
    return ResilientSummarizer(
        inner,
        retries=retries,
        breaker_threshold=breaker_threshold,
        breaker_cooldown_s=breaker_cooldown_s,
    )
