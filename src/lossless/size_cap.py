"""The store size cap (``storage.size_cap_mb``): warned about before it is reached.

Nothing is refused at the cap: history is never dropped behind the user's
back. From ``WARN_SHARE`` of the cap on, ``lcm status`` and ``lcm doctor``
say so and point at ``lcm gc``; a hook writes the warning to ``hooks.log``
once when the store crosses 90% and once more when it crosses the cap (a
marker file in the log folder remembers which), so the log is not flooded
by every turn. Hooks only look at an SQLite store's files (one ``stat``
each); a PostgreSQL store's size is the server's and is shown by
``lcm status`` and ``lcm doctor``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Final

WARN_SHARE: Final = 0.9
_MARKER: Final = "size-cap-warned"


def size_cap_warning(size_bytes: int, cap_mb: int) -> str | None:
    """The warning for a store of ``size_bytes`` under a cap of ``cap_mb`` (0: none)."""
    if cap_mb <= 0:
        return None
    cap = cap_mb * 1_000_000
    if size_bytes < WARN_SHARE * cap:
        return None
    reached = "the cap is reached" if size_bytes >= cap else "close to the cap"
    return (
        f"the store takes {size_bytes / 1e6:,.0f} MB, {100 * size_bytes / cap:.0f}% of "
        f"storage.size_cap_mb ({cap_mb:,} MB): {reached}; `lcm gc` gives space back "
        "(`--raw-older-than DAYS` also drops old raw transcript lines), or raise the cap"
    )


def sqlite_bytes(db_path: Path) -> int:
    """Bytes of an SQLite database with its write-ahead log."""
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += Path(f"{db_path}{suffix}").stat().st_size
    return total


def warn_once(db_path: Path, log_dir: Path, cap_mb: int) -> str | None:
    """The warning if the store crossed a threshold not warned about yet, else None.

    Thresholds: 90% of the cap, then the cap. Below 90% the marker is reset,
    so after ``lcm gc`` a store that grows again is warned about again.
    """
    if cap_mb <= 0:
        return None
    size = sqlite_bytes(db_path)
    cap = cap_mb * 1_000_000
    level = "100" if size >= cap else "90" if size >= WARN_SHARE * cap else ""
    marker = log_dir / _MARKER
    try:
        warned = marker.read_text(encoding="utf-8").strip()
    except OSError:
        warned = ""
    if level == warned or (level == "90" and warned == "100"):
        return None
    try:
        if level:
            log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            marker.write_text(level, encoding="utf-8")
        else:
            marker.unlink(missing_ok=True)
    except OSError:
        return None  # cannot remember it: better silent than a warning every turn
    return size_cap_warning(size, cap_mb) if level else None
