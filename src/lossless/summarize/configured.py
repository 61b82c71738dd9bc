"""The one place that reads ``summarizer.*`` settings into a provider.

Compaction and ``expand_query`` both get their model from here (through
``Engine.summarizer``), so they cannot drift apart in defaults, keys, timeouts
or retry budget. ``factory.build_summarizer`` stays free of ``Config`` for
library users who pass plain values.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from lossless.summarize.completion import LanguageModel
from lossless.summarize.factory import build_summarizer
from lossless.summarize.protocol import Summarizer
from lossless.summarize.resilience import ResilientSummarizer
from lossless.summarize.spend import (
    LEDGER_FILE,
    PAID_PROVIDERS,
    SpendCappedSummarizer,
    SpendLedger,
)
from lossless.tokens import TokenEstimator, estimate_tokens

if TYPE_CHECKING:
    from lossless.config import Config


def summarizer_from_config(
    config: Config, *, estimator: TokenEstimator = estimate_tokens
) -> Summarizer:
    """The summarizer the configuration names (``summarizer.*`` settings)."""
    settings = config.summarizer
    built = build_summarizer(
        settings.provider,
        model=settings.model or None,
        api_key=settings.api_key or None,
        base_url=settings.base_url or None,
        command=shlex.split(settings.command) if settings.command else None,
        timeout_s=settings.timeout_s,
        retries=settings.retries,
        estimate=estimator,
    )
    if settings.provider not in PAID_PROVIDERS:
        return built
    # Every paid call is recorded (`lcm status` shows the use) and capped.
    return SpendCappedSummarizer(
        built,
        SpendLedger(config.home / LEDGER_FILE),
        config.spend_caps,
        build_summarizer("extractive", estimate=estimator),
    )


def language_model_of(summarizer: Summarizer) -> LanguageModel | None:
    """``summarizer`` as a free-form language model, or None when it is not one.

    The extractive summarizer (offline, no model) answers no prompts. A
    provider from ``build_summarizer`` is returned with its resilience wrapper,
    so summaries and answers share one retry budget and one circuit breaker.
    """
    if isinstance(summarizer, SpendCappedSummarizer):
        return summarizer if language_model_of(summarizer.inner) is not None else None
    if isinstance(summarizer, ResilientSummarizer):
        return summarizer if isinstance(summarizer.inner, LanguageModel) else None
    return summarizer if isinstance(summarizer, LanguageModel) else None
