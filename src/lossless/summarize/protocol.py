"""The contract between the compaction engine and every summarizer provider."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from lossless.summarize.errors import (
    SummarizerAuthError,
    SummarizerError,
    SummarizerFatalError,
    SummarizerRefused,
    SummarizerUnavailable,
)

SummaryMode = Literal["normal", "aggressive"]
SUMMARY_MODES: tuple[SummaryMode, ...] = ("normal", "aggressive")

__all__ = [
    "SUMMARY_MODES",
    "Summarizer",
    "SummarizerAuthError",
    "SummarizerError",
    "SummarizerFatalError",
    "SummarizerRefused",
    "SummarizerUnavailable",
    "SummaryMode",
    "SummaryRequest",
    "SummaryResponse",
]


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """One summarization job.

    ``text`` is the source material exactly as the engine rendered it
    (timestamped message blocks at depth 0, time-ranged summary blocks at
    depth >= 1). ``target_tokens`` is the caller's budget for a *normal*
    summary; ``budget_tokens`` is what a provider should actually aim for,
    which halves it in aggressive mode. Halving lives here, in one place, so
    escalation, prompts and the extractive provider cannot halve twice.
    """

    text: str
    depth: int
    target_tokens: int
    previous_context: str | None = None
    mode: SummaryMode = "normal"

    def __post_init__(self) -> None:
        if self.depth < 0:
            raise ValueError(f"depth must be >= 0, got {self.depth}")
        if self.target_tokens < 1:
            raise ValueError(f"target_tokens must be >= 1, got {self.target_tokens}")
        if self.mode not in SUMMARY_MODES:
            raise ValueError(f"mode must be one of {SUMMARY_MODES}, got {self.mode!r}")

    @property
    def budget_tokens(self) -> int:
        if self.mode == "aggressive":
            return max(1, self.target_tokens // 2)
        return self.target_tokens


@dataclass(frozen=True, slots=True)
class SummaryResponse:
    """A summary and what it cost.

    Token counts are the provider's own usage figures when it reports them,
    otherwise estimates; ``model`` is None for providers without one
    (extractive).
    """

    text: str
    input_tokens: int
    output_tokens: int
    model: str | None = None
    # ``text`` itself when the summarizer ran ``injection.scan`` on exactly
    # this text and it found nothing (the in-process extractive summarizer
    # does, as its last step); None otherwise. Escalation then need not scan
    # it again (see ``summarize_with_escalation``).
    scanned_clean: str | None = None


@runtime_checkable
class Summarizer(Protocol):
    """Turns source material into a shorter summary.

    Implementations raise only ``SummarizerError`` subclasses for expected
    failures, and must be safe to call from several threads.
    """

    name: str

    def summarize(self, request: SummaryRequest) -> SummaryResponse: ...
