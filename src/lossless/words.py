"""Counts that read as words: "1 memory", "2 memories", "18 summaries"."""

from __future__ import annotations


def plural(noun: str, count: int) -> str:
    """``noun`` for ``count`` of it: "1 memory", "2 memories", "3 messages"."""
    if count == 1:
        return noun
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "o", "u"):
        return noun[:-1] + "ies"
    return noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")


def counted(count: int, noun: str) -> str:
    """``count`` and its noun, thousands separated: "1 summary", "1,204 messages"."""
    return f"{count:,} {plural(noun, count)}"
