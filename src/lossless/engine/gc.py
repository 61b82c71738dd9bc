"""``lcm gc``: give back the space of what the store can do without.

Two steps, both keeping every message and part byte-exact:

* rows written in full before text was stored once (migration 0010) are
  re-stored as references to their message's texts (``store_texts_once``;
  on SQLite also content hashes recorded as hex text, kept as their bytes,
  and raw lines packed with the store's dictionary, migration 0015);
* if asked, the raw transcript lines of messages older than N days are
  dropped: provenance (``lcm export``'s native lines, ``lcm verify``'s raw
  hashes) is then gone for them, their messages stay.

Then the backend's scrub physically frees the pages (SQLite ``VACUUM``,
PostgreSQL ``VACUUM FULL``), so the file shrinks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from lossless.store.contract import Store
from lossless.timeutil import format_ts


@dataclass(frozen=True, slots=True)
class GcReport:
    bytes_before: int
    bytes_after: int
    rows_stored_once: int
    raw_lines_dropped: int
    raw_cutoff: str | None
    dry_run: bool


def collect_garbage(
    store: Store, *, raw_older_than_days: float | None = None, dry_run: bool = False
) -> GcReport:
    """Shrink ``store`` (see the module docstring); with ``dry_run`` only count."""
    before = int(store.info().get("bytes_on_disk", 0))
    cutoff = None
    if raw_older_than_days is not None:
        cutoff = format_ts(datetime.now(UTC) - timedelta(days=raw_older_than_days))
    dropped = 0
    if cutoff is not None:
        dropped = store.messages.drop_native_records(created_before=cutoff, dry_run=dry_run)
    restored = 0
    if not dry_run:
        for conversation in store.conversations.list():
            restored += store.messages.store_texts_once(conversation.id)
        store.scrub()
    after = before if dry_run else int(store.info().get("bytes_on_disk", 0))
    return GcReport(before, after, restored, dropped, cutoff, dry_run)
