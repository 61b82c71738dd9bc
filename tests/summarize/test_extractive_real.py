"""The extractive summarizer on real Claude Code sessions (../shared/data), plus properties."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lossless.summarize import (
    EXPAND_PREFIX,
    ExtractiveSummarizer,
    SummaryRequest,
    format_message_block,
    join_blocks,
    truncate_for_fallback,
)
from lossless.tokens import estimate_tokens


def render_claude_session(path: Path, max_tokens: int) -> tuple[str, str]:
    """Render user/assistant records the way the engine does; return (text, first user text).

    A deliberately small reader (text, tool_use input, tool_result output) so
    this test depends only on the summarizer, not on the transcript parser.
    """
    blocks: list[str] = []
    first_user = ""
    size = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") not in ("user", "assistant"):
            continue
        message: dict[str, Any] = record.get("message") or {}
        role = message.get("role", record["type"])
        content = message.get("content")
        parts: list[str] = []
        if isinstance(content, str):
            parts.append(content)
        else:
            for block in content or []:
                kind = block.get("type")
                if kind == "text":
                    parts.append(block["text"])
                elif kind == "tool_use":
                    parts.append(f"[tool_use {block.get('name')}] {json.dumps(block.get('input'))}")
                elif kind == "tool_result":
                    role = "tool"
                    output = block.get("content")
                    if isinstance(output, list):
                        output = "\n".join(str(p.get("text", "")) for p in output)
                    parts.append(str(output))
        body = "\n".join(p for p in parts if p)
        if not body.strip():
            continue
        if role == "user" and not first_user:
            first_user = body
        block = format_message_block(role, record.get("timestamp"), body)
        size += estimate_tokens(block)
        if size > max_tokens:
            break
        blocks.append(block)
    return join_blocks(blocks), first_user


@pytest.mark.parametrize("name", ["tool_heavy.jsonl", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"])
@pytest.mark.parametrize("mode", ["normal", "aggressive"])
def test_real_session_chunk(shared_data: Path, name: str, mode: str) -> None:
    path = shared_data / "claude-code" / "spotter" / name
    if not path.is_file():
        pytest.skip(f"{path} not found")
    text, first_user = render_claude_session(path, max_tokens=20_000)
    assert estimate_tokens(text) > 1_200
    request = SummaryRequest(text=text, depth=0, target_tokens=1_200, mode=mode)  # type: ignore[arg-type]
    out = ExtractiveSummarizer().summarize(request).text
    assert out == ExtractiveSummarizer().summarize(request).text
    assert estimate_tokens(out) <= request.budget_tokens
    assert out.splitlines()[-1].startswith(EXPAND_PREFIX)
    # The session's opening request is kept (possibly clipped).
    assert first_user.strip()[:60] in out
    # Timestamps and at least one file path survive.
    assert "[2026-02-1" in out
    assert "/" in out


lines = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs",), blacklist_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    ),
    max_size=120,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(lines, min_size=1, max_size=80), st.integers(min_value=1, max_value=400))
def test_extractive_never_exceeds_budget(source_lines: list[str], target: int) -> None:
    text = "\n".join(source_lines)
    out = (
        ExtractiveSummarizer()
        .summarize(SummaryRequest(text=text, depth=0, target_tokens=target))
        .text
    )
    assert estimate_tokens(out) <= target


@settings(max_examples=80, deadline=None)
@given(st.text(max_size=6000), st.integers(min_value=1, max_value=600))
def test_truncation_never_grows(text: str, limit: int) -> None:
    out = truncate_for_fallback(text, limit)
    size = estimate_tokens(text)
    assert estimate_tokens(out) <= limit
    if size > 1:
        assert estimate_tokens(out) < size
