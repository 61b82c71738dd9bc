"""Paged, focused expansion on both backends (SQLite file, real embedded PostgreSQL).

One long generated session is compacted into a DAG several levels deep (with
messages larger than a page, and non-ASCII text); then, from any summary, at
any page size and depth: following cursors yields every node of the
expansion once and in order, every covered message whole (split ones
concatenate byte for byte), each page within its cap; ``around`` opens the
page at the message and ``before_cursor`` leads exactly up to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.engine.compaction_helpers import (
    Clock,
    CountingSummarizer,
    agent_turn,
    ingest,
    make_config,
    new_conversation,
    text_message,
)
from tests.pg_fixtures import own_pg_server  # noqa: F401  (fixture)
from tests.store.postgres_server import EmbeddedPostgres

from lossless.engine.compaction import Compactor
from lossless.engine.expansion import Expansion, expand
from lossless.errors import InputError, NotFoundError
from lossless.models import Summary
from lossless.store.contract import Store
from lossless.store.sqlite.store import SQLiteStore

SETTINGS = {
    "fresh_tail_count": 4,
    "leaf_chunk_tokens": 500,
    "leaf_target_tokens": 40,
    "condensed_target_tokens": 50,
    "leaf_min_fanout": 3,
    "condensed_min_fanout": 2,
}


def build(store: Store, home: Path) -> int:
    config = make_config(home, **SETTINGS)
    cid = new_conversation(store)
    clock = Clock()
    for turn in range(30):
        ingest(store, cid, agent_turn(clock, turn, 2, words=40))
        if turn % 7 == 3:
            # Larger than small pages, multi-byte characters to split.
            text = f"Big output {turn}: " + "é漢字 naïve café → done; " * 120
            ingest(store, cid, [text_message("user", text, clock.tick())])
    Compactor(store, config, CountingSummarizer()).sweep(cid)
    return cid


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def dag(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Store, int]]:
    home = tmp_path_factory.mktemp("expansion")
    if request.param == "sqlite":
        store: Store = SQLiteStore(home / "lcm.db")
    else:
        from lossless.store.postgres import PostgresStore

        server: EmbeddedPostgres = request.getfixturevalue("own_pg_server")
        store = PostgresStore(server.create_database())
    try:
        yield store, build(store, home)
    finally:
        store.close()


def covered(store: Store, summary_id: str) -> list[int]:
    children = store.summaries.source_summary_ids(summary_id)
    if children:
        return [m for c in children for m in covered(store, c)]
    return store.summaries.source_message_ids(summary_id)


def under(store: Store, summary: Summary, depth: int | None, level: int = 1) -> list[str]:
    """Every node id of the expansion in reading order (the oracle, walked apart)."""
    if depth is not None and level > depth:
        return []
    children = store.summaries.source_summary_ids(summary.id)
    if summary.kind == "condensed":
        out: list[str] = []
        for child_id in children:
            child = store.summaries.get(child_id)
            assert child is not None
            out += [child_id, *under(store, child, depth, level + 1)]
        return out
    return [str(m) for m in store.summaries.source_message_ids(summary.id)]


def follow(store: Store, first: Expansion, cap: int) -> list[Expansion]:
    pages = [first]
    while pages[-1].cursor is not None:
        assert len(pages) < 10_000, "cursors never end"
        pages.append(expand(store, first.root.id, token_cap=cap, cursor=pages[-1].cursor))
    return pages


def joined(store: Store, pages: list[Expansion]) -> list[tuple[str, str]]:
    """(id, content) per node, split nodes put back together."""
    out: list[tuple[str, str]] = []
    pending = False
    for page in pages:
        for node in page.nodes:
            if pending:
                assert out[-1][0] == node.id and node.offset == len(out[-1][1])
                out[-1] = (node.id, out[-1][1] + node.content)
            else:
                assert node.offset == 0
                out.append((node.id, node.content))
            pending = node.clipped
    assert not pending
    return out


def full_content(store: Store, node_id: str) -> str:
    if node_id.startswith("sum_"):
        summary = store.summaries.get(node_id)
        assert summary is not None
        return summary.content
    message = store.messages.get(int(node_id))
    assert message is not None
    return message.content


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    pick=st.integers(0, 10_000),
    cap=st.sampled_from([3, 40, 150, 600, 4000]),
    depth=st.sampled_from([None, 1, 2, 3]),
)
def test_cursors_yield_every_node_once_in_order(
    dag: tuple[Store, int], pick: int, cap: int, depth: int | None
) -> None:
    store, cid = dag
    summaries = store.summaries.list(cid)
    assert max(s.depth for s in summaries) >= 2, "the DAG should be several levels deep"
    root = summaries[pick % len(summaries)]
    if root.depth > 0:
        # Tiny pages over a whole deep summary are thousands of calls: the
        # splitting itself is exercised on leaves.
        cap = max(cap, 40)
    first = expand(store, root.id, token_cap=cap, depth=depth)
    pages = follow(store, first, cap)
    for page in pages:
        assert page.token_count <= cap
        assert page.nodes, "every page makes progress"
        assert all(depth is None or n.level <= depth for n in page.nodes)
        assert page.truncated == (page.cursor is not None)
    nodes = joined(store, pages)
    assert [i for i, _ in nodes] == under(store, root, depth)
    for node_id, content in nodes:
        assert content == full_content(store, node_id)
    if depth is None:
        assert [int(i) for i, _ in nodes if not i.startswith("sum_")] == covered(store, root.id)
    assert first.levels == root.depth + 1
    assert first.total_nodes == len(nodes)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(pick=st.integers(0, 10_000), cap=st.sampled_from([150, 4000]))
def test_around_opens_at_the_message_and_before_leads_up_to_it(
    dag: tuple[Store, int], pick: int, cap: int
) -> None:
    store, cid = dag
    # From a message to the summary at the top of the context that covers it,
    # as grep -> covering_summary_id -> its ancestors would.
    cover = store.summaries.covering([m.id for m in store.messages.list(cid)])
    message_id = sorted(cover)[pick % len(cover)]
    top = cover[message_id]
    while (parent := store.summaries.condensed_into(top)) is not None:
        top = parent
    page = expand(store, top, token_cap=cap, around=message_id)
    assert page.nodes[0].id == str(message_id) and page.nodes[0].offset == 0
    assert page.around == message_id and page.token_count <= cap
    after = joined(store, follow(store, page, cap))
    order = under(store, store.summaries.get(top) or pytest.fail("no summary"), None)
    at = order.index(str(message_id))
    assert [i for i, _ in after] == order[at:]
    if at == 0:
        assert page.before_cursor is None
        return
    assert page.before_cursor is not None
    before = follow(store, expand(store, top, token_cap=cap, cursor=page.before_cursor), cap)
    ids = [i for i, _ in joined(store, before)]
    assert ids and ids == order[at - len(ids) : at]


def test_depth_is_honoured_and_reported(dag: tuple[Store, int]) -> None:
    store, cid = dag
    deepest = max(store.summaries.list(cid), key=lambda s: s.depth)
    shallow = expand(store, deepest.id, depth=1, token_cap=100_000)
    deep = expand(store, deepest.id, depth=None, token_cap=100_000)
    assert {n.level for n in shallow.nodes} == {1}
    assert all(n.kind == "summary" for n in shallow.nodes)
    assert max(n.level for n in deep.nodes) == deepest.depth + 1
    assert deep.messages_total == len(covered(store, deepest.id)) and shallow.messages_total == 0
    assert deep.levels == deepest.depth + 1


def test_bad_cursors_and_foreign_messages_are_clear_errors(dag: tuple[Store, int]) -> None:
    store, cid = dag
    summaries = store.summaries.list(cid, depth=0)
    a, b = summaries[0], summaries[1]
    page = expand(store, a.id, token_cap=5)
    assert page.cursor
    with pytest.raises(InputError, match="belongs to"):
        expand(store, b.id, cursor=page.cursor)
    with pytest.raises(InputError, match="not an expansion cursor"):
        expand(store, a.id, cursor="garbage")
    with pytest.raises(InputError, match="past the end"):
        expand(store, a.id, cursor=f"{a.id}:1:m:99999:0:")
    foreign = store.summaries.source_message_ids(b.id)[0]
    with pytest.raises(NotFoundError, match=f"not covered by {a.id}.*under {b.id}"):
        expand(store, a.id, around=foreign)
    with pytest.raises(InputError, match="either a cursor or around"):
        expand(store, a.id, cursor=page.cursor, around=foreign)
