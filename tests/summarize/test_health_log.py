"""A failing summarizer is logged once in hooks.log, not on every turn, and its
recovery once."""

from __future__ import annotations

from pathlib import Path

from lossless.engine.engine import Engine
from lossless.summarize.health import note_summarizer_health


def _chat(engine: Engine, session: str) -> int:
    chat = engine.conversation(session, project="p")
    chat.ingest(
        [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"step {i}: " + "x y " * 80}
            for i in range(60)
        ]
    )
    return chat.id


def test_logged_once_per_cause_then_recovery(tmp_path: Path) -> None:
    home = tmp_path / "home"
    broken = Engine.open(
        home,
        summarizer_provider="command",
        summarizer_command="false",
        summarizer_retries=0,
        fresh_tail_count=4,
        leaf_chunk_tokens=400,
    )
    log = broken.config.log_dir / "hooks.log"
    for session in ("a", "b", "c"):  # three "turns", each compacting with fallbacks
        result = broken.compactor().sweep(_chat(broken, session))
        assert result.levels.get("fallback")
        note_summarizer_health(broken.config, [result])
    broken.close()
    lines = log.read_text("utf-8").splitlines()
    assert len(lines) == 1, lines
    assert "fell back to truncation" in lines[0] and "'false'" in lines[0]

    script = tmp_path / "summarize.sh"
    script.write_text("#!/bin/sh\ncat > /dev/null\necho 'Steps were taken.'\n")
    script.chmod(0o755)
    working = Engine.open(
        home,
        summarizer_provider="command",
        summarizer_command=str(script),
        fresh_tail_count=4,
        leaf_chunk_tokens=400,
    )
    result = working.compactor().sweep(_chat(working, "d"))
    assert result.levels.get("normal")
    assert note_summarizer_health(working.config, [result]) is not None
    assert note_summarizer_health(working.config, [result]) is None  # only once
    working.close()
    lines = log.read_text("utf-8").splitlines()
    assert len(lines) == 2 and "from the model again" in lines[1]


def test_the_offline_summarizer_is_never_reported(tmp_path: Path) -> None:
    offline = Engine.open(tmp_path / "home", fresh_tail_count=4, leaf_chunk_tokens=400)
    result = offline.compactor().sweep(_chat(offline, "a"))
    assert result.acted
    assert note_summarizer_health(offline.config, [result]) is None
    offline.close()
