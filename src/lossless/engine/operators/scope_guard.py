"""The delegation guard: a sub-agent may hand work on only if it keeps some itself.

From the seed's "Sub-agent Scope Guard": an agent that wants to delegate must
say what slice it hands over (``delegated_scope``) and what it still does
itself (``kept_work``). A delegation whose kept work is empty, a placeholder
("nothing", "n/a", "wait for the result") or just the delegated scope again is
refused with a reason the model reads, so it does the work directly; and the
depth of delegation is bounded, so no chain of sub-agents handing the same
task on can grow without end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_MAX_DEPTH = 2
_MIN_KEPT_WORDS = 3

# Kept work that is really none: waiting, relaying, or words meaning nothing.
_TRIVIAL = re.compile(
    r"^(?:(?:i\s+(?:will|'ll)\s+)?(?:nothing|none|n/?a|na|no(?:thing)?\s+else|-+|\.+|tbd|todo|"
    r"(?:just\s+)?(?:wait(?:ing)?|relay(?:ing)?|forward(?:ing)?|pass(?:ing)?\s+(?:it\s+)?on|"
    r"return(?:ing)?|report(?:ing)?|collect(?:ing)?|aggregat(?:e|ing)|combin(?:e|ing)|"
    r"merg(?:e|ing))(?:\s+(?:for|on|back|the|its?|their|all|results?|answers?|output|them|up))*)"
    r"[.!]?)$",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Delegation:
    delegated_scope: str
    kept_work: str


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    reason: str


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def check_delegation(
    request: Delegation, *, depth: int, max_depth: int = DEFAULT_MAX_DEPTH
) -> Verdict:
    """Whether an agent at ``depth`` (0: the top) may delegate ``request``."""
    scope = request.delegated_scope.strip()
    kept = request.kept_work.strip()
    if depth >= max_depth:
        return Verdict(
            False,
            f"delegation refused: already {depth} level(s) deep (the limit is {max_depth}); "
            "do this work yourself",
        )
    if not scope:
        return Verdict(
            False,
            "delegation refused: state delegated_scope (what you hand over) and kept_work "
            "(what you still do yourself)",
        )
    if not kept:
        return Verdict(
            False,
            "delegation refused: kept_work is empty; if you keep no part of the work, "
            "do it yourself instead of delegating it",
        )
    kept_words = _words(kept)
    if _TRIVIAL.match(kept) or len(kept_words) < _MIN_KEPT_WORDS:
        return Verdict(
            False,
            f"delegation refused: kept_work {kept!r} is not work you do yourself; "
            "name the part you keep, or do the task directly",
        )
    scope_words = set(_words(scope))
    if scope_words and set(kept_words) <= scope_words:
        return Verdict(
            False,
            "delegation refused: kept_work only repeats delegated_scope; keep a distinct part "
            "of the work, or do it directly",
        )
    return Verdict(True, "delegation accepted")
