"""Summarizers: the protocol, depth-aware prompts, providers and escalation.

Store-independent: text in, text out. The network providers (``anthropic``,
``openai``) import their SDKs only when constructed, so importing this package
never requires them.

Importing the package costs nothing: each name loads its module on first use
(``lcm status`` reads the spend ledger's module without the summarizers, the
injection scan and their patterns being compiled).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lossless.summarize.errors import (
        SummarizerAuthError,
        SummarizerError,
        SummarizerFatalError,
        SummarizerRefused,
        SummarizerUnavailable,
    )
    from lossless.summarize.escalation import (
        DEFAULT_FALLBACK_TOKENS,
        TRUNCATION_MARKER,
        EscalationLevel,
        EscalationResult,
        summarize_with_escalation,
        truncate_for_fallback,
    )
    from lossless.summarize.extractive import ExtractiveSummarizer
    from lossless.summarize.factory import PROVIDERS, build_summarizer
    from lossless.summarize.prompts import EXPAND_PREFIX, build_prompt
    from lossless.summarize.protocol import (
        Summarizer,
        SummaryMode,
        SummaryRequest,
        SummaryResponse,
    )
    from lossless.summarize.resilience import ResilientSummarizer
    from lossless.summarize.source import format_message_block, format_summary_block, join_blocks

_WHERE = {
    "SummarizerAuthError": "lossless.summarize.errors",
    "SummarizerError": "lossless.summarize.errors",
    "SummarizerFatalError": "lossless.summarize.errors",
    "SummarizerRefused": "lossless.summarize.errors",
    "SummarizerUnavailable": "lossless.summarize.errors",
    "DEFAULT_FALLBACK_TOKENS": "lossless.summarize.escalation",
    "TRUNCATION_MARKER": "lossless.summarize.escalation",
    "EscalationLevel": "lossless.summarize.escalation",
    "EscalationResult": "lossless.summarize.escalation",
    "summarize_with_escalation": "lossless.summarize.escalation",
    "truncate_for_fallback": "lossless.summarize.escalation",
    "ExtractiveSummarizer": "lossless.summarize.extractive",
    "PROVIDERS": "lossless.summarize.factory",
    "build_summarizer": "lossless.summarize.factory",
    "EXPAND_PREFIX": "lossless.summarize.prompts",
    "build_prompt": "lossless.summarize.prompts",
    "Summarizer": "lossless.summarize.protocol",
    "SummaryMode": "lossless.summarize.protocol",
    "SummaryRequest": "lossless.summarize.protocol",
    "SummaryResponse": "lossless.summarize.protocol",
    "ResilientSummarizer": "lossless.summarize.resilience",
    "format_message_block": "lossless.summarize.source",
    "format_summary_block": "lossless.summarize.source",
    "join_blocks": "lossless.summarize.source",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_FALLBACK_TOKENS",
    "EXPAND_PREFIX",
    "PROVIDERS",
    "TRUNCATION_MARKER",
    "EscalationLevel",
    "EscalationResult",
    "ExtractiveSummarizer",
    "ResilientSummarizer",
    "Summarizer",
    "SummarizerAuthError",
    "SummarizerError",
    "SummarizerFatalError",
    "SummarizerRefused",
    "SummarizerUnavailable",
    "SummaryMode",
    "SummaryRequest",
    "SummaryResponse",
    "build_prompt",
    "build_summarizer",
    "format_message_block",
    "format_summary_block",
    "join_blocks",
    "summarize_with_escalation",
    "truncate_for_fallback",
]
