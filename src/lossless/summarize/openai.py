"""Summaries and completions from OpenAI or any OpenAI-compatible server (vLLM, llama.cpp, Ollama).

Chat Completions is the default because it is what compatible servers
implement; ``api="responses"`` uses the Responses API instead.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Literal

from lossless.summarize._provider import (
    default_max_output_tokens,
    missing_sdk,
    temperature_for,
    translate,
)
from lossless.summarize.completion import Completion, CompletionRequest
from lossless.summarize.errors import (
    SummarizerAuthError,
    SummarizerError,
    SummarizerFatalError,
    SummarizerUnavailable,
)
from lossless.summarize.normalize import field, openai_text, usage_tokens
from lossless.summarize.prompts import build_prompt
from lossless.summarize.protocol import SummaryRequest, SummaryResponse
from lossless.tokens import estimate_tokens

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"

# Local servers ignore the key but the SDK insists on one. A placeholder also
# keeps OPENAI_API_KEY from the environment from being sent to a third-party URL.
_LOCAL_PLACEHOLDER_KEY = "sk-no-key-required"

OpenAIApi = Literal["chat", "responses"]

_MAX_TOKENS_RE = re.compile(r"max_tokens", re.IGNORECASE)
_TEMPERATURE_RE = re.compile(r"temperature", re.IGNORECASE)


class OpenAISummarizer:
    """Summarizer backed by the ``openai`` SDK.

    Some models reject ``max_tokens`` (they want ``max_completion_tokens``) or
    any non-default ``temperature``. Rather than keep a model list, a 400 that
    names one of those parameters switches it off for this instance and the
    call is repeated once per adjustment.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        max_output_tokens: int | None = None,
        api: OpenAIApi = "chat",
        client: Any = None,
    ) -> None:
        if api not in ("chat", "responses"):
            raise ValueError(f"api must be 'chat' or 'responses', got {api!r}")
        if model is None and base_url is not None:
            raise SummarizerFatalError(
                f"the openai summarizer needs a model name for base URL {base_url} "
                "(there is no default model on a custom server)"
            )
        self.name = "openai"
        self.model = model or DEFAULT_OPENAI_MODEL
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.max_output_tokens = max_output_tokens
        self.api: OpenAIApi = api
        self._lock = threading.Lock()
        self._use_max_completion_tokens = False
        self._send_temperature = True
        if client is None:
            try:
                import openai as sdk
            except ImportError as exc:
                raise missing_sdk("openai", "openai", exc) from exc
            kwargs: dict[str, Any] = {"timeout": timeout_s, "max_retries": 0}
            if api_key is not None:
                kwargs["api_key"] = api_key
            elif base_url is not None:
                kwargs["api_key"] = _LOCAL_PLACEHOLDER_KEY
            if base_url is not None:
                kwargs["base_url"] = base_url
            try:
                client = sdk.OpenAI(**kwargs)
            except Exception as exc:
                error = _construction_error(exc, self.model)
                if error is exc:
                    raise
                raise error from exc
        self._client = client

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
        timeout_s = min(self.timeout_s, request.timeout_s or self.timeout_s)
        while True:  # finite: each adjustment in _adapt can happen only once
            try:
                response = self._call(request, timeout_s)
                break
            except Exception as exc:
                error = translate(exc, provider=self.name, model=self.model)
                if error is exc:
                    raise
                if not self._adapt(error):
                    raise error from exc
        text = openai_text(response)
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

    def _call(self, request: CompletionRequest, timeout_s: float) -> Any:
        with self._lock:
            use_completion_tokens = self._use_max_completion_tokens
            send_temperature = self._send_temperature
        extra: dict[str, Any] = {}
        if send_temperature and request.temperature is not None:
            extra["temperature"] = request.temperature
        if self.api == "responses":
            return self._client.responses.create(
                model=self.model,
                instructions=request.system,
                input=request.user,
                max_output_tokens=request.max_output_tokens,
                timeout=timeout_s,
                **extra,
            )
        limit = "max_completion_tokens" if use_completion_tokens else "max_tokens"
        extra[limit] = request.max_output_tokens
        return self._client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
            timeout=timeout_s,
            **extra,
        )

    def _adapt(self, error: Exception) -> bool:
        """Adjust request parameters for a 400 that names one; True if worth retrying."""
        if type(error) is not SummarizerError or "HTTP 400" not in str(error):
            return False
        message = str(error)
        with self._lock:
            if (
                self.api == "chat"
                and not self._use_max_completion_tokens
                and _MAX_TOKENS_RE.search(message)
            ):
                self._use_max_completion_tokens = True
                return True
            if self._send_temperature and _TEMPERATURE_RE.search(message):
                self._send_temperature = False
                return True
        return False


def _construction_error(exc: Exception, model: str) -> Exception:
    """The SDK refuses to build a client without a key: that is a credentials problem."""
    error = translate(exc, provider="openai", model=model)
    if type(error) is SummarizerError or isinstance(error, SummarizerUnavailable):
        return SummarizerAuthError(f"openai client could not be created: {exc}")
    return error
