"""Timestamps are stored as ISO 8601 UTC strings with millisecond precision.

One fixed format means timestamps sort and compare as plain strings on every
backend (``since`` filters, time ranges of summaries).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

# The stored form, for dates every month has (29-31 take the checked path).
_CANONICAL = re.compile(
    r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z"
)


def utc_now_iso() -> str:
    return format_ts(datetime.now(UTC))


def format_ts(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def normalize_ts(value: object) -> str | None:
    """Return ``value`` as a canonical UTC timestamp, or None if it is not one.

    Accepts ISO 8601 strings (with ``Z`` or an offset; naive means UTC) and
    Unix epoch seconds or milliseconds.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return format_ts(datetime.fromtimestamp(seconds, UTC))
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value:
        return None
    if _CANONICAL.fullmatch(value):
        # Most transcripts already write this form: skip the datetime round trip.
        return value
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        return format_ts(datetime.fromisoformat(text))
    except ValueError:
        return None


def parse_since(value: str) -> str:
    """Parse a ``--since`` value: an ISO date/time or a relative ``30m``/``12h``/``7d``."""
    from datetime import timedelta

    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    text = value.strip()
    if len(text) >= 2 and text[-1] in units and text[:-1].isdigit():
        delta = timedelta(seconds=int(text[:-1]) * units[text[-1]])
        return format_ts(datetime.now(UTC) - delta)
    normalized = normalize_ts(text)
    if normalized is None:
        raise ValueError(
            f"cannot parse {value!r} as a time: use ISO 8601 (2026-02-12 or "
            "2026-02-12T14:00:00Z) or a relative age like 30m, 12h, 7d"
        )
    return normalized
