"""What the code before a migration wrote: for upgrade tests that build an old
store with today's code (its migrations cut back, its newer writes undone)."""

from __future__ import annotations

import pytest


def plain_raw_packing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Raw lines packed as before SQLite's 0015: zlib from ``PLAIN_MIN_CHARS``
    characters on, no trained dictionary."""
    from lossless.store.sqlite import history as sqlite_history

    monkeypatch.setattr(
        sqlite_history.Messages,
        "_packer",
        lambda self, _lines: lambda raw: self.s.raw_packing.pack(raw, None, None),
    )
