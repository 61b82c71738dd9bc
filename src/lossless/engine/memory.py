"""Durable memory: facts worth keeping beyond one session.

Two ways in: ``remember`` (someone says "remember this": confidence 1.0) and
``promote_from_summaries`` (decisions, fixes and conventions found in the
summary DAG, with a confidence from how strong the wording is). Both go
through ``MemoryRepository.create``, whose normalized-text de-duplication makes
promotion idempotent: running it again over the same summaries adds nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from lossless.errors import InputError
from lossless.injection import scan
from lossless.models import Summary
from lossless.redact import Redactor
from lossless.store.contract import MemoryWrite, NewMemory, Repositories

MAX_MEMORY_CHARS = 2000
"""A memory is injected into prompts; anything longer belongs in a summary."""

Category = Literal["decision", "fix", "convention"]


def remember(
    repos: Repositories,
    text: str,
    *,
    project: str,
    tags: Iterable[str] = (),
    confidence: float = 1.0,
    source_summary_id: str | None = None,
    source_conversation_id: int | None = None,
    redactor: Redactor | None = None,
) -> MemoryWrite:
    """Keep ``text`` as a memory of ``project``; a near-duplicate returns the existing one.

    This is what ``lcm remember`` and the MCP ``lcm_store`` tool call. The text
    and tags are redacted first, like everything else that is stored: with
    ``redactor`` (the project's, user patterns included) or the built-in
    detectors.

    Text that addresses the agent (``lossless.injection``: an instruction an
    agent copied from a tool output, say) is refused: a memory comes back with
    later sessions' prompts, where it would carry that instruction in.
    """
    cleaned = text.strip()
    if not cleaned:
        raise InputError("nothing to remember: the text is empty")
    if len(cleaned) > MAX_MEMORY_CHARS:
        raise InputError(
            f"a memory is at most {MAX_MEMORY_CHARS} characters (got {len(cleaned)}); "
            "keep one fact per memory"
        )
    if not project.strip():
        raise InputError("a memory needs a project")
    refuse_instruction(cleaned)
    redactor = redactor if redactor is not None else Redactor()
    cleaned = redactor.redact_text(cleaned).text
    tags = tuple(redactor.redact_text(tag).text for tag in tags)
    return repos.memory.create(
        NewMemory(
            project=project,
            text=cleaned,
            tags=tags,
            confidence=confidence,
            source_summary_id=source_summary_id,
            source_conversation_id=source_conversation_id,
        )
    )


def refuse_instruction(text: str) -> None:
    """Raise ``InputError`` naming the passage when ``text`` addresses the agent."""
    found = scan(" ".join(text.split()), reported_speech=True)
    if not found:
        return
    excerpt = found[0].excerpt
    excerpt = excerpt if len(excerpt) <= 80 else excerpt[:79] + "…"
    raise InputError(
        f"not remembered: the text reads as an instruction to an agent ({found[0].kind}: "
        f"{excerpt!r}). Memories are shown to later sessions with their prompts, so one "
        "must state a fact, decision or convention; to keep what a file or page said, "
        'report it ("the README of X asks agents to ...")'
    )


# -- promotion ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Signal:
    name: str
    category: Category
    weight: float
    pattern: re.Pattern[str]


def _signal(name: str, category: Category, weight: float, regex: str) -> Signal:
    return Signal(name, category, weight, re.compile(regex, re.IGNORECASE))


# Weights are the confidence a sentence gets from its strongest signal alone.
# Explicit decision/fix wording is strong; bare "always"/"never"/"must" are
# common in ordinary prose, so they only pass the default threshold when they
# open an imperative sentence or come with another signal.
SIGNALS: tuple[Signal, ...] = (
    _signal("decided", "decision", 0.75, r"\b(decided|decision:|agreed (to|on|that))\b"),
    _signal("will_use", "decision", 0.7, r"\b(we|we'll|we will|i will|i'll) (now )?use\b"),
    _signal("going_with", "decision", 0.6, r"\b(going with|chose|switched to|settled on)\b"),
    _signal("fixed_by", "fix", 0.75, r"\b(fixed by|the fix (is|was)|resolved by)\b"),
    _signal("root_cause", "fix", 0.75, r"\broot cause\b"),
    _signal("workaround", "fix", 0.55, r"\bworkaround\b"),
    _signal("convention", "convention", 0.65, r"\b(convention|by convention|rule of thumb)\b"),
    _signal("always", "convention", 0.4, r"\balways\b"),
    _signal("never", "convention", 0.4, r"\bnever\b"),
    _signal("must", "convention", 0.35, r"\bmust( not|n't)?\b"),
    _signal("prefer", "convention", 0.4, r"\bprefer\b"),
)

_IMPERATIVE_OPENER = re.compile(r"^(always|never|do not|don't|must|prefer)\b", re.IGNORECASE)
_HEDGE = re.compile(
    r"\b(maybe|perhaps|might|could|considered|consider|not sure|unclear|should we|"
    r"tbd|proposal|proposed)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[])")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
# Only emphasis asterisks and heading marks: underscores are part of identifiers.
_MARKUP = re.compile(r"\*{1,3}|^#+\s*")

MIN_SENTENCE_CHARS = 16
MAX_SENTENCE_CHARS = 400
AUTO_MAX_CONFIDENCE = 0.95
"""Promoted memories never reach 1.0: that is reserved for what a person said."""


@dataclass(frozen=True, slots=True)
class Candidate:
    text: str
    category: Category
    confidence: float
    signals: tuple[str, ...]


def score_sentence(sentence: str) -> Candidate | None:
    """How strongly one sentence reads as a decision, fix or convention (None: not at all).

    confidence = strongest signal weight, +0.1 per further distinct signal,
    +0.2 for an imperative opener ("Always ...", "Never ..."), -0.3 if hedged
    ("maybe", "might", "should we"), capped at ``AUTO_MAX_CONFIDENCE``.
    Questions are never promoted.
    """
    text = sentence.strip()
    if not MIN_SENTENCE_CHARS <= len(text) <= MAX_SENTENCE_CHARS or text.endswith("?"):
        return None
    found = [s for s in SIGNALS if s.pattern.search(text)]
    if not found:
        return None
    found.sort(key=lambda s: s.weight, reverse=True)
    confidence = found[0].weight + 0.1 * (len(found) - 1)
    if _IMPERATIVE_OPENER.match(text):
        confidence += 0.2
    if _HEDGE.search(text):
        confidence -= 0.3
    confidence = round(max(0.0, min(AUTO_MAX_CONFIDENCE, confidence)), 3)
    return Candidate(text, found[0].category, confidence, tuple(s.name for s in found))


def split_sentences(content: str) -> list[str]:
    """Bullets and sentences of a summary, markup stripped."""
    sentences: list[str] = []
    for raw_line in content.splitlines():
        line = _MARKUP.sub("", _BULLET.sub("", raw_line)).strip()
        if not line:
            continue
        sentences.extend(part.strip() for part in _SENTENCE_END.split(line) if part.strip())
    return sentences


def candidates_from_text(content: str, *, min_confidence: float = 0.5) -> list[Candidate]:
    """Promotion candidates in ``content``, in order, at or above ``min_confidence``."""
    found: list[Candidate] = []
    for sentence in split_sentences(content):
        candidate = score_sentence(sentence)
        if candidate is None or candidate.confidence < min_confidence:
            continue
        # Never promoted: it would reach later prompts (see ``remember``).
        if scan(" ".join(candidate.text.split()), reported_speech=True):
            continue
        found.append(candidate)
    return found


@dataclass(slots=True)
class PromotionReport:
    summaries_scanned: int = 0
    candidates: int = 0
    created: list[str] = field(default_factory=list)
    reinforced: list[str] = field(default_factory=list)


def promote_from_summaries(
    repos: Repositories,
    summaries: Iterable[Summary],
    *,
    project: str,
    min_confidence: float = 0.5,
) -> PromotionReport:
    """Turn decisions, fixes and conventions found in ``summaries`` into memories.

    Idempotent: a sentence already kept (same normalized text) is not added
    again; a memory the user archived stays archived.
    """
    report = PromotionReport()
    for summary in summaries:
        report.summaries_scanned += 1
        for candidate in candidates_from_text(summary.content, min_confidence=min_confidence):
            report.candidates += 1
            write = repos.memory.create(
                NewMemory(
                    project=project,
                    text=candidate.text,
                    tags=("auto", candidate.category),
                    confidence=candidate.confidence,
                    source_summary_id=summary.id,
                    source_conversation_id=summary.conversation_id,
                )
            )
            if write.created:
                report.created.append(write.memory.id)
            elif write.memory.id not in report.created:
                report.reinforced.append(write.memory.id)
    return report


def promote_conversation(
    repos: Repositories, conversation_id: int, *, min_confidence: float = 0.5
) -> PromotionReport:
    """Promote from every summary of one conversation, into its project."""
    conversation = repos.conversations.get(conversation_id)
    if conversation is None:
        raise InputError(f"no conversation {conversation_id}")
    return promote_from_summaries(
        repos,
        repos.summaries.list(conversation_id),
        project=conversation.project,
        min_confidence=min_confidence,
    )
