"""Words a full-text query leaves out when it has others to search for.

A question such as "how do I fix the parser" shares "how", "do", "the" with
most of a large history: requiring them costs a walk over posting lists of
hundreds of thousands of rows, and ranking by them adds nothing (bm25 gives
them almost no weight). Only English function words are listed: technical
words ("error", "test", "file") always count. A query made only of these
words is searched as given.
"""

from __future__ import annotations

# One string, split: a word list a reader can scan in a few lines.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during
    each few for from further had has have having he her here hers herself him
    himself his how i if in into is it its itself just me more most my myself no nor
    not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves
    """.split()  # noqa: SIM905
)


def content_words(words: list[str]) -> list[str]:
    """``words`` without stop words, or all of them if nothing else is left."""
    kept = [w for w in words if w.casefold() not in STOP_WORDS]
    return kept or words
