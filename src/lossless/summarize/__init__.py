"""Summarizers: the protocol, depth-aware prompts, providers and escalation.

Store-independent: text in, text out. The network providers (``anthropic``,
``openai``) import their SDKs only when constructed, so importing this package
never requires them.
"""

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
