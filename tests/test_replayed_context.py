"""SessionStart injects only summaries the model does not already have since the last compaction."""

from __future__ import annotations

import json
from pathlib import Path

from lossless.hooks.replayed import only_new

VIEW = (
    "[lossless] Session s1: all 9 messages are stored verbatim in lossless (lcm).\n"
    "- sum_aaaa (leaf, depth 0, 2026-01-01 10:00, 4 messages): setup\n"
    "- sum_bbbb (leaf, depth 0, 2026-01-01 10:05, 5 messages): deploys\n"
    "To recover anything: lcm_expand."
)


def line(record: dict[str, object]) -> str:
    return json.dumps(record) + "\n"


def injected(text: str) -> str:
    return line(
        {"type": "attachment", "attachment": {"type": "hook_additional_context", "content": [text]}}
    )


def test_nothing_injected_yet_keeps_everything(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(line({"type": "user", "message": {"content": "hi"}}))
    assert only_new(VIEW, transcript) == VIEW
    assert only_new(VIEW, tmp_path / "missing.jsonl") == VIEW
    assert only_new(VIEW, None) == VIEW


def test_replayed_summaries_are_left_out(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        line({"type": "user", "message": {"content": "hi"}})
        + injected(VIEW.split("\n- sum_bbbb")[0])
    )
    fresh = only_new(VIEW, transcript)
    assert "sum_bbbb" in fresh and "sum_aaaa" not in fresh and fresh.startswith("[lossless]")
    transcript.write_text(transcript.read_text() + injected(VIEW))
    assert only_new(VIEW, transcript) == ""


def test_a_compaction_boundary_forgets_what_came_before(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        injected(VIEW)
        + line({"type": "user", "message": {"content": "more"}})
        + line({"type": "system", "subtype": "compact_boundary"})
    )
    assert only_new(VIEW, transcript) == VIEW
    # Context written by the same process just before the boundary is carried over.
    transcript.write_text(
        line({"type": "user", "message": {"content": "more"}})
        + injected(VIEW)
        + line({"type": "system", "subtype": "compact_boundary"})
    )
    assert only_new(VIEW, transcript) == ""


def test_what_the_last_start_injected_counts_as_seen_at_compact(tmp_path: Path) -> None:
    """Claude Code carries the start-of-process block across /compact but writes it
    only after the compact-time hook ran: the kept ids stand in for it."""
    from lossless.hooks.replayed import last_injected, remember_injected, summary_ids

    home = tmp_path / "home"
    assert last_injected(home, "s1") == set()
    remember_injected(home, "s1", summary_ids(VIEW.split("\n- sum_bbbb")[0]))
    assert last_injected(home, "s1") == {"sum_aaaa"}
    assert last_injected(home, "other") == set()
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(line({"type": "user", "message": {"content": "hi"}}))
    fresh = only_new(VIEW, transcript, last_injected(home, "s1"))
    assert "sum_bbbb" in fresh and "sum_aaaa" not in fresh
    assert only_new(VIEW, None, {"sum_aaaa", "sum_bbbb"}) == ""
    # A damaged record is no record.
    for path in (home / "hooks" / "injected").iterdir():
        path.write_text("{not json")
    assert last_injected(home, "s1") == set()
