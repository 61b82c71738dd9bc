"""Turn provider response objects into plain summary text and usage figures.

SDKs return typed objects, OpenAI-compatible servers sometimes return dicts or
slightly different shapes, so every accessor here works on both attributes and
mapping keys and tolerates missing fields. Reasoning/thinking content is never
used as the summary: it is the model's scratchpad, not its answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from lossless.summarize.errors import SummarizerRefused

_THINK_RE = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_WHOLE_FENCE_RE = re.compile(r"^```[\w-]*\n(.*)\n```$", re.DOTALL)
_TEXT_PART_TYPES = frozenset({"text", "output_text"})


def field(obj: Any, name: str) -> Any:
    """``obj.name`` or ``obj[name]``, None when absent."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _as_list(value: Any) -> list[Any]:
    if value is None or isinstance(value, str | bytes | Mapping):
        return []
    if isinstance(value, Iterable):
        return list(value)
    return []


def clean_output(text: str) -> str:
    """Strip inline reasoning blocks and a code fence wrapped around the whole answer."""
    text = _THINK_RE.sub("", text).strip()
    fenced = _WHOLE_FENCE_RE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    return text


def _text_of_parts(parts: Any) -> tuple[str, str | None]:
    """Join text parts of a content list; also return any refusal text."""
    texts: list[str] = []
    refusal: str | None = None
    for part in _as_list(parts):
        if isinstance(part, str):
            texts.append(part)
            continue
        kind = field(part, "type")
        if kind == "refusal":
            refusal = str(field(part, "refusal") or field(part, "text") or "refused")
            continue
        if kind is not None and kind not in _TEXT_PART_TYPES:
            continue  # thinking, tool_use, images, ...
        text = field(part, "text")
        if not isinstance(text, str):
            text = field(text, "value")  # some servers nest {"text": {"value": ...}}
        if isinstance(text, str):
            texts.append(text)
    return "".join(texts), refusal


def anthropic_text(response: Any) -> str:
    """Text of an Anthropic Messages response; SummarizerRefused if there is none."""
    text, refusal = _text_of_parts(field(response, "content"))
    text = clean_output(text)
    stop_reason = field(response, "stop_reason")
    if not text:
        if stop_reason == "refusal" or refusal:
            raise SummarizerRefused(f"anthropic refused to summarize: {refusal or stop_reason}")
        kinds = [field(b, "type") for b in _as_list(field(response, "content"))]
        raise SummarizerRefused(
            f"anthropic returned no text (stop_reason={stop_reason}, block types={kinds})"
        )
    return text


def openai_text(response: Any) -> str:
    """Text of an OpenAI chat-completions or responses-API result."""
    choices = _as_list(field(response, "choices"))
    if choices:
        choice = choices[0]
        message = field(choice, "message")
        content = field(message, "content")
        refusal = field(message, "refusal")
        if isinstance(content, str):
            text = content
        else:
            text, part_refusal = _text_of_parts(content)
            refusal = refusal or part_refusal
        text = clean_output(text)
        if text:
            return text
        finish = field(choice, "finish_reason")
        if refusal or finish == "content_filter":
            raise SummarizerRefused(f"openai refused to summarize: {refusal or finish}")
        raise SummarizerRefused(f"openai returned no text (finish_reason={finish})")

    # Responses API: the SDK's `output_text` convenience, else walk `output`.
    output_text = field(response, "output_text")
    text = output_text if isinstance(output_text, str) else ""
    refusal = None
    if not text.strip():
        pieces: list[str] = []
        for item in _as_list(field(response, "output")):
            if field(item, "type") not in (None, "message"):
                continue  # reasoning items carry a summary of thoughts, not the answer
            part_text, part_refusal = _text_of_parts(field(item, "content"))
            pieces.append(part_text)
            refusal = refusal or part_refusal
        text = "".join(pieces)
    text = clean_output(text)
    if text:
        return text
    if refusal:
        raise SummarizerRefused(f"openai refused to summarize: {refusal}")
    raise SummarizerRefused(
        f"openai returned no text (status={field(response, 'status')}, "
        f"incomplete={field(field(response, 'incomplete_details'), 'reason')})"
    )


def usage_tokens(response: Any) -> tuple[int | None, int | None]:
    """(input, output) tokens as reported by the provider; None where not reported.

    Anthropic reports cached prompt tokens separately; they were still read, so
    they count as input.
    """
    usage = field(response, "usage")
    if usage is None:
        return None, None

    def number(*names: str) -> int | None:
        for name in names:
            value = field(usage, name)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    prompt = number("input_tokens", "prompt_tokens")
    if prompt is not None:
        for extra in ("cache_creation_input_tokens", "cache_read_input_tokens"):
            prompt += number(extra) or 0
    completion = number("output_tokens", "completion_tokens")
    return prompt, completion
