"""Migration 0012 on a store written before it: the context totals are backfilled.

A store at migration 0011 (no ``context_totals``) gets conversations with
appended, compacted and rewound contexts; opened by today's code it must
report, for each conversation, the counts a recount of its items gives, and
keep them through the writes that follow. On both backends (a SQLite file,
a real embedded PostgreSQL).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.store import old_code
from tests.store.conformance import msg, recount
from tests.store.old_code import OpenNew, OpenOld

from lossless.models import NewSummary

BEFORE = 11


@pytest.fixture(params=old_code.BACKENDS)
def openers(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[OpenOld, OpenNew]:
    """(open the store as the code before 0012 would, open it as today's code)."""
    return old_code.openers(request, tmp_path, BEFORE)


def _summary(cid: int, text: str) -> NewSummary:
    return NewSummary(cid, "leaf", 0, text, 7, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")


def test_totals_are_backfilled_and_kept(
    openers: tuple[OpenOld, OpenNew],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    open_old, open_new = openers
    old = open_old(monkeypatch)
    convs: list[int] = []
    try:
        assert max(m.version for m in old.migrations()) == BEFORE
        for n, shape in enumerate(("raw", "compacted", "rewound", "emptied")):
            cid = old.conversations.get_or_create(
                project="p", session_id=f"s{n}", client="generic"
            ).id
            convs.append(cid)
            ms = old.messages.append(
                cid, [msg(f"{shape} message {i} " + "x" * i, f"{shape}{i}") for i in range(12)]
            ).inserted
            old.context.append_messages(cid, ms)
            if shape == "compacted":
                leaf = old.summaries.create(_summary(cid, "s"), message_ids=[m.id for m in ms[:5]])
                items = old.context.list(cid)
                old.context.replace_range(cid, items[0].ordinal, items[4].ordinal, leaf)
            elif shape == "rewound":
                old.context.remove_messages(cid, [m.id for m in ms[3:8]])
            elif shape == "emptied":
                old.context.restore(cid, [])
        expected = {cid: recount(old.context.list(cid)) for cid in convs}
    finally:
        old.close()
    monkeypatch.undo()

    store = open_new()
    try:
        assert max(m.version for m in store.migrations()) > BEFORE
        for cid in convs:
            assert store.context.stats(cid) == expected[cid], cid
        assert expected[convs[1]].summaries == 1 and expected[convs[3]].items == 0
        # The triggers count what comes after the upgrade.
        cid = convs[1]
        more = store.messages.append(cid, [msg("after the upgrade", "late")]).inserted
        store.context.append_messages(cid, more)
        store.context.remove_messages(cid, [more[0].id])
        store.context.append_messages(convs[3], store.messages.list(convs[3])[:2])
        for cid in convs:
            assert store.context.stats(cid) == recount(store.context.list(cid)), cid
        assert store.stats().context_items == sum(len(store.context.list(c)) for c in convs)
    finally:
        store.close()
