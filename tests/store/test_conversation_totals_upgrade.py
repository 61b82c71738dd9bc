"""Migration 0014 on a store written before it: the conversation totals are backfilled.

A store at migration 0013 (no ``conversation_totals``) gets conversations
holding messages with parts and raw lines, raw lines of no message,
summaries, large files, and one with nothing at all; opened by today's code
it must report, for each conversation, the counts a recount of its rows
gives, and keep them through the writes that follow (an append, a summary,
raw lines dropped by ``lcm gc``). On both backends (a SQLite file, a real
embedded PostgreSQL).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.store import old_code
from tests.store.conformance import HISTORY_COUNTS, msg, recount_history
from tests.store.old_code import OpenNew, OpenOld

from lossless.models import NewLargeFile, NewNativeRecord, NewPart, NewSummary
from lossless.store.contract import Store

BEFORE = 13


@pytest.fixture(params=old_code.BACKENDS)
def openers(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[OpenOld, OpenNew]:
    """(open the store as the code before 0014 would, open it as today's code)."""
    return old_code.openers(request, tmp_path, BEFORE)


def _summary(cid: int, text: str) -> NewSummary:
    return NewSummary(cid, "leaf", 0, text, 7, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")


def _kept(store: Store, project: str) -> dict[str, int]:
    totals = store.stats(project=project)
    return {k: getattr(totals, k) for k in HISTORY_COUNTS}


def test_totals_are_backfilled_and_kept(
    openers: tuple[OpenOld, OpenNew],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    open_old, open_new = openers
    old = open_old(monkeypatch)
    convs: dict[str, int] = {}
    try:
        assert max(m.version for m in old.migrations()) == BEFORE
        for shape in ("history", "summarized", "metadata only", "empty"):
            cid = old.conversations.get_or_create(
                project=shape, session_id=shape, client="generic"
            ).id
            convs[shape] = cid
            if shape == "empty":
                continue
            if shape == "metadata only":
                old.messages.add_native_records(
                    cid, [NewNativeRecord(f"meta-{i}", "progress", "{}") for i in range(3)]
                )
                continue
            ms = old.messages.append(
                cid,
                [
                    msg(
                        f"{shape} message {i} " + "x" * i,
                        f"{shape}{i}",
                        at=f"2026-01-{1 + i:02d}T00:00:00.000Z",
                        parts=tuple(NewPart("text", f"part {j}") for j in range(i % 3)),
                        records=(NewNativeRecord(f"{shape}-line-{i}", "user", "{}"),),
                    )
                    for i in range(12)
                ],
            ).inserted
            if shape == "summarized":
                old.summaries.create(_summary(cid, "s"), message_ids=[m.id for m in ms[:5]])
                old.files.create(
                    NewLargeFile(cid, "/x/f", 100, 25, "ab" * 32, "text/plain", "prose", ms[0].id)
                )
        expected = {shape: recount_history(old, cid) for shape, cid in convs.items()}
    finally:
        old.close()
    monkeypatch.undo()

    store = open_new()
    try:
        assert max(m.version for m in store.migrations()) > BEFORE
        for shape in convs:
            assert _kept(store, shape) == expected[shape], shape
        assert expected["summarized"]["large_files"] == 1
        assert expected["metadata only"]["native_records"] == 3
        assert expected["history"]["parts"] > 0
        assert store.stats().messages == 24
        # The triggers count what comes after the upgrade.
        cid = convs["summarized"]
        store.messages.append(
            cid, [msg("after the upgrade", "late", parts=(NewPart("text", "p"),))]
        )
        late = store.messages.list(cid)[-1]
        store.summaries.create(_summary(cid, "later"), message_ids=[late.id])
        store.messages.append(convs["empty"], [msg("first words", "first")])
        assert store.messages.drop_native_records(created_before="2026-01-06T00:00:00.000Z") == 10
        for shape, cid in convs.items():
            assert _kept(store, shape) == recount_history(store, cid), shape
    finally:
        store.close()
