"""Backend-neutral conformance suite for ``VectorRepository`` (synthetic vectors).

Subclass ``VectorConformance`` and provide a ``store_factory`` fixture. The
vectors are made here (no model needed), so what is checked is the store:
the backlog, chunks, filters, ranking and what a rewrite forgets.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from tests.store.conformance import StoreFactory

from lossless.models import NewMessage
from lossless.store.contract import NewMemory, NewVector, Store

M = "test-model"
DIM = 384


def unit(*weights: float) -> tuple[float, ...]:
    """A unit vector with the given leading components (the rest 0)."""
    raw = [*weights, *([0.0] * (DIM - len(weights)))]
    norm = math.sqrt(sum(x * x for x in raw))
    return tuple(x / norm for x in raw)


class VectorConformance:
    @pytest.fixture
    def store(self, store_factory: StoreFactory) -> Iterator[Store]:
        store = store_factory()
        if store.capabilities.vector_search is None:
            pytest.fail("this store was expected to have vector search")
        yield store
        store.close()

    def messages(self, store: Store, project: str, session: str, texts: list[str]) -> list[int]:
        conv = store.conversations.get_or_create(project=project, session_id=session, client="t")
        result = store.messages.append(conv.id, [NewMessage(role="user", content=t) for t in texts])
        return [m.id for m in result.inserted]

    def test_backlog_is_every_item_without_a_chunk_zero(self, store: Store) -> None:
        ids = self.messages(store, "p", "s", ["alpha", "beta", ""])
        store.memory.create(NewMemory(project="p", text="a fact", tags=("t1",)))
        progress = store.vectors.progress(M)
        assert progress.pending == {"memory": 1, "summary": 0, "file": 0, "message": 3}
        pending = store.vectors.pending(M, limit=10)
        assert [p.kind for p in pending] == ["memory", "message", "message", "message"]
        assert pending[0].text == "a fact t1" and pending[0].conversation_id is None
        assert [p.ref for p in pending[1:]] == [str(i) for i in ids]
        assert [p.ref for p in store.vectors.pending(M, limit=10, after_message_id=ids[0])][1:] == [
            str(i) for i in ids[1:]
        ]
        conv = pending[1].conversation_id
        added = store.vectors.add(
            M,
            [
                NewVector("memory", pending[0].ref, 0, None, unit(1, 0)),
                NewVector("message", str(ids[0]), 0, conv, unit(0, 1)),
                NewVector("message", str(ids[0]), 1, conv, unit(1, 1)),
                NewVector("message", str(ids[2]), 0, conv, None),  # nothing to embed
            ],
        )
        assert added == 4
        # Adding again keeps what is stored.
        assert store.vectors.add(M, [NewVector("message", str(ids[0]), 0, conv, unit(1))]) == 0
        after = store.vectors.progress(M)
        assert after.pending["message"] == 1 and after.embedded["message"] == 2
        assert after.embedded["memory"] == 1 and after.total_pending == 1
        assert [p.ref for p in store.vectors.pending(M, limit=10)] == [str(ids[1])]
        # Another model has its own backlog.
        assert store.vectors.progress("other").total_pending == 4

    def test_nearest_ranks_items_by_their_best_chunk(self, store: Store) -> None:
        a, b, c = self.messages(store, "p", "s", ["a", "b", "c"])
        conv = store.messages.get(a).conversation_id  # type: ignore[union-attr]
        store.vectors.add(
            M,
            [
                NewVector("message", str(a), 0, conv, unit(1, 0, 0)),
                NewVector("message", str(b), 0, conv, unit(0, 1, 0)),
                NewVector("message", str(b), 1, conv, unit(0.9, 0.1, 0)),
                NewVector("message", str(c), 0, conv, unit(0, 0, 1)),
            ],
        )
        hits = store.vectors.nearest(M, unit(1, 0, 0), limit=3)
        assert [h.ref for h in hits] == [str(a), str(b), str(c)]
        assert hits[0].score == pytest.approx(1.0, abs=0.01)
        assert hits[1].score == pytest.approx(0.9 / math.sqrt(0.82), abs=0.01)
        assert hits[2].score == pytest.approx(0.0, abs=0.01)
        assert len(store.vectors.nearest(M, unit(1), limit=1)) == 1
        assert store.vectors.nearest("other", unit(1), limit=3) == []
        sims = store.vectors.similarities(
            M, unit(0, 0, 1), [("message", str(c)), ("message", "999")]
        )
        assert sims == {("message", str(c)): pytest.approx(1.0, abs=0.01)}

    def test_filters_by_kind_project_conversation_and_archive(self, store: Store) -> None:
        (here,) = self.messages(store, "p", "s1", ["here"])
        (there,) = self.messages(store, "q", "s2", ["there"])
        conv_here = store.messages.get(here).conversation_id  # type: ignore[union-attr]
        conv_there = store.messages.get(there).conversation_id  # type: ignore[union-attr]
        kept = store.memory.create(NewMemory(project="p", text="kept")).memory.id
        other = store.memory.create(NewMemory(project="q", text="other")).memory.id
        gone = store.memory.create(NewMemory(project="p", text="gone")).memory.id
        store.memory.archive(gone)
        store.vectors.add(
            M,
            [
                NewVector("message", str(here), 0, conv_here, unit(1, 0.1)),
                NewVector("message", str(there), 0, conv_there, unit(1, 0.2)),
                NewVector("memory", kept, 0, None, unit(1, 0.3)),
                NewVector("memory", other, 0, None, unit(1, 0.4)),
                NewVector("memory", gone, 0, None, unit(1)),
            ],
        )
        refs = lambda **kw: {h.ref for h in store.vectors.nearest(M, unit(1), limit=10, **kw)}  # noqa: E731
        assert refs() == {str(here), str(there), kept, other}
        assert refs(project="p") == {str(here), kept}
        assert refs(conversation_id=conv_there) == {str(there)}
        assert refs(kinds=["memory"]) == {kept, other}
        assert refs(kinds=["message"], project="q") == {str(there)}

    def test_a_rewritten_text_forgets_its_vectors(self, store: Store) -> None:
        (first,) = self.messages(store, "p", "s", ["secret text"])
        conv = store.messages.get(first).conversation_id  # type: ignore[union-attr]
        memory = store.memory.create(NewMemory(project="p", text="old fact")).memory.id
        store.vectors.add(
            M,
            [
                NewVector("message", str(first), 0, conv, unit(1)),
                NewVector("message", str(first), 1, conv, unit(0, 1)),
                NewVector("memory", memory, 0, None, unit(0, 0, 1)),
            ],
        )
        assert store.vectors.progress(M).total_pending == 0
        assert len(store.vectors.nearest(M, unit(1), limit=5)) == 2
        store.messages.rewrite(first, "[redacted] text", None)
        store.memory.rewrite(memory, "new fact", [])
        assert store.vectors.progress(M).pending == {
            "memory": 1,
            "summary": 0,
            "file": 0,
            "message": 1,
        }
        assert store.vectors.nearest(M, unit(1), limit=5) == []
        assert {p.text for p in store.vectors.pending(M, limit=5)} == {
            "new fact",
            "[redacted] text",
        }

    def test_neighbourhoods_are_the_embedded_turns_around_a_message(self, store: Store) -> None:
        ids = self.messages(store, "p", "s", ["t0", "t1", "t2", "t3", "t4"])
        (elsewhere,) = self.messages(store, "p", "s2", ["other conversation"])
        conv = store.messages.get(ids[0]).conversation_id  # type: ignore[union-attr]
        other = store.messages.get(elsewhere).conversation_id  # type: ignore[union-attr]
        store.vectors.add(
            M,
            [
                *(
                    NewVector("message", str(i), 0, conv, unit(*([0.0] * n), 1.0))
                    for n, i in enumerate(ids)
                    if n != 3  # t3 has no vector yet
                ),
                NewVector("message", str(ids[2]), 1, conv, unit(0, 0, 0, 0, 0, 1)),
                NewVector("message", str(elsewhere), 0, other, unit(1)),
            ],
        )
        hoods = store.vectors.neighbourhoods(M, [ids[2], ids[0], 999], before=2, after=2)
        assert set(hoods) == {ids[2], ids[0]}
        around = hoods[ids[2]]
        # Its own chunk 0 (not chunk 1), t0, t1 and t4; t3 has no vector.
        assert [(n.offset, n.message_id) for n in around] == [
            (-2, ids[0]),
            (-1, ids[1]),
            (0, ids[2]),
            (2, ids[4]),
        ]
        own = around[2].vector
        norm = math.sqrt(sum(x * x for x in own))
        assert [round(x / norm, 2) for x in own[:3]] == [0.0, 0.0, 1.0]
        assert [(n.offset, n.message_id) for n in hoods[ids[0]]] == [
            (0, ids[0]),
            (1, ids[1]),
            (2, ids[2]),
        ]
        assert store.vectors.neighbourhoods(M, [ids[2]], before=0, after=0) == {ids[2]: [around[2]]}
        assert store.vectors.neighbourhoods("other", [ids[2]], before=2, after=2) == {}
        assert store.vectors.neighbourhoods(M, [], before=2, after=2) == {}
        # A message without a vector still has a neighbourhood; one embedded
        # after a search appears in the next.
        assert [
            (n.offset, n.message_id)
            for n in store.vectors.neighbourhoods(M, [ids[3]], before=1, after=1)[ids[3]]
        ] == [(-1, ids[2]), (1, ids[4])]
        store.vectors.add(M, [NewVector("message", str(ids[3]), 0, conv, unit(0, 1))])
        assert [
            (n.offset, n.message_id)
            for n in store.vectors.neighbourhoods(M, [ids[3]], before=1, after=1)[ids[3]]
        ] == [(-1, ids[2]), (0, ids[3]), (1, ids[4])]
