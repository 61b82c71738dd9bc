"""Precision and recall of the built-in detectors on a labelled corpus.

Run with ``-s`` to see the per-category table.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from tests.redact.redact_corpus import ALNUM, Case, Gen, near_misses, positives

from lossless.redact import CATEGORIES, Finding, Redactor, placeholder

POSITIVES = positives()
NEAR_MISSES = near_misses()


def _covers(f: Finding, start: int, end: int) -> bool:
    return f.start <= start and f.end >= end


def _overlaps(f: Finding, start: int, end: int) -> bool:
    return f.start < end and start < f.end


def test_corpus_covers_every_category() -> None:
    labelled = Counter(s.category for c in POSITIVES for s in c.secrets)
    assert set(labelled) == set(CATEGORIES)
    assert min(labelled.values()) >= 3
    assert len(NEAR_MISSES) >= 80


def test_precision_and_recall_per_category() -> None:
    """Over several seeds, so each format is tried with many random values."""
    redactor = Redactor()
    total: Counter[str] = Counter()
    detected: Counter[str] = Counter()
    reported: Counter[str] = Counter()
    correct: Counter[str] = Counter()
    misses: list[str] = []
    false_positives: list[str] = []
    corpus = [c for seed in range(5) for c in positives(seed)] + NEAR_MISSES
    for case in corpus:
        findings = redactor.find(case.text)
        for secret in case.secrets:
            total[secret.category] += 1
            if any(
                f.category == secret.category and _covers(f, secret.start, secret.end)
                for f in findings
            ):
                detected[secret.category] += 1
            else:
                misses.append(f"{case.label}: {case.text[secret.start : secret.end][:40]!r}")
        for f in findings:
            reported[f.category] += 1
            if any(f.category == s.category and _overlaps(f, s.start, s.end) for s in case.secrets):
                correct[f.category] += 1
            else:
                false_positives.append(f"{case.label}: {case.text[f.start : f.end][:40]!r}")

    print()
    print(f"{'category':22} {'secrets':>7} {'recall':>7} {'reported':>8} {'precision':>9}")
    for category in CATEGORIES:
        recall = detected[category] / total[category] if total[category] else float("nan")
        precision = correct[category] / reported[category] if reported[category] else 1.0
        print(
            f"{category:22} {total[category]:7d} {recall:7.3f} {reported[category]:8d}"
            f" {precision:9.3f}"
        )
    overall = sum(correct.values()) / max(1, sum(reported.values()))
    print(
        f"{'overall':22} {sum(total.values()):7d} "
        f"{sum(detected.values()) / sum(total.values()):7.3f} {sum(reported.values()):8d}"
        f" {overall:9.3f}   ({len(NEAR_MISSES)} near-miss texts)"
    )

    assert not misses, "missed secrets:\n" + "\n".join(misses)
    for category in CATEGORIES:
        assert detected[category] == total[category], category
    assert overall >= 0.99, "false positives:\n" + "\n".join(false_positives)


@pytest.mark.parametrize("case", POSITIVES, ids=lambda c: c.label)
def test_only_the_secret_span_is_replaced(case: Case) -> None:
    expected = case.text
    for secret in sorted(case.secrets, key=lambda s: s.start, reverse=True):
        expected = expected[: secret.start] + placeholder(secret.category) + expected[secret.end :]
    result = Redactor().redact_text(case.text)
    assert result.text == expected
    assert result.counts == dict(Counter(s.category for s in case.secrets))


@pytest.mark.parametrize("case", NEAR_MISSES, ids=lambda c: c.label)
def test_near_misses_are_left_alone(case: Case) -> None:
    result = Redactor().redact_text(case.text)
    assert result.text == case.text
    assert result.counts == {}


def test_positives_that_are_json_stay_valid_json() -> None:
    redactor = Redactor()
    checked = 0
    for case in POSITIVES:
        try:
            before = json.loads(case.text)
        except ValueError:
            continue
        result = redactor.redact_json(case.text)
        after = json.loads(result.text)
        assert result.counts, case.label
        assert _same_shape(before, after), case.label
        checked += 1
    assert checked >= 10


def _same_shape(before: object, after: object) -> bool:
    """Equal, except strings that now hold a placeholder."""
    if isinstance(before, dict) and isinstance(after, dict):
        return before.keys() == after.keys() and all(
            _same_shape(before[k], after[k]) for k in before
        )
    if isinstance(before, list) and isinstance(after, list):
        return len(before) == len(after) and all(
            _same_shape(a, b) for a, b in zip(before, after, strict=True)
        )
    if isinstance(before, str) and isinstance(after, str) and before != after:
        return "[REDACTED:" in after
    return before == after


@pytest.mark.parametrize(
    ("alphabet", "n"),
    [("abcdef0123456789", 32), ("ABCDEF0123456789", 32), ("abcABC", 32), ("", 5), (ALNUM, 2)],
)
def test_mixed_refuses_what_it_cannot_produce(alphabet: str, n: int) -> None:
    # Without an upper, a lower and a digit (or with fewer than three
    # characters) its loop would never end.
    with pytest.raises(ValueError, match="mixed needs"):
        Gen(1).mixed(alphabet, n)


def test_mixed_has_an_upper_a_lower_and_a_digit() -> None:
    g = Gen(1)
    for _ in range(50):
        s = g.mixed("aB3", 3)
        assert sorted(s) == ["3", "B", "a"]
