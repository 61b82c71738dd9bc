"""Summarizer errors, and how provider failures map onto them.

The classes encode what the caller should *do*, not where the failure came
from:

- ``SummarizerFatalError``: misconfiguration (bad key, unknown model, missing
  command or SDK). Retrying cannot help and a fallback summary would be junk,
  so compaction stops and the user is told. ``SummarizerAuthError`` is the
  common case.
- ``SummarizerUnavailable``: transient (timeout, connection refused, 429, 5xx,
  circuit open). Retried with backoff; escalation may fall back.
- ``SummarizerRefused``: the provider answered but gave nothing usable (empty
  text, a refusal, a content filter). Not retried: the same prompt would get
  the same answer; escalation tries the aggressive prompt instead.
- plain ``SummarizerError``: anything else the provider rejected (e.g. a 400 for
  an oversized prompt). Not retried; escalation moves on.
"""

from __future__ import annotations

from typing import Any

from lossless.errors import LosslessError


class SummarizerError(LosslessError):
    """Base class for every summarizer failure."""


class SummarizerFatalError(SummarizerError):
    """The summarizer is misconfigured; compaction must stop, not fall back."""


class SummarizerAuthError(SummarizerFatalError):
    """Missing, invalid or unauthorised credentials (HTTP 401/403)."""


class SummarizerUnavailable(SummarizerError):
    """A transient failure; ``retry_after_s`` is the server's hint when it gave one."""

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class SummarizerRefused(SummarizerError):
    """The provider returned no usable text (empty output, refusal, filter)."""


_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_FATAL_STATUS = frozenset({402, 404})
_TRANSIENT_CLASS_NAMES = frozenset(
    {
        "APITimeoutError",
        "APIConnectionError",
        "RateLimitError",
        "InternalServerError",
        "OverloadedError",
        "ServiceUnavailableError",
        "GatewayTimeoutError",
        "DeadlineExceededError",
        "RequestTimeoutError",
    }
)


def _status_code(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _retry_after(exc: BaseException) -> float | None:
    """Read a numeric ``Retry-After`` header; HTTP-date forms are ignored."""
    response = getattr(exc, "response", None)
    headers: Any = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after")
    except Exception:
        return None
    if value is None:
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if seconds >= 0 else None


def _brief(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).strip() or type(exc).__name__
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def classify_provider_error(
    exc: BaseException, *, provider: str, model: str | None
) -> SummarizerError:
    """Translate an SDK/HTTP exception into the summarizer error it means.

    Works by duck typing (``status_code``, ``response.headers``, class names)
    so it needs neither SDK installed and covers OpenAI-compatible servers whose
    errors reach us through the OpenAI SDK.
    """
    if isinstance(exc, SummarizerError):
        return exc
    where = f"{provider} ({model})" if model else provider
    detail = f"{type(exc).__name__}: {_brief(exc)}"
    status = _status_code(exc)
    if status in (401, 403):
        return SummarizerAuthError(
            f"{where} rejected the credentials (HTTP {status}); check the API key. {detail}"
        )
    if status is not None and status in _FATAL_STATUS:
        hint = "check the model name and base URL" if status == 404 else "check billing"
        return SummarizerFatalError(f"{where} returned HTTP {status}; {hint}. {detail}")
    if status is not None and (status in _TRANSIENT_STATUS or status >= 500):
        return SummarizerUnavailable(
            f"{where} unavailable (HTTP {status}). {detail}", retry_after_s=_retry_after(exc)
        )
    if status is None and (
        type(exc).__name__ in _TRANSIENT_CLASS_NAMES
        or isinstance(exc, TimeoutError | ConnectionError)
    ):
        return SummarizerUnavailable(f"{where} unreachable or timed out. {detail}")
    if status is not None:
        return SummarizerError(f"{where} rejected the request (HTTP {status}). {detail}")
    return SummarizerError(f"{where} failed. {detail}")
