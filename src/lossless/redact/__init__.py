"""Secret redaction: every message is redacted before it is stored or summarized.

Store-independent: plain text in, plain text out. See ``detectors`` for the
built-in categories and the false-positive rules, ``patterns`` for user patterns.
"""

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
