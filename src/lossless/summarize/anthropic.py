"""Summaries and completions from Anthropic's Messages API.

The SDK is an optional extra, imported when the summarizer is constructed so
that ``import lossless`` never needs it and a missing install is reported at
configuration time, not in the middle of a compaction.
"""

from __future__ import annotations

import inspect
from typing import Any

from lossless.summarize._provider import (
    default_max_output_tokens,
    missing_sdk,
    temperature_for,
    translate,
)
from lossless.summarize.completion import Completion, CompletionRequest
from lossless.summarize.normalize import anthropic_text, field, usage_tokens
from lossless.summarize.prompts import build_prompt
from lossless.summarize.protocol import SummaryRequest, SummaryResponse
from lossless.tokens import estimate_tokens

DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"


class AnthropicSummarizer:
    """Summarizer backed by ``anthropic.Anthropic().messages.create``.

    ``api_key=None`` leaves credential discovery to the SDK, except with a
    custom ``base_url``: the environment's key is not sent to another server
    (configure ``summarizer.api_key`` for it). The SDK's own
    retries are disabled: ``ResilientSummarizer`` owns retrying, and two retry
    layers would multiply the wait. ``client`` injects a ready client (tests,
    custom transports).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        max_output_tokens: int | None = None,
        client: Any = None,
    ) -> None:
        self.name = "anthropic"
        self.model = model or DEFAULT_ANTHROPIC_MODEL
        self.timeout_s = timeout_s
        self.max_output_tokens = max_output_tokens
        if client is None:
            try:
                import anthropic as sdk
            except ImportError as exc:
                raise missing_sdk("anthropic", "anthropic", exc) from exc
            kwargs: dict[str, Any] = {"timeout": timeout_s, "max_retries": 0}
            if api_key is not None:
                kwargs["api_key"] = api_key
            elif base_url is not None:
                # Never send ANTHROPIC_API_KEY from the environment to another server.
                kwargs["api_key"] = "no-key-configured"
            if base_url is not None:
                kwargs["base_url"] = base_url
            try:
                client = sdk.Anthropic(**kwargs)
            except Exception as exc:
                error = translate(exc, provider=self.name, model=self.model)
                if error is exc:
                    raise
                raise error from exc
        self._client = client
        # Recent SDKs dropped the sampling parameters from ``messages.create``;
        # passing ``temperature`` to them is a TypeError on every call.
        self._send_temperature = _accepts_keyword(
            getattr(getattr(client, "messages", None), "create", None), "temperature"
        )

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        system, user = build_prompt(request)
        done = self.complete(
            CompletionRequest(
                system,
                user,
                max_output_tokens=self.max_output_tokens or default_max_output_tokens(request),
                temperature=temperature_for(request),
            )
        )
        return SummaryResponse(done.text, done.input_tokens, done.output_tokens, done.model)

    def complete(self, request: CompletionRequest) -> Completion:
        extra: dict[str, Any] = {}
        if self._send_temperature and request.temperature is not None:
            extra["temperature"] = request.temperature
        try:
            response = self._client.messages.create(
                model=self.model,
                max_tokens=request.max_output_tokens,
                system=request.system,
                messages=[{"role": "user", "content": request.user}],
                timeout=min(self.timeout_s, request.timeout_s or self.timeout_s),
                **extra,
            )
        except Exception as exc:
            error = translate(exc, provider=self.name, model=self.model)
            if error is exc:
                raise
            raise error from exc
        text = anthropic_text(response)
        prompt_tokens, completion_tokens = usage_tokens(response)
        return Completion(
            text=text,
            input_tokens=(
                prompt_tokens
                if prompt_tokens is not None
                else estimate_tokens(request.system + request.user)
            ),
            output_tokens=completion_tokens
            if completion_tokens is not None
            else estimate_tokens(text),
            model=str(field(response, "model") or self.model),
        )


def _accepts_keyword(func: Any, name: str) -> bool:
    """Whether ``func`` takes keyword ``name`` (True when its signature cannot be read)."""
    if func is None:
        return True
    try:
        parameters = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return True
    return name in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )
