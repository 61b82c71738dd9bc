"""The conversation list's sort keys, kept between requests, follow the store."""

from __future__ import annotations

from pathlib import Path

from lossless.engine.engine import Engine
from lossless.ui.listing import ListRequest, SortKeys, list_conversations


def _order(engine: Engine, keys: SortKeys, sort: str) -> list[str]:
    page = list_conversations(engine, ListRequest(sort=sort), keys)  # type: ignore[arg-type]
    return [row["session_id"] for row in page["rows"]]


def test_kept_sort_keys_follow_new_messages_and_conversations(tmp_path: Path) -> None:
    with Engine.open(tmp_path) as engine:
        for n, session in enumerate(("old", "middle", "new")):
            engine.conversation(session).ingest(
                [
                    {
                        "role": "user",
                        "content": f"message {i} of {session}",
                        "created_at": f"2026-01-0{n + 1}T00:00:0{i}.000Z",
                    }
                    for i in range(n + 1)
                ]
            )
        keys = SortKeys()
        assert _order(engine, keys, "last") == ["new", "middle", "old"]
        assert _order(engine, keys, "messages") == ["new", "middle", "old"]
        # Paging and filtering again reuse the kept keys; a message added anywhere
        # is seen at once.
        engine.conversation("old").ingest(
            [
                {"role": "user", "content": f"later {i}", "created_at": "2026-02-01T00:00:00.000Z"}
                for i in range(5)
            ]
        )
        assert _order(engine, keys, "last") == ["old", "new", "middle"]
        assert _order(engine, keys, "messages") == ["old", "new", "middle"]
        engine.conversation("newest").ingest(
            [{"role": "user", "content": "hi", "created_at": "2026-03-01T00:00:00.000Z"}]
        )
        assert _order(engine, keys, "last")[0] == "newest"
