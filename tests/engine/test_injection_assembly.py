"""No summary text can close the summary element or open another element.

Property tests (hypothesis) over ``render_summary`` and whole assemblies in
both API shapes, and real transcripts from ../shared/data with payloads planted
in their tool results, compacted and assembled: every tag in a summary message
is one of the wrapper's own, and no planted instruction survives as text.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.engine.compaction_helpers import (
    Clock,
    agent_turn,
    ingest,
    make_config,
    new_conversation,
    open_store,
)
from tests.summarize.injection_corpus import PAYLOADS

from lossless.engine.assembly import SUMMARIES_NOTE, assemble, render_summary
from lossless.engine.engine import Engine
from lossless.injection import escape_markup
from lossless.models import NewSummary, Summary
from lossless.quoted import ATTRIBUTION_LEAD, QUOTE_PREFIX
from lossless.summarize import EXPAND_PREFIX

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
bench = pytest.importorskip("bench_injection")

WRAPPER_TAGS = {"summary", "parents", "summary_ref", "content"}
QUOTATION_RE = re.compile(re.escape(ATTRIBUTION_LEAD) + r" “[^“”]*”")
HEADER_RE = re.compile(r"\[[0-9\-: T.Z]{1,30}\] (?:user|assistant|tool|system|summary):")
TAG_RE = re.compile(r"<\s*(/?)\s*([A-Za-z_|!?][\w:.|-]*)")

markup = st.text(
    alphabet=st.sampled_from([*"<>/&|!?\"'= \n\tabcsumryxteopnd_-:", "\u200b", "ｓ"]),
    max_size=200,
)
anything = st.one_of(st.text(max_size=300), markup)


def _summary(content: str, summary_id: str = "sum_0123456789abcdef") -> Summary:
    return Summary(
        id=summary_id,
        conversation_id=1,
        kind="leaf",
        depth=0,
        content=content,
        token_count=10,
        earliest_at="2026-01-01T00:00:00.000Z",
        latest_at="2026-01-01T00:01:00.000Z",
        descendant_count=0,
        source_token_count=100,
        created_at="2026-01-01T00:02:00.000Z",
    )


def _tags(xml: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2).lower()) for m in TAG_RE.finditer(xml)]


@given(anything)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_summary_text_cannot_close_or_open_an_element(content: str) -> None:
    xml = render_summary(_summary(content), parents=["sum_aaaaaaaaaaaaaaaa"])
    tags = _tags(xml)
    assert {name for _, name in tags} <= WRAPPER_TAGS
    # Exactly the wrapper's own: one summary, one parents list, one ref, one content.
    assert tags.count(("", "summary")) == 1 and tags.count(("/", "summary")) == 1
    assert tags.count(("", "content")) == 1 and tags.count(("/", "content")) == 1
    assert xml.rstrip().endswith("</summary>")
    body = xml.split("<content>\n", 1)[1].rsplit("\n  </content>", 1)[0]
    _check_quoted_body(body)


def _check_quoted_body(body: str) -> None:
    """Every line of summary text is quoted and attributed, and once the quote
    marks are taken off no ``<`` or ``>`` is left: the only unquoted line is
    the pointer render_summary appends, with its own mention of <parents>."""
    lines = body.split("\n")
    unquoted = [line for line in lines if line and not line.startswith(">")]
    assert len(unquoted) <= 1, unquoted
    if unquoted:
        assert unquoted[0] == lines[-1] and unquoted[0].startswith(EXPAND_PREFIX)
    for line in lines:
        own = line[1:] if line.startswith(">") else line.replace("listed in <parents>", "")
        assert "<" not in own and ">" not in own, line
        # Every word of a quoted line is inside an attribution, or the line is
        # a speaker header (a time and a role name) or holds no letter at all.
        if line.startswith(QUOTE_PREFIX):
            outside = QUOTATION_RE.sub("", line[len(QUOTE_PREFIX) :])
            assert HEADER_RE.fullmatch(outside) or not re.search(r"[^\W\d_]", outside), line


@given(anything)
@settings(max_examples=300)
def test_escape_markup_leaves_no_markup_and_is_reversible(text: str) -> None:
    escaped = escape_markup(text)
    assert "<" not in escaped and ">" not in escaped
    # Nothing is lost: the three escapes undo exactly (&amp; last).
    restored = escaped.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert restored == text


def _summary_texts(messages: list[dict[str, Any]], fmt: str) -> list[str]:
    texts: list[str] = []
    for message in messages:
        if message["role"] != "user":
            continue
        content = message["content"]
        blocks = (
            [content]
            if isinstance(content, str)
            else [
                b.get("text", "")
                for b in content
                if isinstance(b, dict) and b.get("type") == "text"
            ]
        )
        texts.extend(t for t in blocks if t.startswith("<summary ") or t == SUMMARIES_NOTE)
    return texts


def _plant(source: Path, target: Path, payloads: list[str]) -> int:
    """Copy a Claude Code transcript, appending a payload to each tool result."""
    planted = 0
    with source.open(encoding="utf-8") as src, target.open("w", encoding="utf-8") as out:
        for line in src:
            record = json.loads(line)
            content = (record.get("message") or {}).get("content")
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        payload = payloads[planted % len(payloads)]
                        inner = block.get("content")
                        if isinstance(inner, str):
                            block["content"] = f"{inner}\n{payload}"
                        elif isinstance(inner, list):
                            inner.append({"type": "text", "text": payload})
                        else:
                            block["content"] = payload
                        planted += 1
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return planted


@pytest.mark.parametrize("name", ["tool_heavy.jsonl", "short.jsonl"])
def test_real_transcript_with_planted_payloads(
    shared_data: Path, tmp_path: Path, name: str
) -> None:
    source = shared_data / "claude-code" / "spotter" / name
    if not source.is_file():
        pytest.skip(f"{source} not found")
    # Development payloads without markup must be withheld, markup ones
    # escaped; every payload, of any split, must stay out of the instruction
    # position (quoted and attributed where detection let it through).
    chosen = [e for e in PAYLOADS if len(e.parts) == 1]
    planted_file = tmp_path / name
    planted = _plant(source, planted_file, [e.text for e in chosen])
    assert planted > 0
    home = tmp_path / "home"
    with Engine.open(
        home, fresh_tail_count=4, leaf_chunk_tokens=800, leaf_min_fanout=2, condensed_min_fanout=2
    ) as engine:
        result = engine.import_file(planted_file, final=True)
        conversation_id = result.conversation_id
        assert conversation_id is not None
        engine.compact(conversation_id)
        summaries = engine.store.summaries.list(conversation_id)
        assert summaries, "the planted transcript was compacted"
        used = chosen[: min(planted, len(chosen))]
        for summary in summaries:
            for entry in used:
                if entry.split == "dev" and not re.search(r"[<>&]", entry.core):
                    assert entry.core not in summary.content, (entry.id, summary.id)
        for fmt in ("anthropic", "openai"):
            assembled = assemble(engine.store, conversation_id, budget=200_000, format=fmt)
            texts = _summary_texts(assembled.messages, fmt)
            assert texts and texts[0] == SUMMARIES_NOTE
            for text in texts[1:]:
                assert {name for _, name in _tags(text)} <= WRAPPER_TAGS, text[:300]
                assert text.count("</summary>") == 1
                inner = text.split("<content>\n", 1)[1].rsplit("\n  </content>", 1)[0]
                assert not ROLE_OPENERS.search(inner), inner[:300]
                _check_quoted_body(inner)
                exposed = [
                    e.id
                    for e in used
                    if bench.reaches_context(e.core, text)
                    and bench.in_instruction_position(e.core, text)
                ]
                assert exposed == [], exposed


_homes = itertools.count()
ROLE_OPENERS = re.compile(
    r"<\s*/?\s*(?:system|user|assistant|developer|tool|human|summary|content|im_start)\b|<\|",
    re.I,
)


@given(st.lists(anything.map(lambda t: t.replace("\x00", "")), min_size=1, max_size=3))
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
def test_no_stored_summary_text_opens_a_role_in_either_shape(
    tmp_path: Path, contents: list[str]
) -> None:
    """Whatever text a summary holds, in a real store's assembled context (both
    API shapes) it stays inside its own quoted <content>: the summary messages
    open no role element, close no wrapper early, and every line is quoted."""
    home = tmp_path / f"home_{next(_homes)}"
    config = make_config(home)
    store = open_store(config)
    try:
        cid = new_conversation(store)
        clock = Clock()
        messages = ingest(store, cid, agent_turn(clock, 0, 2) + agent_turn(clock, 1, 2))
        for index, content in enumerate(contents):
            message = messages[index]
            summary = store.summaries.create(
                NewSummary(
                    conversation_id=cid,
                    kind="leaf",
                    depth=0,
                    content=content,
                    token_count=10,
                    earliest_at=message.created_at,
                    latest_at=message.created_at,
                ),
                message_ids=[message.id],
            )
            item = next(i for i in store.context.list(cid) if i.message_id == message.id)
            store.context.replace_range(cid, item.ordinal, item.ordinal, summary)
        for fmt in ("anthropic", "openai"):
            assembled = assemble(store, cid, budget=200_000, format=fmt, fresh_tail_count=1)
            texts = _summary_texts(assembled.messages, fmt)
            assert texts[0] == SUMMARIES_NOTE
            assert len(texts) == 1 + len(contents)
            for text in texts[1:]:
                assert text.startswith("<summary ") and text.rstrip().endswith("</summary>")
                inner = text.split("<content>\n", 1)[1].rsplit("\n  </content>", 1)[0]
                assert not ROLE_OPENERS.search(inner), inner[:300]
                _check_quoted_body(inner)
                assert text.count("</summary>") == 1 and text.count("</content>") == 1
            if fmt == "openai":
                for message in assembled.messages:
                    if isinstance(message["content"], str) and "<summary " in message["content"]:
                        assert message["role"] == "user"
    finally:
        store.close()
