"""Anthropic and OpenAI providers against fake clients (the paid APIs are the only mock).

The prompt building, response normalisation, error mapping and retry code all
run for real; where the SDKs are installed, their real response types and
exception classes are used.
"""

from __future__ import annotations

import importlib
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from lossless.summarize import (
    ResilientSummarizer,
    SummarizerAuthError,
    SummarizerError,
    SummarizerFatalError,
    SummarizerRefused,
    SummarizerUnavailable,
    SummaryRequest,
    summarize_with_escalation,
)
from lossless.summarize.anthropic import DEFAULT_ANTHROPIC_MODEL, AnthropicSummarizer
from lossless.summarize.openai import OpenAISummarizer

REQUEST = SummaryRequest(
    text="[2026-02-17T07:37:00.000Z] user:\nfix it", depth=0, target_tokens=300
)


class Endpoint:
    """Plays back outcomes (response objects or exceptions) and records call kwargs."""

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[dict[str, Any]] = []

    def create(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def anthropic_client(*outcomes: Any) -> Any:
    return SimpleNamespace(messages=Endpoint(*outcomes))


def openai_client(*outcomes: Any) -> Any:
    endpoint = Endpoint(*outcomes)
    return SimpleNamespace(chat=SimpleNamespace(completions=endpoint), responses=endpoint)


def http_module() -> Any:
    for name in ("httpx2", "httpx"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    pytest.skip("no httpx to build SDK exceptions with")


def status_error(
    sdk: Any, cls_name: str, status: int, headers: dict[str, str] | None = None
) -> Any:
    http = http_module()
    request = http.Request("POST", "https://api.example.test/v1")
    response = http.Response(status, request=request, headers=headers or {})
    return getattr(sdk, cls_name)(f"{cls_name} happened", response=response, body=None)


# -- Anthropic -------------------------------------------------------------------------


def anthropic_message(*blocks: dict[str, Any], stop_reason: str = "end_turn") -> dict[str, Any]:
    return {
        "content": list(blocks),
        "model": "claude-test-1",
        "stop_reason": stop_reason,
        "usage": {
            "input_tokens": 120,
            "output_tokens": 30,
            "cache_read_input_tokens": 5,
            "cache_creation_input_tokens": None,
        },
    }


def test_anthropic_request_shape_and_normalisation() -> None:
    client = anthropic_client(
        anthropic_message(
            {"type": "thinking", "thinking": "let me think"},
            {"type": "text", "text": "Summary part one. "},
            {"type": "text", "text": "Part two.\nExpand for details about: logs"},
        )
    )
    summarizer = AnthropicSummarizer("claude-x", client=client, timeout_s=12)
    response = summarizer.summarize(REQUEST)
    assert response.text == "Summary part one. Part two.\nExpand for details about: logs"
    assert (response.input_tokens, response.output_tokens) == (125, 30)
    assert response.model == "claude-test-1"
    call = client.messages.calls[0]
    assert call["model"] == "claude-x"
    assert call["temperature"] == 0.2
    assert call["timeout"] == 12
    assert call["max_tokens"] >= 512
    assert "<transcript>" in call["messages"][0]["content"]
    assert "untrusted" in call["system"].lower()


def test_anthropic_aggressive_uses_lower_temperature() -> None:
    client = anthropic_client(anthropic_message({"type": "text", "text": "- a"}))
    request = SummaryRequest(text="x", depth=0, target_tokens=300, mode="aggressive")
    AnthropicSummarizer(client=client).summarize(request)
    assert client.messages.calls[0]["temperature"] == 0.1
    assert client.messages.calls[0]["model"] == DEFAULT_ANTHROPIC_MODEL


def test_anthropic_empty_and_refusal() -> None:
    with pytest.raises(SummarizerRefused, match="no text"):
        AnthropicSummarizer(client=anthropic_client(anthropic_message())).summarize(REQUEST)
    refusal = anthropic_message(stop_reason="refusal")
    with pytest.raises(SummarizerRefused, match="refused"):
        AnthropicSummarizer(client=anthropic_client(refusal)).summarize(REQUEST)
    blank = anthropic_message({"type": "text", "text": "  <think>hmm</think> \n"})
    with pytest.raises(SummarizerRefused):
        AnthropicSummarizer(client=anthropic_client(blank)).summarize(REQUEST)


def test_anthropic_real_sdk_types_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    sdk = pytest.importorskip("anthropic")
    from anthropic.types import Message, TextBlock, Usage

    message = Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-haiku-4-5",
        content=[TextBlock(type="text", text="Real SDK summary.")],
        stop_reason="end_turn",
        stop_sequence=None,
        usage=Usage(input_tokens=50, output_tokens=9),
    )
    built: list[dict[str, Any]] = []

    class FakeAnthropic:
        def __init__(self, **kwargs: Any) -> None:
            built.append(kwargs)
            self.messages = Endpoint(
                message,
                status_error(sdk, "AuthenticationError", 401),
                status_error(sdk, "RateLimitError", 429, {"retry-after": "7"}),
                status_error(sdk, "InternalServerError", 529),
                status_error(sdk, "NotFoundError", 404),
                status_error(sdk, "BadRequestError", 400),
                sdk.APITimeoutError(request=http_module().Request("POST", "https://x.test")),
            )

    monkeypatch.setattr(sdk, "Anthropic", FakeAnthropic)
    summarizer = AnthropicSummarizer("claude-haiku-4-5", api_key="sk-test", timeout_s=9)
    assert built == [{"timeout": 9, "max_retries": 0, "api_key": "sk-test"}]
    response = summarizer.summarize(REQUEST)
    assert (response.text, response.input_tokens, response.output_tokens) == (
        "Real SDK summary.",
        50,
        9,
    )
    with pytest.raises(SummarizerAuthError, match="HTTP 401"):
        summarizer.summarize(REQUEST)
    with pytest.raises(SummarizerUnavailable, match="HTTP 429") as info:
        summarizer.summarize(REQUEST)
    assert info.value.retry_after_s == 7
    with pytest.raises(SummarizerUnavailable, match="HTTP 529"):
        summarizer.summarize(REQUEST)
    with pytest.raises(SummarizerFatalError, match="model name"):
        summarizer.summarize(REQUEST)
    with pytest.raises(SummarizerError, match="HTTP 400") as bad:
        summarizer.summarize(REQUEST)
    assert type(bad.value) is SummarizerError
    with pytest.raises(SummarizerUnavailable, match="timed out"):
        summarizer.summarize(REQUEST)


def test_anthropic_missing_credentials_typeerror_is_auth() -> None:
    error = TypeError(
        "Could not resolve authentication method. Expected one of api_key, auth_token"
    )
    with pytest.raises(SummarizerAuthError, match="credentials"):
        AnthropicSummarizer(client=anthropic_client(error)).summarize(REQUEST)


def test_programming_errors_are_not_swallowed() -> None:
    with pytest.raises(AttributeError):
        AnthropicSummarizer(client=anthropic_client(AttributeError("oops"))).summarize(REQUEST)


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(SummarizerFatalError, match=r"pip install 'lossless-context\[anthropic\]'"):
        AnthropicSummarizer()
    with pytest.raises(SummarizerFatalError, match=r"pip install 'lossless-context\[openai\]'"):
        OpenAISummarizer()


# -- OpenAI ----------------------------------------------------------------------------


def chat(
    content: Any, *, finish: str = "stop", refusal: str | None = None, usage: bool = True
) -> Any:
    return {
        "model": "gpt-test",
        "choices": [
            {
                "finish_reason": finish,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
            }
        ],
        "usage": {"prompt_tokens": 80, "completion_tokens": 20} if usage else None,
    }


def test_openai_chat_request_and_string_content() -> None:
    client = openai_client(chat("```\nA summary.\n```"))
    response = OpenAISummarizer("gpt-x", client=client, timeout_s=5).summarize(REQUEST)
    assert response.text == "A summary."
    assert (response.input_tokens, response.output_tokens, response.model) == (80, 20, "gpt-test")
    call = client.chat.completions.calls[0]
    assert call["model"] == "gpt-x"
    assert [m["role"] for m in call["messages"]] == ["system", "user"]
    assert call["temperature"] == 0.2
    assert "max_tokens" in call
    assert call["timeout"] == 5


def test_openai_chat_content_parts_and_reasoning_stripped() -> None:
    parts = [
        {"type": "text", "text": "<think>private chain of thought</think>First. "},
        {"type": "image_url", "image_url": {"url": "x"}},
        SimpleNamespace(type="text", text="Second."),
    ]
    response = OpenAISummarizer(client=openai_client(chat(parts))).summarize(REQUEST)
    assert response.text == "First. Second."


def test_openai_usage_missing_is_estimated() -> None:
    response = OpenAISummarizer(client=openai_client(chat("ok text", usage=False))).summarize(
        REQUEST
    )
    assert response.input_tokens > 100
    assert response.output_tokens == 2


def test_openai_refusals() -> None:
    with pytest.raises(SummarizerRefused, match="cannot help"):
        OpenAISummarizer(client=openai_client(chat(None, refusal="I cannot help"))).summarize(
            REQUEST
        )
    with pytest.raises(SummarizerRefused, match="content_filter"):
        OpenAISummarizer(client=openai_client(chat("", finish="content_filter"))).summarize(REQUEST)
    with pytest.raises(SummarizerRefused, match="no text"):
        OpenAISummarizer(client=openai_client(chat(None))).summarize(REQUEST)


def test_openai_responses_api_shapes() -> None:
    with_convenience = {
        "output_text": "From output_text.",
        "usage": {"input_tokens": 9, "output_tokens": 3},
    }
    walked = {
        "output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thoughts"}]},
            {
                "type": "message",
                "content": [{"type": "output_text", "text": "From output items."}],
            },
        ],
    }
    refused = {"output": [{"type": "message", "content": [{"type": "refusal", "refusal": "no"}]}]}
    client = openai_client(with_convenience, walked, refused)
    summarizer = OpenAISummarizer("gpt-x", client=client, api="responses")
    first = summarizer.summarize(REQUEST)
    assert (first.text, first.input_tokens, first.output_tokens) == ("From output_text.", 9, 3)
    assert summarizer.summarize(REQUEST).text == "From output items."
    with pytest.raises(SummarizerRefused):
        summarizer.summarize(REQUEST)
    call = client.responses.calls[0]
    assert "untrusted" in call["instructions"].lower()
    assert "<transcript>" in call["input"]
    assert "max_output_tokens" in call


def test_openai_real_sdk_types_errors_and_parameter_adaptation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sdk = pytest.importorskip("openai")
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletion, ChatCompletionMessage
    from openai.types.chat.chat_completion import Choice

    completion = ChatCompletion(
        id="c1",
        object="chat.completion",
        created=0,
        model="gpt-real",
        choices=[
            Choice(
                index=0,
                finish_reason="stop",
                message=ChatCompletionMessage(role="assistant", content="Real chat summary."),
            )
        ],
        usage=CompletionUsage(prompt_tokens=70, completion_tokens=6, total_tokens=76),
    )
    http = http_module()
    max_tokens_rejected = sdk.BadRequestError(
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
        response=http.Response(400, request=http.Request("POST", "https://x.test")),
        body=None,
    )
    temperature_rejected = sdk.BadRequestError(
        "Unsupported value: 'temperature' does not support 0.2 with this model.",
        response=http.Response(400, request=http.Request("POST", "https://x.test")),
        body=None,
    )
    built: list[dict[str, Any]] = []

    class FakeOpenAI:
        def __init__(self, **kwargs: Any) -> None:
            built.append(kwargs)
            endpoint = Endpoint(
                max_tokens_rejected,
                temperature_rejected,
                completion,
                completion,
                status_error(sdk, "PermissionDeniedError", 403),
                sdk.APIConnectionError(request=http.Request("POST", "https://x.test")),
            )
            self.chat = SimpleNamespace(completions=endpoint)

    monkeypatch.setattr(sdk, "OpenAI", FakeOpenAI)
    summarizer = OpenAISummarizer("o-model", base_url="http://localhost:11434/v1")
    # A local server gets a placeholder key, never OPENAI_API_KEY from the environment.
    assert built[0]["api_key"] == "sk-no-key-required"
    assert built[0]["base_url"] == "http://localhost:11434/v1"
    assert built[0]["max_retries"] == 0
    response = summarizer.summarize(REQUEST)
    assert (response.text, response.input_tokens, response.model) == (
        "Real chat summary.",
        70,
        "gpt-real",
    )
    calls = summarizer._client.chat.completions.calls
    assert "max_tokens" in calls[0] and "temperature" in calls[0]
    assert "max_completion_tokens" in calls[1] and "temperature" in calls[1]
    assert "max_completion_tokens" in calls[2] and "temperature" not in calls[2]
    # The adjustments stick for later calls.
    summarizer.summarize(REQUEST)
    assert "max_completion_tokens" in calls[3] and "temperature" not in calls[3]
    with pytest.raises(SummarizerAuthError, match="HTTP 403"):
        summarizer.summarize(REQUEST)
    with pytest.raises(SummarizerUnavailable, match="APIConnectionError"):
        summarizer.summarize(REQUEST)


def test_openai_custom_server_needs_a_model() -> None:
    with pytest.raises(SummarizerFatalError, match="needs a model name"):
        OpenAISummarizer(base_url="http://localhost:8000/v1", client=openai_client())


def test_openai_without_key_is_auth_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)
    with pytest.raises(SummarizerAuthError):
        OpenAISummarizer("gpt-x")


# -- the full chain: provider + retries + escalation -----------------------------------


def test_transient_failures_are_retried_then_summary_accepted() -> None:
    client = openai_client(
        TimeoutError("read timed out"),
        ConnectionRefusedError("refused"),
        chat("Recovered summary."),
    )
    sleeps: list[float] = []
    resilient = ResilientSummarizer(
        OpenAISummarizer("gpt-x", client=client), retries=2, sleep=sleeps.append, seed=1
    )
    result = summarize_with_escalation(resilient, "long text " * 500, depth=0, target_tokens=100)
    assert result.level == "normal"
    assert result.text == "Recovered summary."
    assert len(sleeps) == 2


def test_auth_error_stops_the_chain_without_retry() -> None:
    client = openai_client(
        _status_exc(401),
        chat("never reached"),
    )
    sleeps: list[float] = []
    resilient = ResilientSummarizer(OpenAISummarizer("gpt-x", client=client), sleep=sleeps.append)
    with pytest.raises(SummarizerAuthError):
        summarize_with_escalation(resilient, "long text " * 500, depth=0, target_tokens=100)
    assert sleeps == []
    assert len(client.chat.completions.calls) == 1


def _status_exc(status: int) -> Exception:
    """An SDK-agnostic HTTP error: what an OpenAI-compatible client might raise."""

    class HTTPStatusError(Exception):
        def __init__(self) -> None:
            super().__init__(f"server said {status}")
            self.status_code = status

    return HTTPStatusError()
