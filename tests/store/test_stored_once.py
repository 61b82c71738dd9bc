"""Raw lines and parts stored as references to their message's texts rebuild exactly."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from lossless.store.stored_once import MIN_SHARED_CHARS, expand_raw, part_offset, template_raw

texts = st.text(min_size=0, max_size=120)
long_texts = st.text(min_size=MIN_SHARED_CHARS, max_size=200)


@settings(max_examples=300, deadline=None)
@given(
    content=long_texts,
    parts=st.lists(st.one_of(st.none(), texts, long_texts), max_size=4),
    extra=texts,
    ascii_only=st.booleans(),
    compact=st.booleans(),
)
def test_a_template_rebuilds_the_line_exactly(
    content: str, parts: list[str | None], extra: str, ascii_only: bool, compact: bool
) -> None:
    document = {"content": content, "parts": parts, "extra": extra, "again": content}
    separators = (",", ":") if compact else None
    raw = json.dumps(document, ensure_ascii=ascii_only, separators=separators)
    template = template_raw(raw, content, parts)
    assert template is not None, "the content is repeated, so the line is templated"
    assert content not in template or len(content) < MIN_SHARED_CHARS
    assert expand_raw(template, content, parts) == raw


@settings(max_examples=300, deadline=None)
@given(raw=st.text(max_size=300), content=texts, parts=st.lists(st.one_of(st.none(), texts)))
def test_any_line_is_kept_exactly_or_left_alone(
    raw: str, content: str, parts: list[str | None]
) -> None:
    template = template_raw(raw, content, parts)
    assert template is None or expand_raw(template, content, parts) == raw


def test_a_line_holding_the_marker_character_is_left_alone() -> None:
    content = "x" * MIN_SHARED_CHARS
    assert template_raw(json.dumps({"c": content}) + "\x01c\x01", content, []) is None


@given(content=texts, text=st.one_of(st.none(), texts))
def test_part_offset_points_at_the_text(content: str, text: str | None) -> None:
    start = part_offset(content, text)
    if start is not None:
        assert text is not None and content[start : start + len(text)] == text
    elif text is not None and len(text) >= MIN_SHARED_CHARS:
        assert text not in content


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=80))
def test_ascii_text_is_escaped_as_json_dumps_writes_it(text: str) -> None:
    """ASCII text takes the ASCII encoder; DEL (which only that encoder escapes)
    keeps the other one, so both escapings stay what json.dumps writes."""
    from lossless.store.stored_once import _escaped

    assert _escaped(text, False) == json.dumps(text, ensure_ascii=False)[1:-1]
    assert _escaped(text, True) == json.dumps(text, ensure_ascii=True)[1:-1]


def test_a_line_with_del_in_its_content_rebuilds_exactly() -> None:
    content = "a DEL \x7f inside an ASCII text, long enough to be referred to"
    raw = json.dumps({"content": content}, ensure_ascii=False)
    template = template_raw(raw, content, [])
    assert template is not None
    assert expand_raw(template, content, []) == raw
    # With ensure_ascii DEL is escaped, which template_raw does not try for an
    # ASCII text: the line is stored as it is (exact, not shortened).
    raw = json.dumps({"content": content}, ensure_ascii=True)
    template = template_raw(raw, content, [])
    assert template is None or expand_raw(template, content, []) == raw
