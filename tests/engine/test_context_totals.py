"""The kept context and history totals through the engine's own writes, on both backends.

``context.stats`` (what assembly reports as dropped items, and whether any
summary exists) is read from counts the context writes keep (migration 0012)
instead of a scan of every context row. Here every engine path that writes a
context runs for real: a transcript imported and grown, a rewind that takes
messages out, compaction sweeps, ``lcm sensitive purge``, ``lcm gc``, and an
export imported into another store. After each, the counts equal a recount
of the listed items, and the assembled context's figures agree with them;
the history's totals (migration 0014: messages, parts, raw lines, summaries,
large files and their tokens) equal a recount of the stored rows, through
``lcm gc`` dropping raw lines too.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.engine.test_branches import Transcript
from tests.pg_fixtures import own_pg_server  # noqa: F401  (fixture)
from tests.store.conformance import HISTORY_COUNTS, recount, recount_history
from tests.store.postgres_server import EmbeddedPostgres

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.engine.gc import collect_garbage
from lossless.engine.portable import export_store, import_export
from lossless.engine.purge import purge
from lossless.store.sqlite import SQLiteStore

# Small enough that a few turns compact into leaves and a condensed summary.
SMALL = {
    "fresh_tail_count": 6,
    "leaf_chunk_tokens": 300,
    "leaf_target_tokens": 60,
    "leaf_min_fanout": 2,
}


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    config = load_config(tmp_path / "home", env={}, overrides=SMALL)
    if request.param == "sqlite":
        with Engine.open(config=config) as eng:
            yield eng
        return
    from lossless.store.postgres import PostgresStore

    server: EmbeddedPostgres = request.getfixturevalue("own_pg_server")
    url = server.create_database()
    try:
        with Engine.open(config=config, store=PostgresStore(url)) as eng:
            yield eng
    finally:
        server.drop_database(url)


def _check(engine: Engine, step: str) -> None:
    conversations = engine.store.conversations.list()
    assert conversations, step
    for conversation in conversations:
        items = engine.store.context.list(conversation.id)
        stats = engine.store.context.stats(conversation.id)
        assert stats == recount(items), (step, conversation.id)
        assert engine.store.context.token_total(conversation.id) == stats.tokens, step
        # Assembly reads only the newest items and takes the older rest from
        # the totals: what it keeps and what it reports dropped add up to them.
        tokens = {i.summary_id or f"msg:{i.message_id}": i.token_count for i in items}
        for budget in (60, 600, 100_000):
            built = engine.assemble(conversation.id, budget)
            dropped = built.breakdown
            assert dropped.dropped_items + len(built.included) == stats.items, (step, budget)
            kept = sum(tokens[name] for name in built.included)
            assert dropped.dropped_tokens + kept == stats.tokens, (step, budget)
    totals = engine.store.stats()
    assert totals.context_items == sum(
        engine.store.context.stats(c.id).items for c in conversations
    ), step
    # The history's totals (migration 0014: what `lcm status` shows) equal a
    # recount of its rows, store-wide and per conversation.
    expected = {c.id: recount_history(engine.store, c.id) for c in conversations}
    for name in HISTORY_COUNTS:
        assert getattr(totals, name) == sum(e[name] for e in expected.values()), (step, name)
    counts = engine.store.messages.count_by_conversation(list(expected))
    assert counts == {cid: e["messages"] for cid, e in expected.items()}, step


def test_every_engine_context_write_keeps_the_totals(engine: Engine, tmp_path: Path) -> None:
    t = Transcript(tmp_path / "branchy-session.jsonl")
    t.prompt("find the alpha module")
    kept = t.tool_turn("alpha")
    for word in ("beta", "delta", "epsilon", "zeta", "theta"):
        t.prompt(f"now look at {word} " + "and more words " * 40)
        t.tool_turn(word)
    first = engine.import_file(t.write(), final=True)
    cid = first.conversation_id
    assert cid is not None
    _check(engine, "import")

    # A rewind: the user goes back to just after the first turn.
    t.prompt("instead, document gamma", parent=kept)
    t.tool_turn("gamma")
    again = engine.import_file(t.write(), final=True)
    assert again.rewinds
    _check(engine, "rewind")

    for word in ("iota", "kappa", "lambda", "mu"):
        t.prompt(f"then {word} " + "with a long prompt " * 60)
        t.tool_turn(word)
    engine.import_file(t.write(), final=True)
    _check(engine, "growth")

    result = engine.compact(cid)
    assert result.error is None
    assert engine.store.context.stats(cid).summaries >= 1
    _check(engine, "compaction")

    purge(engine.store, engine.redactors, engine.config)
    _check(engine, "purge")

    collect_garbage(engine.store, raw_older_than_days=0)
    _check(engine, "gc")

    out = io.StringIO()
    export_store(engine.store, engine.config, out)
    config = load_config(tmp_path / "copy", env={}, overrides=SMALL)
    with Engine.open(config=config, store=SQLiteStore(tmp_path / "copy.db")) as copy:
        import_export(copy.store, copy.config, io.StringIO(out.getvalue()), source="x.jsonl")
        _check(copy, "import of an export")
        (copied,) = copy.store.conversations.list()
        assert copy.store.context.stats(copied.id) == engine.store.context.stats(cid)
