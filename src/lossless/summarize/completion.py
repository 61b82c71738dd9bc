"""Prompt in, text and token usage out: the one model call every feature makes.

Summaries, ``expand_query``'s sub-agent answers and any later operator that
asks a model something all go through ``LanguageModel.complete``, so they share
one implementation of each provider: the same key policy (no environment key
sent to a custom server), the same process-group timeout for commands, the same
retry budget and circuit breaker (``ResilientSummarizer``), the same usage
figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["Completion", "CompletionRequest", "LanguageModel"]


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """One bounded model call.

    ``timeout_s`` is the whole time the caller can give this call, retries
    included (None: the provider's configured timeout per attempt). A caller
    with a deadline passes what is left of it, and no attempt outlives it.
    ``temperature`` None leaves the provider's default.
    """

    system: str
    user: str
    max_output_tokens: int
    temperature: float | None = None
    timeout_s: float | None = None

    def __post_init__(self) -> None:
        if self.max_output_tokens < 1:
            raise ValueError(f"max_output_tokens must be >= 1, got {self.max_output_tokens}")
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")


@dataclass(frozen=True, slots=True)
class Completion:
    """The model's text and what it cost.

    Token counts are the provider's own usage figures when it reports them,
    otherwise estimates; ``model`` is the model that answered, when known.
    """

    text: str
    input_tokens: int
    output_tokens: int
    model: str | None = None


@runtime_checkable
class LanguageModel(Protocol):
    """Anything that answers a ``CompletionRequest``.

    Implementations raise only ``SummarizerError`` subclasses for expected
    failures (the same classes as summaries: a fatal misconfiguration, a
    transient outage, a refusal) and must be safe to call from several threads.
    """

    name: str

    def complete(self, request: CompletionRequest) -> Completion: ...
