"""Secret redaction: every message is redacted before it is stored or summarized.

Store-independent: plain text in, plain text out. See ``detectors`` for the
built-in categories and the false-positive rules, ``patterns`` for user patterns.

Exports load on first use: the detectors compile their patterns at import,
which a process that only checks a search pattern (``patterns``) or only
reads the store should not pay for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lossless.redact.detectors import (
        CATEGORIES,
        ENTROPY_THRESHOLD,
        Finding,
        has_anchor,
        is_placeholder,
        placeholder,
        shannon_entropy,
    )
    from lossless.redact.patterns import (
        InvalidPattern,
        Scope,
        UserPattern,
        compile_pattern,
        patterns_for_project,
        validate_pattern,
    )
    from lossless.redact.redactor import Redaction, Redactor, merge_counts, redact_text

_EXPORTS = {
    "CATEGORIES": "detectors",
    "ENTROPY_THRESHOLD": "detectors",
    "Finding": "detectors",
    "has_anchor": "detectors",
    "is_placeholder": "detectors",
    "placeholder": "detectors",
    "shannon_entropy": "detectors",
    "InvalidPattern": "patterns",
    "Scope": "patterns",
    "UserPattern": "patterns",
    "compile_pattern": "patterns",
    "patterns_for_project": "patterns",
    "validate_pattern": "patterns",
    "Redaction": "redactor",
    "Redactor": "redactor",
    "merge_counts": "redactor",
    "redact_text": "redactor",
}

__all__ = [
    "CATEGORIES",
    "ENTROPY_THRESHOLD",
    "Finding",
    "InvalidPattern",
    "Redaction",
    "Redactor",
    "Scope",
    "UserPattern",
    "compile_pattern",
    "has_anchor",
    "is_placeholder",
    "merge_counts",
    "patterns_for_project",
    "placeholder",
    "redact_text",
    "shannon_entropy",
    "validate_pattern",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lossless.redact' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"lossless.redact.{module}"), name)
    globals()[name] = value
    return value
