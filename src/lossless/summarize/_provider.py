"""Pieces shared by the network providers."""

from __future__ import annotations

import re

from lossless.summarize.errors import (
    SummarizerAuthError,
    SummarizerFatalError,
    classify_provider_error,
)
from lossless.summarize.protocol import SummaryRequest

# Exceptions that mean a bug in our code or an SDK/API mismatch, not a provider
# failure: they must surface as tracebacks, not be escalated into fallbacks.
PROGRAMMING_ERRORS: tuple[type[BaseException], ...] = (
    TypeError,
    AttributeError,
    NameError,
    ImportError,
    AssertionError,
)


def temperature_for(request: SummaryRequest) -> float:
    # Aggressive mode asks for terse, factual bullets: less sampling freedom.
    return 0.1 if request.mode == "aggressive" else 0.2


def default_max_output_tokens(request: SummaryRequest) -> int:
    """Generous ceiling: the prompt asks for the budget; the cap only stops runaways.

    A reply cut off at the cap is still usable text, and escalation rejects it
    if it is not smaller than the input.
    """
    return min(16_000, max(512, request.budget_tokens * 2))


def missing_sdk(provider: str, package: str, exc: ImportError) -> SummarizerFatalError:
    err = SummarizerFatalError(
        f"the {provider} summarizer needs the {package!r} package, which is not installed: "
        f"pip install 'lossless-context[{provider}]'"
    )
    err.__cause__ = exc
    return err


_CREDENTIALS_RE = re.compile(r"api[_ ]key|auth(?:entication|_token)|credentials", re.IGNORECASE)


def translate(exc: Exception, *, provider: str, model: str | None) -> Exception:
    """The summarizer error ``exc`` means, or ``exc`` itself if it is a bug.

    Callers re-raise a returned ``exc`` unchanged so programming errors keep
    their traceback instead of being escalated into a fallback summary. One
    exception: the Anthropic SDK reports missing credentials as a TypeError.
    """
    if isinstance(exc, PROGRAMMING_ERRORS):
        if isinstance(exc, TypeError) and _CREDENTIALS_RE.search(str(exc)):
            where = f"{provider} ({model})" if model else provider
            return SummarizerAuthError(f"{where}: no usable credentials: {exc}")
        return exc
    return classify_provider_error(exc, provider=provider, model=model)
