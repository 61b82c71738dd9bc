"""Token estimation.

Counting exactly needs the model's tokenizer; for budgeting, ~4 characters per
token is close enough and costs nothing. The estimator is a plain callable so an
embedder can plug in a real tokenizer (``Engine.open(token_estimator=...)``).
"""

from __future__ import annotations

from collections.abc import Callable

TokenEstimator = Callable[[str], int]

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Estimate tokens as ceil(len(text) / 4); empty text is 0 tokens."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
