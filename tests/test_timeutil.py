"""Timestamps: one stored form, whatever the transcript wrote."""

from __future__ import annotations

import pytest

from lossless.timeutil import normalize_ts


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("2026-01-05T10:00:00.000Z", "2026-01-05T10:00:00.000Z"),  # already canonical
        ("2026-01-31T23:59:59.999Z", "2026-01-31T23:59:59.999Z"),
        ("2024-02-29T12:00:00.000Z", "2024-02-29T12:00:00.000Z"),  # a leap day
        ("2026-01-05T10:00:00Z", "2026-01-05T10:00:00.000Z"),
        ("2026-01-05T12:00:00.123456+02:00", "2026-01-05T10:00:00.123Z"),
        ("2026-01-05T10:00:00", "2026-01-05T10:00:00.000Z"),  # naive means UTC
        (1767607200, "2026-01-05T10:00:00.000Z"),
        (1767607200000, "2026-01-05T10:00:00.000Z"),
        ("2026-02-30T10:00:00.000Z", None),  # looks canonical, is not a date
        ("2025-02-29T10:00:00.000Z", None),
        ("2026-13-05T10:00:00.000Z", None),
        ("yesterday", None),
        ("", None),
        (True, None),
        (None, None),
    ],
)
def test_normalize_ts(given: object, stored: str | None) -> None:
    assert normalize_ts(given) == stored
