"""Backend-neutral conformance suite for ``MemoryRepository``.

Subclass ``MemoryConformance`` and provide a ``store_factory`` fixture (same
shape as for ``StoreConformance``: each call opens a new store on the same
database).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.store.conformance import StoreFactory

from lossless.errors import InputError, NotFoundError
from lossless.models import NewSummary
from lossless.store.contract import (
    NewMemory,
    Store,
    memory_text_hash,
    normalize_memory_text,
)

T0 = "2026-01-01T00:00:00.000Z"
T1 = "2026-01-02T00:00:00.000Z"


class MemoryConformance:
    @pytest.fixture
    def store(self, store_factory: StoreFactory) -> Iterator[Store]:
        store = store_factory()
        yield store
        store.close()

    def add(self, store: Store, text: str, project: str = "p", **kw: object) -> str:
        return store.memory.create(NewMemory(project=project, text=text, **kw)).memory.id  # type: ignore[arg-type]

    # -- create / dedupe -------------------------------------------------

    def test_create_and_get_round_trip(self, store: Store) -> None:
        conv = store.conversations.get_or_create(project="p", session_id="s", client="api")
        summary = store.summaries.create(
            NewSummary(conv.id, "leaf", 0, "We decided to use uv.", 5, None, None)
        )
        write = store.memory.create(
            NewMemory(
                project="p",
                text="  We use uv, not pip.  ",
                tags=("tooling", " python ", "", "tooling"),
                confidence=0.75,
                source_summary_id=summary.id,
                source_conversation_id=conv.id,
                created_at=T0,
            )
        )
        m = write.memory
        assert write.created
        assert m.id.startswith("mem_") and len(m.id) == 20
        int(m.id[4:], 16)
        assert m.text == "We use uv, not pip."
        assert m.tags == ("tooling", "python")
        assert m.confidence == 0.75
        assert (m.source_summary_id, m.source_conversation_id) == (summary.id, conv.id)
        assert m.created_at == T0
        assert (m.surfaced_count, m.used_count, m.archived) == (0, 0, False)
        assert m.last_surfaced_at is None and m.last_used_at is None
        assert m.text_hash == memory_text_hash("we use uv not pip")
        assert store.memory.get(m.id) == m
        assert store.memory.get("mem_0000000000000000") is None

    def test_normalization_rule(self) -> None:
        assert normalize_memory_text("Use UV,  not   pip!") == "use uv not pip"
        assert normalize_memory_text("ｕｓｅ uv") == "use uv"  # NFKC full-width
        assert normalize_memory_text("always X") != normalize_memory_text("never X")

    def test_near_duplicate_returns_existing_and_reinforces(self, store: Store) -> None:
        first = store.memory.create(
            NewMemory(project="p", text="Use uv, not pip.", tags=("a",), confidence=0.5)
        )
        again = store.memory.create(
            NewMemory(project="p", text="use UV not pip", tags=("b", "a"), confidence=0.9)
        )
        assert not again.created
        assert again.memory.id == first.memory.id
        assert again.memory.text == "Use uv, not pip."
        assert again.memory.tags == ("a", "b")
        assert again.memory.confidence == 0.9
        lower = store.memory.create(NewMemory(project="p", text="USE uv not pip", confidence=0.1))
        assert lower.memory.confidence == 0.9
        assert len(store.memory.list()) == 1

    def test_same_text_in_other_project_is_separate(self, store: Store) -> None:
        a = self.add(store, "Run the linter", project="alpha")
        b = self.add(store, "Run the linter", project="beta")
        assert a != b
        assert [m.id for m in store.memory.list(project="alpha")] == [a]

    def test_archived_duplicate_stays_archived(self, store: Store) -> None:
        mid = self.add(store, "Never push to main")
        store.memory.archive(mid)
        again = store.memory.create(NewMemory(project="p", text="never push to main", tags=("x",)))
        assert not again.created and again.memory.id == mid
        assert again.memory.archived and again.memory.tags == ()

    def test_invalid_input_is_refused(self, store: Store) -> None:
        for bad in (
            NewMemory(project="p", text="   "),
            NewMemory(project="p", text="a\x00b"),
            NewMemory(project="p", text="x", confidence=1.5),
            NewMemory(project="p", text="x", confidence=-0.1),
            NewMemory(project="p", text="x", source_summary_id="sum_0000000000000000"),
            NewMemory(project="p", text="x", source_conversation_id=987654),
        ):
            with pytest.raises(InputError):
                store.memory.create(bad)
        assert store.memory.list(include_archived=True) == []

    # -- list / archive ---------------------------------------------------

    def test_list_order_and_archive_filter(self, store: Store) -> None:
        b = self.add(store, "second", created_at=T1)
        a = self.add(store, "first", created_at=T0)
        c = self.add(store, "third", created_at=T1)
        assert [m.id for m in store.memory.list()] == [a, *sorted([b, c])]
        assert store.memory.archive(b).archived
        assert [m.id for m in store.memory.list()] == [a, c]
        assert {m.id for m in store.memory.list(include_archived=True)} == {a, b, c}
        assert not store.memory.revive(b).archived
        assert len(store.memory.list()) == 3

    def test_archive_unknown_is_not_found(self, store: Store) -> None:
        for call in (store.memory.archive, store.memory.revive):
            with pytest.raises(NotFoundError):
                call("mem_ffffffffffffffff")
        with pytest.raises(NotFoundError):
            store.memory.record_used("mem_ffffffffffffffff", T0)

    # -- search ------------------------------------------------------------

    def test_search_ranks_by_relevance_and_filters(self, store: Store) -> None:
        for i in range(6):
            self.add(store, f"filler note number {i} about lunch")
        best = self.add(
            store, "Postgres migrations run with advisory locks; migrations are ordered"
        )
        weak = self.add(store, "Postgres is the optional backend")
        other = self.add(store, "Postgres migrations elsewhere", project="q")
        hits = store.memory.search("postgres migrations", project="p")
        assert [h.memory.id for h in hits] == [best, weak]
        assert hits[0].score > hits[1].score
        assert other in [h.memory.id for h in store.memory.search("postgres migrations")]
        assert store.memory.search("postgres", project="p", limit=1)[0].memory.id in {best, weak}
        assert store.memory.search("postgres", limit=0) == []
        store.memory.archive(best)
        assert [h.memory.id for h in store.memory.search("advisory", project="p")] == []
        assert [
            h.memory.id for h in store.memory.search("advisory", project="p", include_archived=True)
        ] == [best]

    def test_search_matches_tags(self, store: Store) -> None:
        tagged = self.add(store, "Keep functions small", tags=("style-guide",))
        self.add(store, "Unrelated memory text")
        assert [h.memory.id for h in store.memory.search("guide")] == [tagged]

    def test_search_sees_merged_tags(self, store: Store) -> None:
        mid = self.add(store, "Deploy on Fridays is forbidden")
        store.memory.create(
            NewMemory(project="p", text="deploy on fridays is forbidden", tags=("release",))
        )
        assert [h.memory.id for h in store.memory.search("release")] == [mid]

    def test_search_without_words_is_refused(self, store: Store) -> None:
        with pytest.raises(InputError):
            store.memory.search("  ?! ")

    def test_search_is_safe_with_fts_syntax(self, store: Store) -> None:
        mid = self.add(store, 'He said "NOT" AND (maybe) OR* never')
        assert [h.memory.id for h in store.memory.search('"NOT" AND (maybe) OR*')] == [mid]

    # -- feedback -----------------------------------------------------------

    def test_surfaced_and_used_counters(self, store: Store) -> None:
        a = self.add(store, "alpha fact")
        b = self.add(store, "beta fact")
        store.memory.record_surfaced([a, b, a, "mem_doesnotexist0000"], T0)
        store.memory.record_surfaced([a], T1)
        got_a, got_b = store.memory.get(a), store.memory.get(b)
        assert got_a is not None and got_b is not None
        assert (got_a.surfaced_count, got_a.last_surfaced_at) == (2, T1)
        assert (got_b.surfaced_count, got_b.last_surfaced_at) == (1, T0)
        used = store.memory.record_used(b, T1)
        assert (used.used_count, used.last_used_at) == (1, T1)
        store.memory.record_surfaced([], T1)

    # -- durability / transactions ----------------------------------------

    def test_visible_from_another_connection(self, store_factory: StoreFactory) -> None:
        one = store_factory()
        mid = one.memory.create(NewMemory(project="p", text="persisted fact")).memory.id
        one.close()
        two = store_factory()
        try:
            got = two.memory.get(mid)
            assert got is not None and got.text == "persisted fact"
            assert [h.memory.id for h in two.memory.search("persisted")] == [mid]
        finally:
            two.close()

    def test_rolled_back_transaction_leaves_nothing(self, store: Store) -> None:
        with pytest.raises(RuntimeError), store.transaction() as tx:
            tx.memory.create(NewMemory(project="p", text="ghost memory"))
            raise RuntimeError("boom")
        assert store.memory.list(include_archived=True) == []
        with pytest.raises(InputError):
            store.memory.search("")
        assert store.memory.search("ghost") == []

    # -- rewriting (sensitive purge) ----------------------------------------

    def test_rewrite_replaces_text_tags_and_hash_and_search_follows(self, store: Store) -> None:
        mid = self.add(store, "Deploy key ACME-12345 lives in vault", tags=("ACME-12345", "ops"))
        store.memory.record_used(mid, T0)
        got = store.memory.rewrite(mid, "  Deploy key [X] lives in vault ", ["[X]", "ops", "ops"])
        assert got.id == mid
        assert got.text == "Deploy key [X] lives in vault"
        assert got.tags == ("[X]", "ops")
        assert got.text_hash == memory_text_hash("Deploy key [X] lives in vault")
        assert (got.used_count, got.last_used_at) == (1, T0)
        assert store.memory.get(mid) == got
        for word in ("ACME", "12345"):
            assert store.memory.search(word) == []
        assert [h.memory.id for h in store.memory.search("vault")] == [mid]
        assert [h.memory.id for h in store.memory.search("ops")] == [mid]
        # The old hash no longer blocks the old text, the new one dedupes the new.
        assert store.memory.create(NewMemory(project="p", text="deploy key [x] lives in vault"))
        assert len(store.memory.list()) == 1

    def test_rewrite_onto_an_existing_memory_merges_the_two(self, store: Store) -> None:
        kept = self.add(store, "Ticket [X] is blocked", tags=("a",), confidence=0.4)
        gone = self.add(store, "Ticket ACME-1 is blocked", tags=("b",), confidence=0.9)
        store.memory.record_surfaced([kept], T0)
        store.memory.record_surfaced([gone], T1)
        store.memory.record_used(gone, T1)
        store.memory.archive(kept)
        merged = store.memory.rewrite(gone, "Ticket [X] is blocked", ["b", "c"])
        assert merged.id == kept
        assert merged.text == "Ticket [X] is blocked"
        assert merged.tags == ("a", "b", "c")
        assert merged.confidence == 0.9
        assert (merged.surfaced_count, merged.last_surfaced_at) == (2, T1)
        assert (merged.used_count, merged.last_used_at) == (1, T1)
        # The rewritten memory was visible: what it said stays visible.
        assert not merged.archived
        assert store.memory.get(gone) is None
        assert [m.id for m in store.memory.list(include_archived=True)] == [kept]
        assert [h.memory.id for h in store.memory.search("blocked")] == [kept]
        assert store.memory.search("ACME") == []

    def test_rewrite_merge_of_two_archived_stays_archived(self, store: Store) -> None:
        kept = self.add(store, "old [X] note")
        gone = self.add(store, "old ACME-1 note")
        store.memory.archive(kept)
        store.memory.archive(gone)
        assert store.memory.rewrite(gone, "old [X] note", []).archived

    def test_rewrite_refuses_unknown_and_empty(self, store: Store) -> None:
        mid = self.add(store, "keep me")
        with pytest.raises(NotFoundError):
            store.memory.rewrite("mem_0000000000000000", "x", [])
        with pytest.raises(InputError):
            store.memory.rewrite(mid, "   ", [])
        with pytest.raises(InputError):
            store.memory.rewrite(mid, "a\x00b", [])
        assert store.memory.get(mid).text == "keep me"  # type: ignore[union-attr]
