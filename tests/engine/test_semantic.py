"""Semantic search end to end on a real SQLite file with the real bundled model.

Skipped (with the install command) where the ``semantic`` extra is absent;
CI installs it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lossless import Engine
from lossless.embeddings import loader
from lossless.embeddings.chunks import chunk_text
from lossless.embeddings.models import DEFAULT_MODEL, spec_of
from lossless.errors import InputError
from lossless.models import NewMessage
from lossless.store.contract import NewMemory, NewVector
from lossless.store.vector_codec import to_int8
from lossless.worker import Worker

needs_model = pytest.mark.skipif(
    not loader.installed(DEFAULT_MODEL),
    reason="semantic extra not installed: pip install -e '.[semantic]'",
)

STORY = [
    "We moved the billing service to a new database cluster last week.",
    "I adopted a puppy named Rex from the shelter on Saturday.",
    "The flaky import test fails when the cursor anchor is missing.",
    "",
]


def test_chunks_stay_within_the_window_and_cut_at_breaks() -> None:
    text = ("word " * 50 + "\n\n") * 10
    chunks = chunk_text(text, 300, 100)
    assert chunks and all(len(c) <= 300 for c in chunks)
    assert "".join(c.replace(" ", "").replace("\n", "") for c in chunks) == text.replace(
        " ", ""
    ).replace("\n", "")
    assert len(chunk_text(text, 300, 2)) == 2
    assert chunk_text("   \n ", 300, 4) == []


def test_int8_encoding_refuses_bad_vectors() -> None:
    assert len(to_int8([0.5] * 384)) == 384
    with pytest.raises(InputError, match="components"):
        to_int8([0.5] * 3)
    with pytest.raises(InputError, match="finite"):
        to_int8([float("nan")] * 384)
    with pytest.raises(InputError, match="zero vector"):
        to_int8([0.0] * 384)


def test_weights_with_another_checksum_are_refused(tmp_path: Path) -> None:
    spec = dataclasses.replace(spec_of(DEFAULT_MODEL), size_bytes=4)
    fake = tmp_path / "weights.bin"
    fake.write_bytes(b"evil")
    with pytest.raises(loader.SemanticUnavailable, match="SHA-256"):
        loader.verify_weights(spec, fake)
    with pytest.raises(loader.SemanticUnavailable, match="are 4 bytes, expected 5"):
        loader.verify_weights(dataclasses.replace(spec, size_bytes=5), fake)


@pytest.fixture(autouse=True)
def _semantic_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite turns embedding off (tests/conftest.py); these tests are about it."""
    monkeypatch.setenv("LCM_SEMANTIC_ENABLED", "true")


def _engine(home: Path) -> Engine:
    engine = Engine.open(home)
    chat = engine.conversation("s1", project="/work/p", client="generic")
    chat.ingest([NewMessage(role="user", content=t) for t in STORY])
    return engine


@needs_model
def test_backlog_embeds_and_search_finds_a_paraphrase(tmp_path: Path) -> None:
    with _engine(tmp_path / "home") as engine:
        before = engine.semantic_status()
        assert before.active and before.progress is not None
        assert before.progress.pending["message"] == 4
        found = engine.search("dog", project="/work/p")
        # Nothing embedded yet: lexical only, and it says how much is covered.
        assert "0 of 4 items embedded" in (found.semantic or "")
        assert all(h.matched == ("lexical",) for h in found)
        run = engine.embed()
        assert run.items == 4 and run.chunks == 3  # the empty message has no chunk
        assert engine.semantic_status().progress.total_pending == 0  # type: ignore[union-attr]
        hits = engine.search("dog", project="/work/p")
        assert hits.hybrid and "everything embedded" in (hits.semantic or "")
        assert hits[0].text == STORY[1] and hits[0].matched == ("semantic",)
        both = engine.search("flaky import test", project="/work/p")
        assert both[0].id == "3" and both[0].matched == ("lexical", "semantic")
        assert engine.embed().items == 0


@needs_model
def test_memories_are_embedded_and_rank_above_an_equal_message(tmp_path: Path) -> None:
    with _engine(tmp_path / "home") as engine:
        engine.store.memory.create(NewMemory(project="/work/p", text=STORY[2]))
        engine.embed()
        hits = engine.search("flaky import test", project="/work/p")
        assert [h.kind for h in hits[:2]] == ["memory", "message"]
        assert engine.search("flaky import test", project="/other").__len__() == 0


@needs_model
def test_rewritten_text_loses_its_vector_and_is_embedded_again(tmp_path: Path) -> None:
    with _engine(tmp_path / "home") as engine:
        engine.embed()
        store = engine.store
        store.vectors.add(DEFAULT_MODEL, [NewVector("message", "1", 0, 1, None)])  # kept as is
        with store.transaction() as tx:
            tx.memory.create(NewMemory(project="/work/p", text="remember the shelter"))
        assert store.vectors.progress(DEFAULT_MODEL).pending["memory"] == 1
        memory = store.memory.list()[0]
        engine.embed()
        store.memory.rewrite(memory.id, "remember the vet", [])
        assert store.vectors.progress(DEFAULT_MODEL).pending["memory"] == 1
        assert engine.embed().items == 1


@needs_model
def test_the_worker_embeds_the_backlog(tmp_path: Path) -> None:
    with _engine(tmp_path / "home") as engine:
        report = Worker(engine).run(once=True)
        assert report.embedded == 4 and report.embedding_error is None
        assert engine.semantic_status().progress.total_pending == 0  # type: ignore[union-attr]


def test_search_without_semantic_is_lexical_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LCM_SEMANTIC_ENABLED", "false")
    with _engine(tmp_path / "home") as engine:
        hits = engine.search("flaky import", project="/work/p")
        assert not hits.hybrid and "semantic.enabled = false" in (hits.semantic or "")
        assert hits[0].matched == ("lexical",)
        with pytest.raises(loader.SemanticUnavailable, match=r"semantic\.enabled"):
            engine.embed()


@needs_model
def test_lcm_import_hands_the_embedding_backlog_to_the_worker(
    tmp_path: Path, lcm_home: Path
) -> None:
    import contextlib
    import json
    import os
    import signal
    import time

    from click.testing import CliRunner

    from lossless.cli import cli

    source = tmp_path / "chat.jsonl"
    source.write_text(
        "\n".join(json.dumps({"role": "user", "content": text}) for text in STORY[:3]) + "\n"
    )
    result = CliRunner().invoke(
        cli, ["import", str(source), "--kind", "generic", "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    # The import embedded nothing itself: a detached worker does it.
    assert report["embedding_backlog"] == 3 and report["worker_pid"]
    try:
        deadline = time.monotonic() + 120
        with Engine.open(lcm_home) as engine:
            while engine.semantic_status().progress.total_pending:  # type: ignore[union-attr]
                assert time.monotonic() < deadline, (lcm_home / "logs" / "worker.log").read_text()
                time.sleep(0.2)
            assert engine.search("dog")[0].text == STORY[1]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(report["worker_pid"], signal.SIGTERM)
    plain = CliRunner().invoke(cli, ["import", str(source), "--kind", "generic"])
    assert "to embed" not in plain.stderr  # nothing left: nothing said


@needs_model
def test_a_query_embedded_beside_the_full_text_search_ranks_as_one_embedded_first(
    tmp_path: Path,
) -> None:
    from lossless.engine.search import PendingQueryVector, QueryVector, search_all

    with _engine(tmp_path / "home") as engine:
        embedder = loader.load_embedder(DEFAULT_MODEL)
        # Stored by the query path (no batch model to load: this test is about search).
        engine.store.vectors.add(
            DEFAULT_MODEL,
            [
                NewVector("message", str(i), 0, 1, embedder.query(t))
                for i, t in enumerate(STORY[:3], 1)
            ],
        )
        for query in ("dog", "flaky import test"):
            first = QueryVector(DEFAULT_MODEL, embedder.query(query))
            now = "2026-12-01T00:00:00Z"
            want = search_all(engine.store, query, semantic=first, now=now)
            beside = PendingQueryVector(DEFAULT_MODEL, lambda q=query: embedder.query(q))
            got = search_all(engine.store, query, semantic=beside, now=now)
            assert got.hybrid and list(got) == list(want) and "semantic" in got[0].matched


def test_a_query_embedding_that_fails_fails_the_search(tmp_path: Path) -> None:
    from lossless.engine.search import PendingQueryVector, search_all

    def broken() -> list[float]:
        raise RuntimeError("the model's engine crashed")

    with _engine(tmp_path / "home") as engine, pytest.raises(RuntimeError, match="crashed"):
        search_all(engine.store, "flaky", semantic=PendingQueryVector(DEFAULT_MODEL, broken))
