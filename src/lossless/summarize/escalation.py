"""Three-level escalation: normal -> aggressive -> deterministic truncation.

Every compaction pass must make progress (architecture invariant 3), so a
summary is accepted only when it is strictly smaller than its input, and the
last level is a truncation that cannot fail. Misconfiguration is the exception:
``SummarizerFatalError`` (including ``SummarizerAuthError``) propagates, because
writing truncations under a broken key would silently fill the DAG with junk.

A summary is also refused when it addresses the agent (``injection.scan``:
overrides, role or tool markers, dangerous commands, exfiltration, goal
changes): whichever summarizer wrote it, it would re-enter the next context
with a user message's authority. The truncation level cannot be refused, so it
withholds such lines of its source itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from lossless.injection import neutralize, scan
from lossless.summarize.errors import SummarizerError, SummarizerFatalError, SummarizerUnavailable
from lossless.summarize.protocol import Summarizer, SummaryMode, SummaryRequest
from lossless.tokens import TokenEstimator, estimate_tokens

TRUNCATION_MARKER = "[Truncated for context management]"
DEFAULT_FALLBACK_TOKENS = 512

EscalationLevel = Literal["normal", "aggressive", "fallback"]


@dataclass(frozen=True, slots=True)
class EscalationResult:
    """The accepted summary and what producing it cost.

    ``input_tokens``/``output_tokens`` add up every model call made (a
    rejected attempt still cost money); they are 0 when only the fallback ran.
    ``model`` is the model of the accepted response (None for the fallback).
    ``error`` joins the messages of exceptions that forced escalation.
    """

    text: str
    level: EscalationLevel
    input_tokens: int
    output_tokens: int
    model: str | None
    error: str | None = None


def summarize_with_escalation(
    summarizer: Summarizer,
    text: str,
    *,
    depth: int,
    target_tokens: int,
    previous_context: str | None = None,
    estimate: TokenEstimator = estimate_tokens,
    fallback_tokens: int = DEFAULT_FALLBACK_TOKENS,
    on_unavailable: Literal["fallback", "raise"] = "fallback",
) -> EscalationResult:
    """Summarize ``text``, escalating until the result is smaller than the input.

    Level 1 asks for a normal summary; if it fails (refused, unavailable, any
    other ``SummarizerError``) or is not smaller than the input, level 2 asks
    for an aggressive one (the request's budget halves); if that also fails,
    level 3 truncates deterministically to ``fallback_tokens``.

    ``on_unavailable="raise"`` re-raises the last ``SummarizerUnavailable``
    instead of truncating when both model levels failed only because the
    service was down: a background worker can retry later rather than store a
    truncation for an outage.
    """
    input_size = estimate(text)
    spent_in = spent_out = 0
    errors: list[str] = []
    unavailable: SummarizerUnavailable | None = None
    only_unavailable = True
    modes: tuple[SummaryMode, ...] = ("normal", "aggressive")
    for mode in modes:
        request = SummaryRequest(
            text=text,
            depth=depth,
            target_tokens=target_tokens,
            previous_context=previous_context,
            mode=mode,
        )
        try:
            response = summarizer.summarize(request)
        except SummarizerFatalError:
            raise
        except SummarizerUnavailable as exc:
            unavailable = exc
            errors.append(f"{mode}: {exc}")
            continue
        except SummarizerError as exc:
            only_unavailable = False
            errors.append(f"{mode}: {exc}")
            continue
        only_unavailable = False
        spent_in += response.input_tokens
        spent_out += response.output_tokens
        summary = response.text.strip()
        # A text in which ``scan`` finds nothing holds nothing for it with
        # ``reported_speech`` either (that mode only passes over some of the
        # same matches), so a summary the summarizer scanned clean itself,
        # exactly as it stands, is not scanned twice.
        if response.scanned_clean is not None and response.scanned_clean == summary:
            findings = []
        else:
            findings = scan(summary, reported_speech=True)
        if findings:
            shown = "; ".join(f"{f.kind}: {f.excerpt[:60]!r}" for f in findings[:3])
            errors.append(f"{mode}: summary refused, it addresses the agent ({shown})")
            continue
        if summary and estimate(summary) < input_size:
            return EscalationResult(
                text=summary,
                level=mode,
                input_tokens=spent_in,
                output_tokens=spent_out,
                model=response.model,
                error="; ".join(errors) or None,
            )
    if on_unavailable == "raise" and unavailable is not None and only_unavailable:
        raise unavailable
    return EscalationResult(
        text=truncate_for_fallback(text, fallback_tokens, estimate=estimate),
        level="fallback",
        input_tokens=spent_in,
        output_tokens=spent_out,
        model=None,
        error="; ".join(errors) or None,
    )


def truncate_for_fallback(
    text: str,
    max_tokens: int = DEFAULT_FALLBACK_TOKENS,
    *,
    estimate: TokenEstimator = estimate_tokens,
) -> str:
    """Deterministic truncation that keeps the start and the end of ``text``.

    The start usually holds the request, the end the outcome, so about two
    thirds of the room goes to the head and one third to the tail, cut at line
    boundaries where possible, with the marker in between.

    Guarantees: the result fits ``max_tokens`` and is strictly smaller than
    ``text`` whenever ``text`` has more than one token. Input already within
    ``max_tokens`` is halved instead (the engine only escalates on inputs larger
    than the target, so this is a safety net that still makes progress). Input
    of 0 or 1 tokens is returned unchanged: nothing can be saved.

    Instruction-like lines of ``text`` (``injection.neutralize``) are withheld
    first: this level copies its source, and its source is untrusted.
    """
    size = estimate(text)
    if size <= 1:
        return text
    limit = max_tokens if size > max_tokens else size // 2
    text = neutralize(text).text
    marker = f"\n{TRUNCATION_MARKER}\n"
    room = limit - estimate(marker)
    if room <= 0:
        return _prefix_within(text, limit, estimate)
    head = _prefix_within(text, max(1, room * 2 // 3), estimate)
    tail_room = room - estimate(head)
    tail = _suffix_within(text[len(head) :], tail_room, estimate) if tail_room > 0 else ""
    result = f"{head}{marker}{tail}".strip("\n")
    # Token estimates of the pieces need not add up (real tokenizers merge
    # across boundaries); shave the tail, then the head, until the whole fits.
    while estimate(result) > limit and tail:
        tail = tail[max(1, len(tail) // 10) :]
        result = f"{head}{marker}{tail}".strip("\n")
    if estimate(result) > limit:
        result = _prefix_within(result, limit, estimate)
    if scan(result):
        # A cut can leave a fragment that reads differently from its whole line.
        result = _prefix_within(neutralize(result).text, limit, estimate)
    return result


def _prefix_within(text: str, budget: int, estimate: TokenEstimator) -> str:
    """Longest prefix within ``budget`` tokens, preferring to end at a line break."""
    cut = _longest(len(text), lambda n: estimate(text[:n]) <= budget)
    prefix = text[:cut]
    if cut < len(text):
        newline = prefix.rfind("\n")
        if newline > cut // 2:
            prefix = prefix[:newline]
    return prefix.rstrip()


def _suffix_within(text: str, budget: int, estimate: TokenEstimator) -> str:
    """Longest suffix within ``budget`` tokens, preferring to start at a line break."""
    keep = _longest(len(text), lambda n: estimate(text[len(text) - n :]) <= budget)
    suffix = text[len(text) - keep :] if keep else ""
    if keep < len(text):
        newline = suffix.find("\n")
        if 0 <= newline < keep // 2:
            suffix = suffix[newline + 1 :]
    return suffix.strip()


def _longest(n: int, fits: Callable[[int], bool]) -> int:
    """Largest k in [0, n] with fits(k), assuming fits is monotone (binary search)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
