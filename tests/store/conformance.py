"""The backend-neutral storage conformance suite.

Every backend runs this class unchanged: subclass ``StoreConformance`` and
provide a ``store_factory`` fixture returning a callable that opens a *new*
store connected to the *same* database each time it is called (so tests can
check visibility across connections, reopen after close, and so on).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.cpu_clock import spent_here

from lossless.errors import (
    InputError,
    LeaseLostError,
    NestedTransactionError,
    StoreClosedError,
    StoreError,
)
from lossless.models import (
    ContextItem,
    ContextStats,
    NewLargeFile,
    NewMessage,
    NewNativeRecord,
    NewPart,
    NewSummary,
)
from lossless.store.contract import OVERVIEW_PROMPT_CHARS, GrepQuery, Repositories, Store

StoreFactory = Callable[[], Store]

# Every example of the context-totals property gets conversations of its own.
_EXAMPLES = itertools.count()

# A context write, drawn by hypothesis: (kind, conversation, a, b); a and b
# pick how many messages, which range or which items, per kind.
_CONTEXT_WRITE = st.tuples(
    st.sampled_from(
        ["append", "append", "replace", "condense", "remove", "restore", "rewrite", "rollback"]
    ),
    st.integers(0, 1),
    st.integers(0, 40),
    st.integers(0, 40),
)


def recount(items: list[ContextItem]) -> ContextStats:
    """What the kept totals must say: counted from the listed items."""
    return ContextStats(
        items=len(items),
        tokens=sum(i.token_count for i in items),
        summaries=sum(1 for i in items if i.item_type == "summary"),
        message_tokens=sum(i.token_count for i in items if i.item_type == "message"),
    )


# A write to stored history, drawn by hypothesis: (kind, conversation, a, b).
_HISTORY_WRITE = st.tuples(
    st.sampled_from(
        [
            "append",
            "append",
            "records",
            "summary",
            "restore summary",
            "file",
            "restore file",
            "rewrite",
            "gc",
            "texts once",
            "rollback",
        ]
    ),
    st.integers(0, 1),
    st.integers(0, 40),
    st.integers(0, 40),
)

# StoreStats fields kept per conversation by migration 0014.
HISTORY_COUNTS = (
    "messages",
    "message_tokens",
    "parts",
    "native_records",
    "summaries",
    "summary_tokens",
    "large_files",
)


def recount_history(store: Store, conversation_id: int) -> dict[str, int]:
    """What the kept conversation totals must say: counted from the listed rows."""
    messages = store.messages.list(conversation_id)
    parts = store.messages.parts([m.id for m in messages])
    summaries = store.summaries.list(conversation_id)
    return {
        "messages": len(messages),
        "message_tokens": sum(m.token_count for m in messages),
        "parts": sum(len(p) for p in parts.values()),
        "native_records": len(store.messages.native_records(conversation_id)),
        "summaries": len(summaries),
        "summary_tokens": sum(s.token_count for s in summaries),
        "large_files": len(store.files.list(conversation_id)),
    }


def msg(
    content: str,
    key: str | None = None,
    *,
    role: str = "user",
    at: str | None = None,
    parts: tuple[NewPart, ...] = (),
    records: tuple[NewNativeRecord, ...] = (),
) -> NewMessage:
    return NewMessage(
        role=role,  # type: ignore[arg-type]
        content=content,
        ingest_key=key,
        created_at=at,
        parts=parts,
        native_records=records,
    )


class StoreConformance:
    @pytest.fixture
    def store(self, store_factory: StoreFactory) -> Iterator[Store]:
        store = store_factory()
        yield store
        store.close()

    def conv(self, store: Store, session: str = "s1", project: str = "p1") -> int:
        return store.conversations.get_or_create(
            project=project, session_id=session, client="generic"
        ).id

    # -- coordination --------------------------------------------------

    def test_coordination_matches_the_capability(self, store: Store) -> None:
        shared = store.capabilities.distributed_coordination
        assert (store.coordination is not None) == shared
        with store.transaction() as tx:
            assert (tx.coordination is not None) == shared

    def test_coordination_jobs_and_receipts_commit_with_the_transaction(self, store: Store) -> None:
        if store.coordination is None:
            pytest.skip(f"{store.backend} has no coordination (one machine)")
        cid = self.conv(store)
        with pytest.raises(RuntimeError), store.transaction() as tx:
            assert tx.coordination is not None
            assert tx.coordination.receipts.record("o", "e1", "capture", "2026-01-01T00:00:00Z")
            tx.coordination.jobs.enqueue("conformance", cid)
            raise RuntimeError("roll back")
        assert not store.coordination.receipts.exists("o", "e1")
        assert store.coordination.jobs.counts()["ready"] == 0
        with store.transaction() as tx:
            assert tx.coordination is not None
            assert tx.coordination.receipts.record("o", "e1", "capture", "2026-01-01T00:00:00Z")
        assert store.coordination.receipts.exists("o", "e1")
        assert not store.coordination.receipts.record("o", "e1", "capture", "2026-01-01T00:00:00Z")
        assert store.coordination.receipts.count("o") == 1

    def test_coordination_refuses_nul(self, store: Store) -> None:
        if store.coordination is None:
            pytest.skip(f"{store.backend} has no coordination (one machine)")
        with pytest.raises(InputError):
            store.coordination.jobs.enqueue("bad\x00kind")
        with pytest.raises(InputError):
            store.coordination.receipts.record("o", "e\x00", "capture", "2026-01-01T00:00:00Z")

    # -- conversations -------------------------------------------------

    def test_get_or_create_is_idempotent(self, store: Store) -> None:
        a = store.conversations.get_or_create(project="p", session_id="s", client="codex")
        b = store.conversations.get_or_create(project="p", session_id="s", client="codex")
        assert a == b
        assert len(store.conversations.list()) == 1

    def test_conversations_isolated_by_project(self, store: Store) -> None:
        a = self.conv(store, "same", "alpha")
        b = self.conv(store, "same", "beta")
        assert a != b
        assert [c.id for c in store.conversations.list(project="alpha")] == [a]
        assert store.conversations.find_by_session("same", project="beta").id == b  # type: ignore[union-attr]

    def test_conversation_list_order_and_limit(self, store: Store) -> None:
        ids = [
            store.conversations.get_or_create(
                project="p", session_id=f"s{i}", client="generic", created_at=at
            ).id
            for i, at in enumerate(
                ["2026-01-03T00:00:00.000Z", "2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z"]
            )
        ]
        assert [c.id for c in store.conversations.list()] == [ids[1], ids[2], ids[0]]
        assert len(store.conversations.list(limit=2)) == 2
        assert store.conversations.list(limit=0) == []

    def test_find_by_session_and_metadata(self, store: Store) -> None:
        cid = self.conv(store, "sess-x")
        store.conversations.update_metadata(cid, {"a": 1})
        store.conversations.update_metadata(cid, {"b": [1, 2]})
        found = store.conversations.find_by_session("sess-x")
        assert found is not None and found.metadata == {"a": 1, "b": [1, 2]}
        assert store.conversations.find_by_session("missing") is None
        assert store.conversations.get(999_999) is None

    # -- messages ------------------------------------------------------

    def test_append_allocates_contiguous_seq(self, store: Store) -> None:
        cid = self.conv(store)
        first = store.messages.append(cid, [msg("a", "k1"), msg("b", "k2")])
        second = store.messages.append(cid, [msg("c", "k3")])
        assert [m.seq for m in first.inserted + second.inserted] == [0, 1, 2]
        assert [m.content for m in store.messages.list(cid)] == ["a", "b", "c"]

    def test_append_is_idempotent_by_ingest_key(self, store: Store) -> None:
        cid = self.conv(store)
        store.messages.append(cid, [msg("a", "k1"), msg("b", "k2")])
        again = store.messages.append(cid, [msg("a", "k1"), msg("b", "k2"), msg("c", "k3")])
        assert again.skipped == 2
        assert [m.content for m in again.inserted] == ["c"]
        assert store.messages.count(cid) == 3

    def test_a_batch_with_repeats_keeps_each_first_and_its_parts_and_lines(
        self, store: Store
    ) -> None:
        # The batch is written with one statement per table: a message skipped
        # in its middle must not shift the parts or lines of those after it.
        cid = self.conv(store)
        store.messages.append(cid, [msg("old", "k0")])

        def with_lines(text: str, key: str | None) -> NewMessage:
            line = NewNativeRecord(f"n-{text}", "message", f'{{"text": "{text}"}}', "/t.jsonl")
            return NewMessage(
                role="user",
                content=text,
                ingest_key=key,
                parts=(NewPart(kind="text", text=f"part of {text}"),),
                native_records=() if key is None else (line,),
            )

        batch = [
            with_lines("a", "k1"),
            with_lines("stored before", "k0"),
            with_lines("b", None),
            with_lines("a again", "k1"),
            with_lines("c", "k2"),
            with_lines("d", None),
        ]
        result = store.messages.append(cid, batch)
        assert result.skipped == 2
        assert [m.content for m in result.inserted] == ["a", "b", "c", "d"]
        assert [m.seq for m in result.inserted] == [1, 2, 3, 4]
        assert len({m.id for m in result.inserted}) == 4
        listed = store.messages.list(cid)
        assert [(m.id, m.content) for m in listed[1:]] == [
            (m.id, m.content) for m in result.inserted
        ]
        parts = store.messages.parts([m.id for m in result.inserted])
        for m in result.inserted:
            assert [p.text for p in parts[m.id]] == [f"part of {m.content}"]
        lines = {r.message_id: r.raw for r in store.messages.native_records(cid)}
        for m in result.inserted:
            if m.ingest_key is not None:
                assert lines[m.id] == f'{{"text": "{m.content}"}}'

    def test_content_round_trips_byte_exact(self, store: Store) -> None:
        cid = self.conv(store)
        samples = [
            "plain",
            "tabs\tand\r\nCRLF\rCR",
            "unicode: héllo wörld 日本語 🚀 \u200b zero-width",
            "  leading and trailing spaces  \n\n",
            "x" * 200_000,
            '{"json": "looking", "escape": "\\u0041"}',
            "",
        ]
        result = store.messages.append(cid, [msg(s, f"k{i}") for i, s in enumerate(samples)])
        for inserted, original in zip(result.inserted, samples, strict=True):
            fetched = store.messages.get(inserted.id)
            assert fetched is not None
            assert fetched.content == original
            assert fetched.content.encode("utf-8") == original.encode("utf-8")

    def test_parts_keep_order_and_metadata(self, store: Store) -> None:
        cid = self.conv(store)
        parts = (
            NewPart("reasoning", "thinking...", metadata={"signature": "abc"}),
            NewPart("text", "hello"),
            NewPart("tool_use", '{"cmd": "ls"}', tool_name="Bash", tool_call_id="t1"),
            NewPart("image", None, metadata={"media_type": "image/png", "data": "iVBORw0KGgo="}),
        )
        (m,) = store.messages.append(
            cid, [msg("hello", "k", role="assistant", parts=parts)]
        ).inserted
        got = store.messages.parts([m.id])[m.id]
        assert [
            (p.ordinal, p.kind, p.text, p.tool_name, p.tool_call_id, p.metadata) for p in got
        ] == [
            (i, p.kind, p.text, p.tool_name, p.tool_call_id, p.metadata)
            for i, p in enumerate(parts)
        ]
        assert store.messages.parts([]) == {}

    def test_nul_in_any_text_argument_is_an_input_error(self, store: Store) -> None:
        # The same fields are checked on every backend (lossless.store.inputs),
        # lookups included: a backend must not answer "not found" on one
        # backend and fail with a driver error on another.
        cid = self.conv(store)
        bad = "x\x00y"
        calls: list[Callable[[], object]] = [
            lambda: store.conversations.get_or_create(project="p", session_id="s", client=bad),
            lambda: store.conversations.find_by_session(bad),
            lambda: store.conversations.list(project=bad),
            lambda: store.messages.has_native_keys(cid, [bad]),
            lambda: store.messages.append(cid, [msg("ok", "k1", at=bad)]),
            lambda: store.summaries.get(bad),
            lambda: store.summaries.source_message_ids(bad),
            lambda: store.summaries.condensed_into(bad),
            lambda: store.files.get(bad),
            lambda: store.files.paths_in_use([bad]),
            lambda: store.quarantine.list(source_path=bad),
            lambda: store.cursors.get(bad),
            lambda: store.leases.acquire(cid, bad, 30),
            lambda: store.memory.get(bad),
            lambda: store.memory.list(project=bad),
            lambda: store.search.grep(GrepQuery("word", project=bad)),
        ]
        for call in calls:
            with pytest.raises(InputError, match="U\\+0000"):
                call()
        assert store.messages.count(cid) == 0

    def test_nul_is_refused_and_nothing_is_written(self, store: Store) -> None:
        cid = self.conv(store)
        with pytest.raises(InputError, match="U\\+0000"):
            store.messages.append(cid, [msg("fine", "k1"), msg("bad\x00byte", "k2")])
        assert store.messages.count(cid) == 0
        with pytest.raises(InputError):
            store.messages.append(cid, [msg("x", "k3", parts=(NewPart("text", "a\x00"),))])
        assert store.messages.count(cid) == 0

    def test_list_pagination_semantics(self, store: Store) -> None:
        cid = self.conv(store)
        store.messages.append(cid, [msg(str(i), f"k{i}") for i in range(5)])
        assert [m.seq for m in store.messages.list(cid, after_seq=1)] == [2, 3, 4]
        assert [m.seq for m in store.messages.list(cid, after_seq=1, limit=2)] == [2, 3]
        assert store.messages.list(cid, limit=0) == []
        assert len(store.messages.list(cid, limit=None)) == 5
        assert [m.seq for m in store.messages.iter_all(cid, batch=2)] == [0, 1, 2, 3, 4]
        last = store.messages.last(cid)
        assert last is not None and last.seq == 4

    def test_native_records_are_kept_once(self, store: Store) -> None:
        cid = self.conv(store)
        rec = NewNativeRecord("uuid-1", "assistant", '{"raw": true}', "/t.jsonl", 3, 120)
        (m,) = store.messages.append(cid, [msg("a", "uuid-1", records=(rec,))]).inserted
        extra = [
            NewNativeRecord("p-1", "progress", '{"p": 1}'),
            NewNativeRecord("p-2", "progress", "{}"),
        ]
        assert store.messages.add_native_records(cid, extra) == 2
        assert store.messages.add_native_records(cid, extra) == 0
        records = store.messages.native_records(cid)
        assert [r.native_key for r in records] == ["uuid-1", "p-1", "p-2"]
        assert records[0].message_id == m.id and records[0].raw == '{"raw": true}'
        assert records[0].line_no == 3 and records[0].byte_offset == 120
        assert store.messages.has_native_keys(cid, ["p-1", "nope", "uuid-1"]) == {"p-1", "uuid-1"}
        assert [r.native_key for r in store.messages.native_records(cid, message_id=m.id)] == [
            "uuid-1"
        ]

    def test_conversations_are_isolated(self, store: Store) -> None:
        a, b = self.conv(store, "a"), self.conv(store, "b")
        store.messages.append(a, [msg("alpha", "k")])
        store.messages.append(b, [msg("beta", "k")])  # same key, other conversation
        assert [m.seq for m in store.messages.list(b)] == [0]
        assert store.messages.count(a) == 1 and store.messages.count() == 2
        hits = store.search.grep(GrepQuery("alpha", conversation_id=b))
        assert hits == []

    def test_get_many_orders_by_conversation_and_seq(self, store: Store) -> None:
        a = self.conv(store, "a")
        ms = store.messages.append(a, [msg(str(i), f"k{i}") for i in range(3)]).inserted
        got = store.messages.get_many([ms[2].id, ms[0].id, ms[2].id])
        assert [m.seq for m in got] == [0, 2]

    # -- transactions --------------------------------------------------

    def test_rollback_leaves_nothing(self, store: Store) -> None:
        cid = self.conv(store)
        with pytest.raises(RuntimeError), store.transaction() as tx:
            tx.messages.append(cid, [msg("gone", "k1")])
            raise RuntimeError("boom")
        assert store.messages.count(cid) == 0
        assert store.context.list(cid) == []

    def test_nested_transaction_is_an_error(self, store: Store) -> None:
        cid = self.conv(store)
        with store.transaction() as tx:
            tx.messages.append(cid, [msg("kept", "k1")])
            with pytest.raises(NestedTransactionError), store.transaction():
                pass
        assert store.messages.count(cid) == 1

    def test_commit_is_visible_to_another_connection(
        self, store: Store, store_factory: StoreFactory
    ) -> None:
        cid = self.conv(store)
        other = store_factory()
        try:
            with store.transaction() as tx:
                tx.messages.append(cid, [msg("shared", "k1")])
            assert other.messages.count(cid) == 1
        finally:
            other.close()

    def test_closed_store_refuses_use(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        cid = self.conv(store)
        store.messages.append(cid, [msg("persisted", "k1")])
        store.close()
        store.close()  # idempotent
        with pytest.raises(StoreClosedError):
            store.messages.count(cid)
        with pytest.raises(StoreClosedError), store.transaction():
            pass
        reopened = store_factory()
        try:
            assert reopened.messages.count(cid) == 1
        finally:
            reopened.close()

    # -- summaries and context -----------------------------------------

    def _summary(self, cid: int, content: str, depth: int = 0) -> NewSummary:
        return NewSummary(
            conversation_id=cid,
            kind="leaf" if depth == 0 else "condensed",
            depth=depth,
            content=content,
            token_count=len(content) // 4 + 1,
            earliest_at="2026-01-01T00:00:00.000Z",
            latest_at="2026-01-01T01:00:00.000Z",
        )

    def test_summary_links_and_lineage(self, store: Store) -> None:
        cid = self.conv(store)
        ms = store.messages.append(cid, [msg(f"m{i}", f"k{i}") for i in range(4)]).inserted
        leaf1 = store.summaries.create(
            self._summary(cid, "first"), message_ids=[ms[0].id, ms[1].id]
        )
        leaf2 = store.summaries.create(
            self._summary(cid, "second"), message_ids=[ms[2].id, ms[3].id]
        )
        top = store.summaries.create(
            self._summary(cid, "top", depth=1), source_summary_ids=[leaf1.id, leaf2.id]
        )
        assert leaf1.id.startswith("sum_") and len(leaf1.id) == 20
        assert store.summaries.source_message_ids(leaf2.id) == [ms[2].id, ms[3].id]
        assert store.summaries.source_summary_ids(top.id) == [leaf1.id, leaf2.id]
        assert store.summaries.condensed_into(leaf1.id) == top.id
        assert store.summaries.condensed_into(top.id) is None
        assert store.summaries.covering([ms[0].id, ms[3].id]) == {
            ms[0].id: leaf1.id,
            ms[3].id: leaf2.id,
        }
        assert [s.id for s in store.summaries.list(cid, depth=0)] == [leaf1.id, leaf2.id]
        got = store.summaries.get(top.id)
        assert got is not None and got.content == "top" and got.depth == 1

    def test_context_replace_range(self, store: Store) -> None:
        cid = self.conv(store)
        ms = store.messages.append(cid, [msg("x" * 40, f"k{i}") for i in range(5)]).inserted
        store.context.append_messages(cid, ms)
        assert store.context.token_total(cid) == sum(m.token_count for m in ms)
        leaf = store.summaries.create(
            self._summary(cid, "s"), message_ids=[ms[0].id, ms[1].id, ms[2].id]
        )
        items = store.context.list(cid)
        with store.transaction() as tx:
            tx.context.replace_range(cid, items[0].ordinal, items[2].ordinal, leaf)
        after = store.context.list(cid)
        assert [(i.item_type, i.summary_id or i.message_id) for i in after] == [
            ("summary", leaf.id),
            ("message", ms[3].id),
            ("message", ms[4].id),
        ]
        assert (
            store.context.token_total(cid)
            == leaf.token_count + ms[3].token_count + ms[4].token_count
        )
        with pytest.raises(StoreError):
            store.context.replace_range(cid, items[1].ordinal, items[2].ordinal, leaf)
        more = store.messages.append(cid, [msg("late", "k9")]).inserted
        store.context.append_messages(cid, more)
        assert store.context.list(cid)[-1].message_id == more[0].id

    def test_context_read_from_the_newest_back(self, store: Store) -> None:
        cid = self.conv(store)
        user = msg("please fix it", "k0", role="user", parts=(NewPart("text", "please fix it"),))
        call = msg(
            "call", "k1", role="assistant", parts=(NewPart("tool_use", "{}", tool_call_id="c1"),)
        )
        result = msg(
            "done", "k2", role="user", parts=(NewPart("tool_result", "ok", tool_call_id="c1"),)
        )
        bare = msg("typed, no parts", "k3", role="user")
        answer = msg("fixed", "k4", role="assistant", parts=(NewPart("text", "fixed"),))
        ms = store.messages.append(cid, [user, call, result, bare, answer]).inserted
        store.context.append_messages(cid, ms)
        leaf = store.summaries.create(self._summary(cid, "s"), message_ids=[ms[0].id])
        first = store.context.list(cid)[0]
        store.context.replace_range(cid, first.ordinal, first.ordinal, leaf)
        items = store.context.list(cid)
        stats = store.context.stats(cid)
        assert (stats.items, stats.tokens, stats.summaries) == (
            5,
            sum(i.token_count for i in items),
            1,
        )
        assert stats.message_tokens == sum(m.token_count for m in ms[1:])
        assert store.context.newest(cid, limit=2) == items[-2:]
        assert store.context.newest(cid, before_ordinal=items[-2].ordinal, limit=10) == items[:-2]
        assert store.context.newest(cid, limit=0) == []
        # Only raw message items older than the bound count; the summary item does not.
        assert store.context.tool_uses_before(cid, ["c1", "zz"], items[2].ordinal) == {"c1"}
        assert store.context.tool_uses_before(cid, ["c1"], items[1].ordinal) == set()
        # Summaries and possible prompts, newest first: the tool result is not one.
        found = store.context.prompt_candidates(cid, before_ordinal=items[-1].ordinal, limit=10)
        assert [i.summary_id or i.message_id for i in found] == [ms[3].id, leaf.id]
        assert store.context.prompt_candidates(cid, before_ordinal=10**9, limit=1) == [items[3]]
        empty = self.conv(store, "other")
        assert store.context.stats(empty).items == 0

    @settings(
        max_examples=25,
        deadline=None,
        # Each backend's subclass runs it with a store of its own; every
        # example makes conversations of its own in it.
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.differing_executors,
        ],
    )
    @given(writes=st.lists(_CONTEXT_WRITE, min_size=1, max_size=14))
    def test_context_totals_always_equal_a_recount(
        self, store: Store, writes: list[tuple[str, int, int, int]]
    ) -> None:
        """The kept totals (migration 0012) after every kind of context write:
        appends, a compaction's replace (leaf and condensed), a rewind's
        removal, a whole context restored (an import of an export), a purge's
        rewrite, and writes rolled back with their transaction."""
        example = next(_EXAMPLES)
        project = f"totals-{example}"
        convs = [self.conv(store, f"t{example}-{n}", project) for n in range(2)]
        seq = itertools.count()

        def append(repos: Repositories, cid: int, n: int) -> None:
            texts = [f"message {next(seq)} " + "w" * (i * 7 % 50) for i in range(1 + n % 6)]
            ms = repos.messages.append(cid, [msg(t, f"k{t}") for t in texts]).inserted
            repos.context.append_messages(cid, ms)

        for kind, which, a, b in writes:
            cid = convs[which]
            items = store.context.list(cid)
            if kind == "append":
                append(store, cid, a)
            elif kind == "rollback":
                with pytest.raises(RuntimeError), store.transaction() as tx:
                    append(tx, cid, a)
                    tx.context.remove_messages(cid, [m.id for m in tx.messages.list(cid)])
                    raise RuntimeError("roll back")
            elif kind in ("replace", "condense") and items:
                first = a % len(items)
                chosen = items[first : first + 1 + b % 6]
                sources = [i.summary_id for i in chosen if i.summary_id is not None]
                if kind == "condense" and sources:
                    summary = store.summaries.create(
                        self._summary(cid, f"top {next(seq)}", depth=1),
                        source_summary_ids=sources,
                    )
                else:
                    summary = store.summaries.create(
                        self._summary(cid, f"leaf {next(seq)}" + "s" * b),
                        message_ids=[i.message_id for i in chosen if i.message_id is not None],
                    )
                with store.transaction() as tx:
                    tx.context.replace_range(cid, chosen[0].ordinal, chosen[-1].ordinal, summary)
            elif kind == "remove" and items:
                # A rewind names messages, some no longer raw in the context.
                ids = [m.id for m in store.messages.list(cid)]
                store.context.remove_messages(cid, ids[a % len(ids) :: 1 + b % 3])
            elif kind == "restore":
                kept = [i for n, i in enumerate(items) if (n + a) % (2 + b % 3)]
                store.context.restore(cid, kept)
            elif kind == "rewrite" and items:
                ids = [m.id for m in store.messages.list(cid)]
                store.messages.rewrite(ids[a % len(ids)], f"[REDACTED] {next(seq)}", None)
            for c in convs:
                listed = store.context.list(c)
                assert store.context.stats(c) == recount(listed), (kind, writes)
                assert store.context.token_total(c) == sum(i.token_count for i in listed)
            totals = store.stats(project=project)
            assert totals.context_items == sum(store.context.stats(c).items for c in convs)
            assert totals.context_tokens == sum(store.context.stats(c).tokens for c in convs)

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.differing_executors,
        ],
    )
    @given(writes=st.lists(_HISTORY_WRITE, min_size=1, max_size=12))
    def test_conversation_totals_always_equal_a_recount(
        self, store: Store, writes: list[tuple[str, int, int, int]]
    ) -> None:
        """The kept totals (migration 0014) after every kind of write to stored
        history: appends (with parts, raw lines and repeated keys, which are
        skipped), raw lines of no message, summaries and large files created
        and restored (a restore of a stored one changes nothing), a purge's
        rewrites, ``lcm gc`` (raw lines dropped, texts stored once) and writes
        rolled back with their transaction. Each conversation has a project of
        its own, so ``stats(project=...)`` is its totals."""
        example = next(_EXAMPLES)
        projects = [f"history-{example}-{n}" for n in range(2)]
        convs = [self.conv(store, f"h{example}-{n}", p) for n, p in enumerate(projects)]
        seq = itertools.count()

        def append(repos: Repositories, cid: int, n: int, m: int) -> None:
            batch = []
            for i in range(1 + n % 5):
                k = next(seq)
                text = f"message {k} " + "w" * (i * 7 % 50)
                parts = tuple(
                    NewPart("text", text if j == 0 else f"part {j} of {k}")
                    for j in range((i + m) % 3)
                )
                records = tuple(
                    NewNativeRecord(f"line-{example}-{k}-{j}", "message", f'{{"k": {k}}}')
                    for j in range((i + n) % 3)
                )
                day = 1 + k % 28
                batch.append(
                    msg(
                        text,
                        f"k{k}",
                        at=f"2026-01-{day:02d}T00:00:00.000Z",
                        parts=parts,
                        records=records,
                    )
                )
            # A key already stored is skipped with its parts and lines.
            if m % 3 == 0 and repos.messages.list(cid):
                stored = repos.messages.list(cid)[0]
                batch.append(msg("a repeat", stored.ingest_key, parts=(NewPart("text", "x"),)))
            repos.messages.append(cid, batch)

        def summary(repos: Repositories, cid: int, n: int) -> None:
            ids = [m.id for m in repos.messages.list(cid)]
            repos.summaries.create(
                self._summary(cid, f"leaf {next(seq)} " + "s" * n),
                message_ids=ids[n % 3 : n % 3 + 2],
            )

        for kind, which, a, b in writes:
            cid = convs[which]
            if kind == "append":
                append(store, cid, a, b)
            elif kind == "records":
                # Raw lines of no message; one of them already stored.
                lines = [NewNativeRecord(f"meta-{example}-{a % 4}", "progress", "{}")]
                lines += [NewNativeRecord(f"meta-{example}-{next(seq)}", "progress", "{}")]
                store.messages.add_native_records(cid, lines)
            elif kind == "summary":
                summary(store, cid, a)
            elif kind == "restore summary":
                stored = store.summaries.list(cid)
                if stored:
                    assert not store.summaries.restore(stored[0])
                    copy = dataclasses.replace(stored[0], id=f"sum_{example:08x}{next(seq):08x}")
                    assert store.summaries.restore(copy)
            elif kind == "file":
                # The same content twice is one file (content-addressed).
                digest = f"{example % 256:02x}{a % 3:02x}" * 16
                store.files.create(
                    NewLargeFile(cid, f"/x/{digest}", 100, 25 + a, digest, "text/plain", "prose")
                )
            elif kind == "restore file":
                files = store.files.list(cid)
                if files:
                    assert not store.files.restore(files[0])
            elif kind == "rewrite":
                ms = store.messages.list(cid)
                if ms:
                    chosen = ms[a % len(ms)]
                    store.messages.rewrite(chosen.id, f"[REDACTED] {next(seq)}", None)
                records = store.messages.native_records(cid)
                if records:
                    store.messages.rewrite_native_record(records[b % len(records)].id, "{}")
                for s in store.summaries.list(cid)[:1]:
                    store.summaries.rewrite(s.id, "[REDACTED]")
                for f in store.files.list(cid)[:1]:
                    store.files.rewrite(
                        f.id,
                        path=f.path + ".redacted",
                        sha256="ee" * 32,
                        byte_size=f.byte_size,
                        token_count=f.token_count,
                        exploration_summary="[REDACTED]",
                    )
            elif kind == "gc":
                cutoff = f"2026-01-{1 + a % 28:02d}T00:00:00.000Z"
                store.messages.drop_native_records(created_before=cutoff, dry_run=b % 2 == 0)
            elif kind == "texts once":
                store.messages.store_texts_once(cid)
            elif kind == "rollback":
                with pytest.raises(RuntimeError), store.transaction() as tx:
                    append(tx, cid, a, b)
                    summary(tx, cid, b)
                    tx.messages.add_native_records(
                        cid, [NewNativeRecord(f"gone-{example}-{next(seq)}", "progress", "{}")]
                    )
                    raise RuntimeError("roll back")
            for c, project in zip(convs, projects, strict=True):
                expected = recount_history(store, c)
                totals = store.stats(project=project)
                assert {k: getattr(totals, k) for k in HISTORY_COUNTS} == expected, (kind, writes)
                assert store.messages.count(c) == expected["messages"]
                assert store.messages.count_by_conversation([c]) == {c: expected["messages"]}
                assert store.summaries.count_by_conversation([c]) == {c: expected["summaries"]}
        # An empty conversation discarded takes its totals with it.
        empty = self.conv(store, f"h{example}-empty", projects[0])
        assert store.conversations.discard_if_empty(empty)
        assert (
            store.stats(project=projects[0]).messages
            == recount_history(store, convs[0])["messages"]
        )

    # -- search --------------------------------------------------------

    def _seed_search(self, store: Store) -> tuple[int, int]:
        a, b = self.conv(store, "a", "proj-a"), self.conv(store, "b", "proj-b")
        store.messages.append(
            a,
            [
                msg(
                    "the database migration failed with error 42",
                    "k1",
                    at="2026-01-01T10:00:00.000Z",
                ),
                msg(
                    "we fixed the migration by adding an index", "k2", at="2026-01-02T10:00:00.000Z"
                ),
                msg("unrelated chatter about lunch", "k3", at="2026-01-03T10:00:00.000Z"),
            ],
        )
        store.messages.append(
            b,
            [
                msg("migration migration database database", "k1", at="2026-01-04T10:00:00.000Z"),
                msg("日本語のテキストを検索する", "k2", at="2026-01-05T10:00:00.000Z"),
            ],
        )
        return a, b

    def test_full_text_ranks_better_matches_first(self, store: Store) -> None:
        self._seed_search(store)
        hits = store.search.grep(
            GrepQuery("database migration", mode="full_text", scope="messages")
        )
        assert len(hits) == 3
        assert hits[0].snippet.count("[") >= 2
        assert {h.snippet for h in hits[-1:]} != set()
        assert all(h.kind == "message" and h.role == "user" for h in hits)
        assert "lunch" not in " ".join(h.snippet for h in hits)

    def test_regex_newest_first_with_filters(self, store: Store) -> None:
        a, _ = self._seed_search(store)
        hits = store.search.grep(GrepQuery(r"migr\w+", mode="regex"))
        assert [h.created_at for h in hits] == sorted((h.created_at for h in hits), reverse=True)  # type: ignore[type-var]
        assert len(hits) == 3
        assert "[migration]" in hits[0].snippet
        only_a = store.search.grep(GrepQuery("migration", mode="regex", project="proj-a"))
        assert {h.conversation_id for h in only_a} == {a}
        recent = store.search.grep(
            GrepQuery("migration", mode="regex", since="2026-01-02T00:00:00.000Z")
        )
        assert len(recent) == 2
        assert len(store.search.grep(GrepQuery("migration", mode="regex", limit=1))) == 1
        assert (
            store.search.grep(GrepQuery("migration", mode="regex", session_id="b"))[0].session_id
            == "b"
        )

    def test_regex_grep_sees_its_own_transaction_and_nothing_uncommitted(
        self, store: Store
    ) -> None:
        # A regex scan may read through a connection of its own (SQLite: so a
        # long one does not hold up other callers); inside a transaction it
        # still sees that transaction's writes, and after a rollback not them.
        cid = self.conv(store)
        store.messages.append(cid, [msg("committed: the zebra-7 alert", "k1")])
        with pytest.raises(RuntimeError), store.transaction() as tx:
            tx.messages.append(cid, [msg("pending: the zebra-9 alert", "k2")])
            inside = tx.search.grep(GrepQuery(r"zebra-\d", mode="regex"))
            assert sorted(h.snippet for h in inside) == [
                "committed: the [zebra-7] alert",
                "pending: the [zebra-9] alert",
            ]
            raise RuntimeError("roll back")
        after = store.search.grep(GrepQuery(r"zebra-\d", mode="regex"))
        assert [h.snippet for h in after] == ["committed: the [zebra-7] alert"]

    def test_substring_and_cjk_search(self, store: Store) -> None:
        self._seed_search(store)
        hits = store.search.grep(GrepQuery("テキスト", mode="regex"))
        assert len(hits) == 1 and "日本語" in hits[0].snippet
        assert len(store.search.grep(GrepQuery("igrat", mode="regex"))) == 3
        assert len(store.search.grep(GrepQuery("(?i)DATABASE MIGRATION", mode="regex"))) == 1

    def test_regex_literals_with_wildcard_characters(self, store: Store) -> None:
        cid = self.conv(store)
        store.messages.append(
            cid,
            [
                msg("GET /x request_id=dead42 took 5ms", "k1"),
                msg("progress 100% done_now [ok]?", "k2"),
                msg("request-id=dead42 is a different key", "k3"),
            ],
        )
        hits = store.search.grep(GrepQuery(r"request_id=dead\d+", mode="regex"))
        assert [h.snippet for h in hits] == ["GET /x [request_id=dead42] took 5ms"]
        assert len(store.search.grep(GrepQuery(r"100% done_now \[ok\]\?", mode="regex"))) == 1
        assert len(store.search.grep(GrepQuery(r"(?i)REQUEST_ID=DEAD", mode="regex"))) == 1
        assert store.search.grep(GrepQuery(r"Request_id=dead", mode="regex")) == []

    def _regex_answers(self, store: Store) -> list[list[tuple[str, str]]]:
        queries = [r"migr\w+", "igrat", "テキスト", "(?i)DATABASE MIGRATION", r"error \d+", "nope"]
        return [
            [(h.id, h.snippet) for h in store.search.grep(GrepQuery(q, mode="regex"))]
            for q in queries
        ]

    def test_substring_index_backlog_changes_speed_not_answers(self, store: Store) -> None:
        self._seed_search(store)
        backlog = store.search.index_backlog()
        assert backlog in (0, 5)  # 0: a backend that indexes as it writes
        before = self._regex_answers(store)
        assert before[0] and before[1] and before[2]
        assert store.search.catch_up(2) == min(backlog, 2)
        assert self._regex_answers(store) == before
        assert store.search.index_backlog() == max(0, backlog - 2)
        assert store.search.catch_up(100) == max(0, backlog - 2)
        assert store.search.index_backlog() == 0
        assert store.search.catch_up(100) == 0
        assert self._regex_answers(store) == before
        assert store.integrity_check() == []

    def test_rewrite_before_and_after_substring_indexing(self, store: Store) -> None:
        cid = self.conv(store)
        first, second = store.messages.append(
            cid, [msg("key ACME-111 here", "k1"), msg("key ACME-222 here", "k2")]
        ).inserted
        store.search.catch_up(1)  # the first is indexed (where indexing is deferred)
        with store.transaction() as tx:
            for m in (first, second):
                tx.messages.rewrite(m.id, "key [X] here", None, ())
        assert store.search.grep(GrepQuery("ACME", mode="regex")) == []
        assert store.integrity_check() == []
        store.search.catch_up(100)
        assert store.search.grep(GrepQuery("ACME", mode="regex")) == []
        assert len(store.search.grep(GrepQuery(r"key \[X\]", mode="regex"))) == 2
        assert store.integrity_check() == []

    def test_a_regex_scan_stops_at_its_time_budget(self, store: Store) -> None:
        cid = self.conv(store)
        store.messages.append(
            cid,
            [
                msg(
                    f"line {i:03d} took 12ms",
                    f"k{i}",
                    at=f"2026-01-01T10:{i // 60:02d}:{i % 60:02d}.000Z",
                )
                for i in range(200)
            ],
        )
        everything = store.search.grep(GrepQuery(r"\d+ms", mode="regex", limit=500))
        assert (len(everything), everything.complete, everything.scanned_until) == (200, True, None)
        # A budget already spent: the scan stops at its first look at the clock.
        cut = store.search.grep(GrepQuery(r"\d+ms", mode="regex", limit=500, time_budget_s=0.0))
        assert not cut.complete and cut.scanned_until is not None
        assert 0 < len(cut) < 200
        assert [h.id for h in cut] == [h.id for h in everything[: len(cut)]]
        assert all((h.created_at or "") > cut.scanned_until for h in cut)
        # A budget is a regex matter: ranked full-text search is always complete.
        ranked = store.search.grep(
            GrepQuery("took", mode="full_text", limit=500, time_budget_s=0.0)
        )
        assert ranked.complete and len(ranked) == 200

    @pytest.mark.parametrize(
        ("pattern", "bomb", "plain_matches"),
        [
            (r"(a|aa)+$", "a" * 60 + "!", True),  # overlapping alternation
            (r"^(a|a?)+$", "a" * 60 + "!", True),
            (r"(\w+)\s(\w*\s?)*\1!", "ab " * 40, False),  # a backreference bomb
            (r"(a+)+$", "a" * 5000 + "!", True),
            (r"(.*a){20}", "a" * 5000, False),
        ],
    )
    def test_a_backtracking_match_stops_within_its_budget(
        self, store: Store, pattern: str, bomb: str, plain_matches: bool
    ) -> None:
        """One row that backtracks for minutes is cut off at the deadline; newer hits stay."""
        cid = self.conv(store)
        store.messages.append(
            cid,
            [
                msg(bomb, "bomb", at="2026-01-01T10:00:00.000Z"),
                msg("aaaa", "plain", at="2026-01-01T11:00:00.000Z"),
            ],
        )
        # The matcher's timeout counts CPU time: on a loaded machine the wall
        # time stretches with the load (17 s at load 20), the CPU time does not.
        with spent_here() as spent:
            hits = store.search.grep(
                GrepQuery(pattern, mode="regex", scope="messages", limit=10, time_budget_s=0.5)
            )
        assert spent.cpu_s < 3.0, f"{pattern!r} used {spent} against a 0.5 s budget"
        if not hits.complete:
            assert hits.scanned_until == "2026-01-01T10:00:00.000Z"
        # The newer row is searched first, whatever the bomb does.
        newer = [h for h in hits if h.created_at == "2026-01-01T11:00:00.000Z"]
        assert len(newer) == int(plain_matches)

    def test_bad_patterns_are_input_errors(self, store: Store) -> None:
        self._seed_search(store)
        with pytest.raises(InputError):
            store.search.grep(GrepQuery("([unclosed", mode="regex"))
        with pytest.raises(InputError):
            store.search.grep(GrepQuery("", mode="full_text"))
        with pytest.raises(InputError):
            store.search.grep(GrepQuery("!!! ???", mode="full_text"))
        # FTS syntax characters in user input are treated as words, not syntax.
        assert store.search.grep(GrepQuery('migration" OR (', mode="full_text"))

    def test_summaries_are_searchable_and_cover_messages(self, store: Store) -> None:
        a, _ = self._seed_search(store)
        ms = store.messages.list(a)
        leaf = store.summaries.create(
            self._summary(a, "Leaf: the migration failure was fixed with an index"),
            message_ids=[ms[0].id, ms[1].id],
        )
        both = store.search.grep(GrepQuery("index", mode="full_text"))
        assert {h.kind for h in both} == {"message", "summary"}
        message_hit = next(h for h in both if h.kind == "message")
        assert message_hit.covering_summary_id == leaf.id
        only_summaries = store.search.grep(GrepQuery("index", mode="regex", scope="summaries"))
        assert [h.id for h in only_summaries] == [leaf.id]

    # -- import bookkeeping --------------------------------------------

    def test_quarantine_keeps_raw_bytes_once(self, store: Store) -> None:
        raw = b"\x00\xff not json"
        assert store.quarantine.add(
            source_path="/t.jsonl", line_no=7, byte_offset=99, error="bad", raw=raw
        )
        assert not store.quarantine.add(
            source_path="/t.jsonl", line_no=7, byte_offset=99, error="bad", raw=raw
        )
        (kept,) = store.quarantine.list()
        assert kept.raw == raw and kept.line_no == 7 and kept.error == "bad"
        assert store.quarantine.count() == 1

    def test_cursor_upsert(self, store: Store) -> None:
        from lossless.models import SourceCursor

        cid = self.conv(store)
        assert store.cursors.get("/x") is None
        store.cursors.put(SourceCursor("/x", cid, 10, 1, "k", "h", "2026-01-01T00:00:00.000Z"))
        store.cursors.put(SourceCursor("/x", cid, 20, 2, "k2", "h2", "2026-01-01T00:00:01.000Z"))
        got = store.cursors.get("/x")
        assert got is not None and (got.byte_offset, got.line_no, got.anchor_key) == (20, 2, "k2")

    def test_large_files(self, store: Store) -> None:
        cid = self.conv(store)
        f = store.files.create(
            NewLargeFile(cid, "/tmp/f.json", 100, 25, "ab" * 32, "application/json", "keys: a, b")
        )
        assert f.id.startswith("file_")
        assert store.files.get(f.id) == f
        assert store.files.list(cid) == [f]

    # -- leases --------------------------------------------------------

    def test_leases_fence_and_expire(self, store: Store) -> None:
        cid = self.conv(store)
        # Held for far longer than a loaded machine can stall between two
        # calls; the holder's own re-acquire then shortens it to expire.
        first = store.leases.acquire(cid, "w1", ttl_s=60)
        assert first is not None
        assert store.leases.acquire(cid, "w2", ttl_s=5) is None
        again = store.leases.acquire(cid, "w1", ttl_s=0.05)
        assert again is not None and again.fence == first.fence
        time.sleep(0.1)
        taken = store.leases.acquire(cid, "w2", ttl_s=5)
        assert taken is not None and taken.fence > first.fence
        with pytest.raises(LeaseLostError):
            store.leases.check(first)
        with pytest.raises(LeaseLostError):
            store.leases.renew(first, 5)
        store.leases.check(taken)
        store.leases.release(first)  # a stale release changes nothing
        store.leases.check(taken)
        store.leases.release(taken)
        third = store.leases.acquire(cid, "w3", ttl_s=5)
        assert third is not None and third.fence > taken.fence

    def test_a_lease_names_its_holder_and_can_be_taken_over_once(self, store: Store) -> None:
        cid = self.conv(store)
        assert store.leases.holder(cid) is None
        before = time.time()
        held = store.leases.acquire(cid, "host-a:123:456:n1", ttl_s=60)
        assert held is not None
        holder = store.leases.holder(cid)
        assert holder is not None and holder.owner == "host-a:123:456:n1"
        assert holder.fence == held.fence and holder.since is not None
        assert before - 1 <= holder.since <= time.time() + 1
        assert holder.expires_at == pytest.approx(held.expires_at, abs=1)
        # Renewing keeps the time it was taken.
        store.leases.acquire(cid, "host-a:123:456:n1", ttl_s=120)
        again = store.leases.holder(cid)
        assert again is not None and again.since == pytest.approx(holder.since)
        taken = store.leases.take_over(cid, holder, "host-a:999:1:n2", ttl_s=60)
        assert taken is not None and taken.fence > held.fence
        with pytest.raises(LeaseLostError):
            store.leases.check(held)
        store.leases.check(taken)
        # A second contender judging the same dead holder finds the lease moved on.
        assert store.leases.take_over(cid, holder, "host-a:777:1:n3", ttl_s=60) is None
        current = store.leases.holder(cid)
        assert current is not None and current.owner == "host-a:999:1:n2"
        store.leases.release(taken)
        assert store.leases.holder(cid) is None

    def test_integrity_check_of_a_healthy_store(self, store: Store) -> None:
        cid = self.conv(store)
        store.messages.append(cid, [msg("hello world", "k1")])
        assert store.integrity_check() == []

    def test_stats(self, store: Store) -> None:
        cid = self.conv(store)
        store.messages.append(cid, [msg("abcd" * 10, "k1", parts=(NewPart("text", "abcd"),))])
        stats = store.stats()
        assert (stats.conversations, stats.messages, stats.parts) == (1, 1, 1)
        assert stats.message_tokens == 10
        assert stats.by_client == {"generic": 1}

    def test_stats_of_one_project_and_counts_by_conversation(self, store: Store) -> None:
        a1, a2 = self.conv(store, "a1", "alpha"), self.conv(store, "a2", "alpha")
        b1 = self.conv(store, "b1", "beta")
        for cid, n in ((a1, 3), (a2, 1), (b1, 2)):
            result = store.messages.append(
                cid,
                [
                    msg("word " * 8, f"{cid}-{i}", parts=(NewPart("text", "word"),))
                    for i in range(n)
                ],
            )
            store.context.append_messages(cid, result.inserted)
        first = store.messages.list(a1)[:2]
        summary = store.summaries.create(
            NewSummary(
                a1,
                "leaf",
                0,
                "what alpha said",
                3,
                first[0].created_at,
                first[-1].created_at,
                2,
                20,
            ),
            message_ids=[m.id for m in first],
        )
        store.context.replace_range(a1, 0, 1, summary)
        store.quarantine.add(source_path="/x", line_no=1, byte_offset=0, error="bad", raw=b"?")

        alpha = store.stats(project="alpha")
        assert (alpha.conversations, alpha.messages, alpha.parts, alpha.summaries) == (2, 4, 4, 1)
        assert alpha.context_items == 3  # a1: summary + 1 message; a2: 1 message
        assert alpha.message_tokens == sum(
            m.token_count for c in (a1, a2) for m in store.messages.list(c)
        )
        assert alpha.summary_tokens == 3
        assert alpha.context_tokens == store.context.token_total(a1) + store.context.token_total(a2)
        assert alpha.quarantined == 1  # store-wide
        assert alpha.by_client == {"generic": 2}
        everything = store.stats()
        assert (everything.conversations, everything.messages, everything.summaries) == (3, 6, 1)
        assert everything.context_tokens == alpha.context_tokens + store.context.token_total(b1)
        assert store.stats(project="nobody").messages == 0
        with pytest.raises(InputError):
            store.stats(project="bad\x00")

        assert store.messages.count_by_conversation([a1, a2, b1, 999_999]) == {
            a1: 3,
            a2: 1,
            b1: 2,
            999_999: 0,
        }
        assert store.summaries.count_by_conversation([a1, b1]) == {a1: 1, b1: 0}
        assert store.messages.count_by_conversation([]) == {}
        many = list(range(1, 1_200))  # more ids than one SQL statement may bind on SQLite
        assert sum(store.messages.count_by_conversation(many).values()) == 6

    def test_overview_of_conversations(self, store: Store) -> None:
        a, b, empty = self.conv(store, "a"), self.conv(store, "b"), self.conv(store, "e")
        done = store.messages.append(
            a,
            [
                msg("system text", "a0", role="system", at="2026-01-01T00:00:00.000Z"),
                msg("fix the flaky test " * 40, "a1", at="2026-01-02T00:00:00.000Z"),
                msg("done", "a2", role="assistant", at="2026-01-03T00:00:00.000Z"),
                msg("second prompt", "a3", at="2026-01-04T00:00:00.000Z"),
            ],
        )
        store.context.append_messages(a, done.inserted)
        store.messages.append(b, [msg("only the assistant", "b0", role="assistant")])
        listed = store.messages.list(a)
        summary = store.summaries.create(
            NewSummary(a, "leaf", 0, "s", 1, listed[0].created_at, listed[1].created_at, 2, 9),
            message_ids=[m.id for m in listed[:2]],
        )
        store.context.replace_range(a, 0, 1, summary)

        found = store.conversations.overview([a, b, empty, 999_999])
        assert set(found) == {a, b, empty, 999_999}
        first = found[a]
        assert first.messages == 4
        assert first.message_tokens == sum(m.token_count for m in listed)
        assert first.last_activity == "2026-01-04T00:00:00.000Z"
        assert first.first_prompt is not None
        assert first.first_prompt.startswith("fix the flaky test")
        assert len(first.first_prompt) == OVERVIEW_PROMPT_CHARS
        assert (first.summaries, first.max_depth) == (1, 0)
        assert first.context_tokens == store.context.token_total(a)
        assert found[b].first_prompt is None and found[b].messages == 1
        assert found[b].max_depth is None and found[b].context_tokens == 0
        assert found[empty] == found[999_999]
        assert found[empty].messages == 0 and found[empty].last_activity is None
        assert store.conversations.overview([]) == {}
        many = list(range(1, 1_200))  # more ids than one SQL statement may bind on SQLite
        assert sum(o.messages for o in store.conversations.overview(many).values()) == 5

    def test_listing_of_conversations(self, store: Store) -> None:
        a, b, empty = self.conv(store, "a"), self.conv(store, "b"), self.conv(store, "e")
        done = store.messages.append(
            a,
            [
                msg(f"message {i} " * (i + 1), f"a{i}", at=f"2026-01-0{i + 1}T00:00:00.000Z")
                for i in range(6)
            ],
        )
        store.context.append_messages(a, done.inserted)
        listed = store.messages.list(a)
        leaves = []
        for first in (0, 2):
            leaf = store.summaries.create(
                NewSummary(
                    a,
                    "leaf",
                    0,
                    f"leaf {first}",
                    3,
                    listed[first].created_at,
                    listed[first + 1].created_at,
                    2,
                    listed[first].token_count + listed[first + 1].token_count,
                ),
                message_ids=[listed[first].id, listed[first + 1].id],
            )
            leaves.append(leaf)
        # Leaves cover messages 0-1 and 2-3; the first pair is condensed above them.
        store.context.replace_range(a, 2, 3, leaves[1])
        condensed = store.summaries.create(
            NewSummary(
                a,
                "condensed",
                1,
                "condensed",
                2,
                leaves[0].earliest_at,
                leaves[0].latest_at,
                2,
                leaves[0].source_token_count,
            ),
            source_summary_ids=[leaves[0].id],
        )
        store.context.replace_range(a, 0, 1, condensed)
        store.messages.append(b, [msg("only one", "b0", at="2026-02-01T00:00:00.000Z")])

        found = store.conversations.listing([a, b, empty, 999_999])
        assert set(found) == {a, b, empty, 999_999}
        first = found[a]
        items = store.context.list(a)
        assert first.messages == 6
        assert first.last_activity == "2026-01-06T00:00:00.000Z"
        assert first.summaries_by_depth == {0: 2, 1: 1}
        assert first.context_items == len(items) == 4
        assert first.context_tokens == store.context.token_total(a)
        assert first.raw_in_context == 2
        # What the context stands for: every message's tokens, through the DAG.
        assert first.history_tokens == sum(m.token_count for m in listed)
        assert found[b].messages == 1 and found[b].summaries_by_depth == {}
        assert found[b].last_activity == "2026-02-01T00:00:00.000Z"
        assert found[b].context_items == 0 and found[b].history_tokens == 0
        assert found[empty] == found[999_999]
        assert found[empty].messages == 0 and found[empty].last_activity is None
        assert store.conversations.listing([]) == {}
        many = list(range(1, 1_200))  # more ids than one SQL statement may bind on SQLite
        assert sum(o.messages for o in store.conversations.listing(many).values()) == 7

        last = store.conversations.last_activity([b, a, empty, 999_999])
        assert last == {
            b: "2026-02-01T00:00:00.000Z",
            a: "2026-01-06T00:00:00.000Z",
            empty: None,
            999_999: None,
        }
        assert store.conversations.last_activity([]) == {}
        assert len(store.conversations.last_activity(many)) == len(many)

        # The high water mark moves with every message added, anywhere.
        before = store.messages.high_water()
        assert before == max(m.id for m in store.messages.list(a) + store.messages.list(b))
        store.messages.append(empty, [msg("late", "e0")])
        assert store.messages.high_water() > before

        # The context's summaries, in context order, without its raw items.
        assert [s.id for s in store.context.summaries(a)] == [condensed.id, leaves[1].id]
        assert store.context.summaries(a)[0] == store.summaries.get(condensed.id)
        assert store.context.summaries(b) == [] and store.context.summaries(999_999) == []

    def test_summaries_by_escalation_level(self, store: Store) -> None:
        assert store.summaries.escalation().levels == {}
        a, b = self.conv(store, "a", "alpha"), self.conv(store, "b", "beta")
        for cid in (a, b):
            store.messages.append(cid, [msg(f"m{i}", f"k{i}") for i in range(4)])
        metas: list[tuple[int, dict[str, object] | None]] = [
            (a, {"level": "normal"}),
            (a, {"level": "fallback", "escalation_errors": "normal: exit 1; aggressive: exit 1"}),
            (b, {"level": "aggressive", "escalation_errors": "normal: too long"}),
            (b, None),
        ]
        for i, (cid, meta) in enumerate(metas):
            at = f"2026-01-0{i + 1}T00:00:00.000Z"
            store.summaries.create(
                NewSummary(cid, "leaf", 0, f"s{i}", 1, at, at, 0, 5, metadata=meta),
                message_ids=[store.messages.list(cid)[i].id],
            )
        every = store.summaries.escalation()
        assert every.levels == {"normal": 1, "fallback": 1, "aggressive": 1, "unrecorded": 1}
        # The newest degraded summary and its cause (writes in one millisecond may tie).
        causes = {
            "aggressive": "normal: too long",
            "fallback": "normal: exit 1; aggressive: exit 1",
        }
        assert every.latest_level in causes and every.latest_why == causes[every.latest_level]
        assert every.latest_at is not None
        alpha = store.summaries.escalation(project="alpha")
        assert alpha.levels == {"normal": 1, "fallback": 1}
        assert alpha.latest_level == "fallback"
        assert alpha.latest_why == "normal: exit 1; aggressive: exit 1"

    def test_size_by_table_names_the_tables_and_grows_with_them(self, store: Store) -> None:
        before = store.size_by_table()
        assert {"messages", "message_parts", "native_records", "summaries"} <= set(before)
        assert list(before.values()) == sorted(before.values(), reverse=True)
        cid = self.conv(store)
        store.messages.append(
            cid,
            [
                msg(
                    "x" * 2_000 + str(i),
                    f"k{i}",
                    records=(NewNativeRecord(f"n{i}", "line", "y" * 2_000),),
                )
                for i in range(200)
            ],
        )
        after = store.size_by_table()
        assert after["messages"] > before["messages"]
        assert after["native_records"] > before["native_records"]
        assert not any(name.endswith(("_data", "_idx", "_docsize")) for name in after)

    # -- rewriting stored text (sensitive purge) -----------------------

    def test_rewrite_message_follows_in_every_search(self, store: Store) -> None:
        from lossless.store.contract import PartRewrite

        cid = self.conv(store)
        rec = NewNativeRecord("n1", "user", '{"text": "token ACME-12345"}')
        (m,) = store.messages.append(
            cid,
            [
                msg(
                    "call ACME-12345 now",
                    "k1",
                    parts=(
                        NewPart("text", "call ACME-12345 now", metadata={"id": "ACME-12345"}),
                        NewPart("text", "untouched"),
                    ),
                    records=(rec,),
                )
            ],
        ).inserted
        (stored_record,) = store.messages.native_records(cid)
        with store.transaction() as tx:
            tx.messages.rewrite(
                m.id,
                "call [X] now",
                {"k": "v"},
                [PartRewrite(0, "call [X] now", {"id": "[X]"})],
            )
            tx.messages.rewrite_native_record(stored_record.id, '{"text": "token [X]"}')
        got = store.messages.get(m.id)
        assert got is not None
        assert (got.content, got.metadata, got.seq, got.token_count) == (
            "call [X] now",
            {"k": "v"},
            m.seq,
            m.token_count,
        )
        parts = store.messages.parts([m.id])[m.id]
        assert [(p.text, p.metadata) for p in parts] == [
            ("call [X] now", {"id": "[X]"}),
            ("untouched", None),
        ]
        assert store.messages.native_records(cid)[0].raw == '{"text": "token [X]"}'
        for mode in ("full_text", "regex"):
            assert store.search.grep(GrepQuery("ACME", mode=mode)) == []  # type: ignore[arg-type]
            assert store.search.grep(GrepQuery("12345", mode=mode)) == []  # type: ignore[arg-type]
        assert [h.id for h in store.search.grep(GrepQuery("call", mode="full_text"))] == [str(m.id)]
        assert len(store.search.grep(GrepQuery(r"call \[X\]", mode="regex"))) == 1

    def test_text_stored_once_reads_back_byte_exact(self, store: Store) -> None:
        """Parts and raw lines that repeat the content are stored as references
        (lossless.store.stored_once) and read back exactly as given."""
        import json

        cid = self.conv(store)
        output = 'line one\nline "two" with a tab\t, é and 😀 ' + "x" * 80
        content = f"[tool_result] {output}"
        asked = "please run the tests in tests/test_store.py now, thanks a lot"
        parts = (
            NewPart("tool_result", output, tool_call_id="call_1"),
            NewPart("text", asked),  # not in the content: stored as it is
            NewPart("text", None),
        )
        lines = [
            json.dumps({"content": output, "toolUseResult": {"stdout": output}, "p": asked}),
            json.dumps({"content": output, "x": 1}, ensure_ascii=True),
            json.dumps({"content": output}, separators=(",", ":")) + "\r",
            '{"content": "not the text"}',
        ]
        records = tuple(NewNativeRecord(f"n{i}", "user", raw) for i, raw in enumerate(lines))
        (m,) = store.messages.append(
            cid, [msg(content, "k1", parts=parts, records=records)]
        ).inserted
        got = store.messages.parts([m.id])[m.id]
        assert [(p.kind, p.text, p.tool_call_id) for p in got] == [
            (p.kind, p.text, p.tool_call_id) for p in parts
        ]
        assert [r.raw for r in store.messages.native_records(cid)] == lines
        by_key = store.messages.native_records_by_key(cid, ["n0", "n2"])
        assert [by_key["n0"].raw, by_key["n2"].raw] == [lines[0], lines[2]]
        hashed = store.messages.hashed_rows(cid)
        assert [h.fields[0] for h in hashed if h.kind == "native_record"] == lines
        assert [h.fields[1] for h in hashed if h.kind == "part"] == [p.text for p in parts]

    def test_rewrite_keeps_referring_parts_and_lines_exact(self, store: Store) -> None:
        """A rewrite of the content leaves the parts and raw lines that referred
        to it as they were (they are stored verbatim again first)."""
        import json

        from lossless.store.contract import PartRewrite

        cid = self.conv(store)
        text = "a long enough assistant text that its part refers to the content"
        raw = json.dumps({"message": {"content": text}})
        (m,) = store.messages.append(
            cid,
            [
                msg(
                    text,
                    "k1",
                    parts=(NewPart("text", text), NewPart("text", text)),
                    records=(NewNativeRecord("n1", "assistant", raw),),
                )
            ],
        ).inserted
        with store.transaction() as tx:
            tx.messages.rewrite(m.id, "[X]", None, [PartRewrite(0, "[X]", None)])
        got = store.messages.parts([m.id])[m.id]
        assert [p.text for p in got] == ["[X]", text]
        assert store.messages.native_records(cid)[0].raw == raw
        hashed = store.messages.hashed_rows(cid)
        from lossless.store.hashing import part_hash, raw_hash

        assert [h.recorded for h in hashed if h.kind == "native_record"] == [raw_hash(raw)]
        assert [h.recorded for h in hashed if h.kind == "part"][1] == part_hash(
            "text", text, None, None
        )

    def test_rows_written_in_full_are_stored_once_later(self, store: Store) -> None:
        import json

        cid = self.conv(store)
        text = "an assistant text long enough that its part and raw line refer to it"
        raw = json.dumps({"message": {"content": text}, "n": 1})
        (m,) = store.messages.append(
            cid,
            [
                msg(
                    text,
                    "k1",
                    parts=(NewPart("text", text),),
                    records=(NewNativeRecord("n1", "assistant", raw),),
                )
            ],
        ).inserted
        store.messages.add_native_records(cid, [NewNativeRecord("p1", "progress", "{}")])
        # A rewrite to the same text stores the rows in full, as before 0010.
        with store.transaction() as tx:
            tx.messages.rewrite(m.id, text, None, [])
        assert store.messages.store_texts_once(cid) == 2
        assert store.messages.store_texts_once(cid) == 0
        assert [p.text for p in store.messages.parts([m.id])[m.id]] == [text]
        assert [r.raw for r in store.messages.native_records(cid)] == [raw, "{}"]

    def test_old_raw_lines_can_be_dropped(self, store: Store) -> None:
        cid = self.conv(store)
        old, new = (
            msg(
                f"{when} message",
                when,
                at=f"{year}-01-01T00:00:00.000Z",
                parts=(NewPart("text", f"{when} message"),),
                records=(NewNativeRecord(when, "user", f'{{"w": "{when}"}}'),),
            )
            for when, year in (("old", 2020), ("new", 2030))
        )
        store.messages.append(cid, [old, new])
        store.messages.add_native_records(cid, [NewNativeRecord("p1", "progress", "{}")])
        cutoff = "2025-01-01T00:00:00.000Z"
        assert store.messages.drop_native_records(created_before=cutoff, dry_run=True) == 1
        assert len(store.messages.native_records(cid)) == 3
        assert store.messages.drop_native_records(created_before=cutoff) == 1
        assert [r.native_key for r in store.messages.native_records(cid)] == ["new", "p1"]
        messages = store.messages.list(cid)
        assert [m.content for m in messages] == ["old message", "new message"]
        parts = store.messages.parts([m.id for m in messages])
        assert [p.text for m in messages for p in parts[m.id]] == ["old message", "new message"]

    def test_rewrite_unknown_rows_is_not_found(self, store: Store) -> None:
        from lossless.errors import NotFoundError
        from lossless.store.contract import PartRewrite

        cid = self.conv(store)
        (m,) = store.messages.append(cid, [msg("x", "k")]).inserted
        with pytest.raises(NotFoundError):
            store.messages.rewrite(m.id + 1000, "y", None)
        with pytest.raises(NotFoundError):
            store.messages.rewrite(m.id, "y", None, [PartRewrite(3, "z", None)])
        assert store.messages.get(m.id).content == "x"  # type: ignore[union-attr]
        with pytest.raises(NotFoundError):
            store.messages.rewrite_native_record(424242, "{}")
        with pytest.raises(NotFoundError):
            store.summaries.rewrite("sum_0000000000000000", "x")
        with pytest.raises(NotFoundError):
            store.quarantine.rewrite(424242, b"x")
        with pytest.raises(NotFoundError):
            store.conversations.rewrite(cid + 1000, title=None, metadata={})
        with pytest.raises(NotFoundError):
            store.files.rewrite(
                "file_0000000000000000",
                path="/x",
                sha256="00" * 32,
                byte_size=1,
                token_count=1,
                exploration_summary="x",
            )

    def test_rewrite_conversation_title_and_metadata(self, store: Store) -> None:
        conv = store.conversations.get_or_create(
            project="p1",
            session_id="s1",
            client="generic",
            title="fix ACME-12345",
            metadata={"cwd": "/srv/ACME-12345", "redactions": {"x": 1}},
        )
        store.conversations.rewrite(conv.id, title="fix [X]", metadata={"cwd": "/srv/[X]"})
        got = store.conversations.get(conv.id)
        assert got is not None
        assert (got.title, got.metadata) == ("fix [X]", {"cwd": "/srv/[X]"})
        assert (got.project, got.session_id, got.client, got.created_at) == (
            conv.project,
            conv.session_id,
            conv.client,
            conv.created_at,
        )
        store.conversations.rewrite(conv.id, title=None, metadata={})
        got = store.conversations.get(conv.id)
        assert got is not None and (got.title, got.metadata) == (None, {})
        with pytest.raises(InputError):
            store.conversations.rewrite(conv.id, title="a\x00", metadata={})

    def test_rewrite_large_file_and_paths_in_use(self, store: Store) -> None:
        cid = self.conv(store)
        a = store.files.create(
            NewLargeFile(
                cid,
                "/f/aa.txt",
                100,
                25,
                "aa" * 32,
                "text/plain",
                "ACME-1 inside",
                original_name="n",
            )
        )
        b = store.files.create(
            NewLargeFile(cid, "/f/aa.txt", 100, 25, "aa" * 32, "text/plain", "ACME-1 inside")
        )
        assert store.files.paths_in_use(["/f/aa.txt", "/f/bb.txt"]) == {"/f/aa.txt"}
        assert store.files.paths_in_use([]) == set()
        with store.transaction() as tx:
            got = tx.files.rewrite(
                a.id,
                path="/f/bb.txt",
                sha256="bb" * 32,
                byte_size=90,
                token_count=20,
                exploration_summary="[X] inside",
            )
        assert got == store.files.get(a.id)
        assert (got.path, got.sha256, got.byte_size, got.token_count) == (
            "/f/bb.txt",
            "bb" * 32,
            90,
            20,
        )
        assert got.exploration_summary == "[X] inside"
        assert (got.conversation_id, got.media_type, got.original_name, got.created_at) == (
            a.conversation_id,
            a.media_type,
            "n",
            a.created_at,
        )
        assert store.files.get(b.id) == b  # the other row is untouched
        assert store.files.paths_in_use(["/f/aa.txt", "/f/bb.txt"]) == {"/f/aa.txt", "/f/bb.txt"}
        store.files.rewrite(
            b.id,
            path="/f/bb.txt",
            sha256="bb" * 32,
            byte_size=90,
            token_count=20,
            exploration_summary="[X] inside",
        )
        assert store.files.paths_in_use(["/f/aa.txt", "/f/bb.txt"]) == {"/f/bb.txt"}

    def test_rewrite_summary_follows_in_search(self, store: Store) -> None:
        cid = self.conv(store)
        (m,) = store.messages.append(cid, [msg("m", "k")]).inserted
        s = store.summaries.create(
            self._summary(cid, "deploy with ACME-12345 key"), message_ids=[m.id]
        )
        store.summaries.rewrite(s.id, "deploy with [X] key")
        got = store.summaries.get(s.id)
        assert got is not None and got.content == "deploy with [X] key"
        assert got.token_count == s.token_count and got.created_at == s.created_at
        for mode in ("full_text", "regex"):
            q = GrepQuery("ACME", mode=mode, scope="summaries")  # type: ignore[arg-type]
            assert store.search.grep(q) == []
        hits = store.search.grep(GrepQuery("deploy", scope="summaries"))
        assert [h.id for h in hits] == [s.id]

    def test_quarantine_rewrite_and_paging(self, store: Store) -> None:
        for line in range(3):
            store.quarantine.add(
                source_path="/q.jsonl",
                line_no=line,
                byte_offset=line * 10,
                error="bad",
                raw=b"secret ACME-1 \xff",
                created_at="2026-01-02T03:04:05.000Z",
            )
        store.quarantine.add(
            source_path="/q.jsonl", line_no=1, byte_offset=10, error="bad", raw=b"[X] \xff"
        )
        kept = store.quarantine.list()
        assert [k.created_at for k in kept[:3]] == ["2026-01-02T03:04:05.000Z"] * 3
        first = store.quarantine.list(limit=2)
        rest = store.quarantine.list(limit=10, after_id=first[-1].id)
        assert [k.id for k in first + rest] == [k.id for k in kept]
        store.quarantine.rewrite(kept[0].id, b"secret [X] \xff")
        # Line 1 is already kept with exactly these bytes: the two become one.
        store.quarantine.rewrite(kept[1].id, b"[X] \xff")
        after = store.quarantine.list()
        assert [(k.line_no, k.raw) for k in after] == [
            (0, b"secret [X] \xff"),
            (2, b"secret ACME-1 \xff"),
            (1, b"[X] \xff"),
        ]
        assert not store.quarantine.add(
            source_path="/q.jsonl", line_no=0, byte_offset=0, error="bad", raw=b"secret [X] \xff"
        )

    def test_scrub_keeps_everything_and_refuses_transactions(self, store: Store) -> None:
        cid = self.conv(store)
        store.messages.append(cid, [msg("kept after scrub", "k")])
        with store.transaction(), pytest.raises(StoreError):
            store.scrub()
        store.scrub()
        assert [m.content for m in store.messages.list(cid)] == ["kept after scrub"]
        assert len(store.search.grep(GrepQuery("scrub"))) == 1

    # -- restoring exported records ------------------------------------

    def test_restore_summaries_files_context_verbatim(self, store: Store) -> None:
        from lossless.models import ContextItem, LargeFile, Summary

        cid = self.conv(store)
        ms = store.messages.append(cid, [msg(f"m{i}", f"k{i}") for i in range(4)]).inserted
        leaf = Summary(
            id="sum_00000000000000aa",
            conversation_id=cid,
            kind="leaf",
            depth=0,
            content="leaf text",
            token_count=3,
            earliest_at="2026-01-01T00:00:00.000Z",
            latest_at="2026-01-01T00:01:00.000Z",
            descendant_count=0,
            source_token_count=8,
            created_at="2025-12-31T23:59:59.000Z",
            file_ids=("file_00000000000000ff",),
            metadata={"b": 1, "a": 2},
        )
        top = Summary(
            id="sum_0000000000000001",  # sorts before the leaf: order must come from calls
            conversation_id=cid,
            kind="condensed",
            depth=1,
            content="top text",
            token_count=2,
            earliest_at=None,
            latest_at=None,
            descendant_count=1,
            source_token_count=3,
            created_at="2025-12-31T23:59:59.000Z",
        )
        assert store.summaries.restore(leaf, message_ids=[ms[1].id, ms[0].id])
        assert store.summaries.restore(top, source_summary_ids=[leaf.id])
        assert not store.summaries.restore(leaf, message_ids=[ms[2].id])
        assert store.summaries.get(leaf.id) == leaf
        assert store.summaries.list(cid) == [leaf, top]
        assert store.summaries.source_message_ids(leaf.id) == [ms[1].id, ms[0].id]
        assert store.summaries.source_summary_ids(top.id) == [leaf.id]
        assert [h.id for h in store.search.grep(GrepQuery("leaf", scope="summaries"))] == [leaf.id]

        f = LargeFile(
            id="file_00000000000000ff",
            conversation_id=cid,
            message_id=ms[0].id,
            path="/x/f.txt",
            byte_size=10,
            token_count=3,
            sha256="cd" * 32,
            media_type="text/plain",
            exploration_summary="prose",
            original_name="f.txt",
            created_at="2020-01-01T00:00:00.000Z",
        )
        assert store.files.restore(f)
        assert not store.files.restore(f)
        assert store.files.get(f.id) == f

        items = [
            ContextItem(cid, 0, "summary", None, top.id, 2),
            ContextItem(cid, 4, "message", ms[2].id, None, 7),
            ContextItem(cid, 5, "message", ms[3].id, None, 9),
        ]
        store.context.append_messages(cid, ms)
        store.context.restore(cid, items)
        assert store.context.list(cid) == items
        assert store.context.token_total(cid) == 18
        store.context.append_messages(cid, [ms[0]])
        assert store.context.list(cid)[-1].ordinal == 6

    def test_restore_memory_verbatim(self, store: Store) -> None:
        from lossless.store.contract import Memory, NewMemory

        cid = self.conv(store)
        memory = Memory(
            id="mem_00000000000000ab",
            project="p1",
            text="Use uv, not pip.",
            tags=("tooling", "python"),
            confidence=0.75,
            source_summary_id=None,
            source_conversation_id=cid,
            created_at="2024-05-05T05:05:05.000Z",
            text_hash="ignored: recomputed",
            last_surfaced_at="2024-06-01T00:00:00.000Z",
            last_used_at=None,
            surfaced_count=3,
            used_count=1,
            archived=True,
        )
        assert store.memory.restore(memory)
        got = store.memory.get(memory.id)
        assert got is not None
        from lossless.store.contract import memory_text_hash

        assert got == Memory(**{**_fields(memory), "text_hash": memory_text_hash(memory.text)})
        assert not store.memory.restore(memory)
        other = Memory(**{**_fields(memory), "id": "mem_00000000000000ac"})
        assert not store.memory.restore(other)  # same project and text: the stored one stands
        assert store.memory.get(other.id) is None
        write = store.memory.create(NewMemory(project="p1", text="use uv not pip"))
        assert not write.created and write.memory.id == memory.id


def _fields(record: object) -> dict[str, object]:
    import dataclasses

    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}  # type: ignore[arg-type]
