"""The shortcuts that keep redaction cheap must never change what is found.

* ``find_builtin`` runs only the detectors whose anchor (or keyword) an
  automaton pass found in the text (``ANCHOR_GATE``);
* a decoded JSON document's strings are scanned joined by newlines, once,
  instead of one by one (``JOINED_SCAN``), and walked only on a finding;
* ``redact_message`` does not rescan a part whose text is a line-bounded piece
  of a content the built-in detectors found clean;
* the ``sk-`` and JWT regexes start at their anchor's rarest letter and report
  spans shifted back to the anchor.
"""

from __future__ import annotations

import json
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.redact.redact_corpus import ALNUM, Gen
from tests.redact.test_redact_properties import FAST, FRAGMENTS, fragment_text, json_values

from lossless.models import NewMessage, NewPart
from lossless.redact import Redactor, UserPattern, detectors, redactor
from lossless.redact.detectors import LITERAL_ANCHORS, find_builtin
from lossless.sources import render_content

_G = Gen(11)
GH = _G.github_token()
B64 = "MIIEowIBAAKCAQEAu3Xk9pQ2vZr8LmN"


def _ungated(text: str) -> list[detectors.Finding]:
    with mock.patch.object(detectors, "ANCHOR_GATE", False):
        return find_builtin(text)


# --------------------------------------------------------------------- the gate


@FAST
@given(fragment_text)
def test_gate_never_hides_a_finding(text: str) -> None:
    assert find_builtin(text) == _ungated(text)


@pytest.mark.parametrize(
    "text",
    [
        "DB_PASSWORD=hunter22",
        "é PWD: 'zq9!xk2' é",
        "\u212a export SECRET_TOKEN=Zm9vYmFyMTIzNDU2Nzg5MGFi",  # Kelvin sign: not a "k"
        f"{GH} 😀",
        "see https://admin:S3cr3t-pw@db.internal/x",
        "--password hunter22",
        _G.aws_access_key(),
        _G.jwt(),
        _G.slack_token(),
        _G.openai_key(),
        # Anchors overlapping each other and a keyword ("xoxb-" in "sk_test_").
        "sk_test_xoxb-1234567890-abcdefABCDEF key=" + _G.openai_key(),
        "é\ud800 token=Zm9vYmFyMTIzNDU2Nzg5MGFi",  # a lone surrogate before it
    ],
)
def test_text_with_a_secret_goes_through_the_detectors(text: str) -> None:
    assert find_builtin(text) == _ungated(text)
    assert find_builtin(text), "every case holds a secret"


@pytest.mark.parametrize("anchor", LITERAL_ANCHORS)
def test_every_anchor_is_seen_by_the_gate(anchor: str) -> None:
    # Each anchor, glued into prose, reaches its detector: the gated and the
    # ungated scans agree on a text holding it and a plausible body after it.
    for body in ("aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9f", "0123456789abcdef" * 4):
        text = f"see {anchor}{body} here and {anchor}{body}"
        assert find_builtin(text) == _ungated(text)


@pytest.mark.parametrize("length", [150, 200, 201, 5000])
def test_secret_at_any_length_is_found(length: int) -> None:
    secret = f"token={GH[4:]}"
    text = "x" * (length - len(secret) - 1) + " " + secret
    assert len(text) == length
    assert Redactor().redact_text(text).counts == {"password_assignment": 1}


def test_short_text_without_a_trigger_is_returned_unchanged() -> None:
    text = "The quick brown fox jumps over the lazy dog: nothing to hide, ÿ 😀."
    assert find_builtin(text) == []
    result = Redactor().redact_text(text)
    assert result.text is text
    assert result.counts == {}


# ------------------------------------------------- decoded documents, joined


def _walked(redactor_: Redactor, text: str) -> tuple[str, dict[str, int]]:
    with mock.patch.object(redactor, "JOINED_SCAN", False):
        result = redactor_.redact_json(text)
    return result.text, result.counts


def _hiding(value: object) -> str:
    """``value`` as JSON with an escaped slash, so the decoded path is taken."""
    return json.dumps({"note": "a\\/b", "v": value})


@FAST
@given(json_values)
def test_joined_scan_agrees_with_the_walk(value: object) -> None:
    text = _hiding(value)
    result = Redactor().redact_json(text)
    assert (result.text, result.counts) == _walked(Redactor(), text)


@FAST
@given(json_values)
def test_joined_scan_agrees_with_the_walk_inside_a_string(value: object) -> None:
    # A JSON document inside a string, behind escaped quotes (tool arguments).
    text = json.dumps({"arguments": _hiding(value), "x": "\\/"})
    result = Redactor().redact_json(text)
    assert (result.text, result.counts) == _walked(Redactor(), text)


@pytest.mark.parametrize(
    "value",
    [
        {"password": ["hunter22x"]},  # a list under a secret-looking key
        {"nested": {"api_key": "Zm9vYmFyMTIzNDU2Nzg5MGFiY2Rl"}},
        ["a", "g\u0068p_" + GH[4:]],
        {"p\u0061ssword": "hunter22x"},
    ],
)
def test_secrets_the_joined_scan_must_not_miss(value: object) -> None:
    text = _hiding(value).replace("\\\\u", "\\u")  # keep the planted \u escapes
    result = Redactor().redact_json(text)
    assert result.counts, text
    assert (result.text, result.counts) == _walked(Redactor(), text)


def test_user_patterns_always_walk() -> None:
    redactor_ = Redactor([UserPattern("ticket", r"^ACME-\d{5}$")])
    text = _hiding(["ACME-12345"])
    assert redactor_.redact_json(text).counts == {"user:ticket": 1}


# ------------------------------------------------------------ parts of a content


def _message(content: str, *parts: NewPart) -> NewMessage:
    return NewMessage(role="assistant", content=content, parts=parts)


def _part_texts(redactor: Redactor, msg: NewMessage) -> list[str | None]:
    redacted, _ = redactor.redact_message(msg)
    return [p.text for p in redacted.parts]


def test_part_glued_to_content_text_is_scanned_on_its_own() -> None:
    # In the content the token follows random characters (not a name), so it
    # is not a token there.
    part = NewPart(kind="text", text=GH)
    msg = _message("x9Kq2m7Zp" + GH, part)
    assert find_builtin(msg.content) == []
    assert _part_texts(Redactor(), msg) == ["[REDACTED:github_token]"]


def test_pem_marker_across_a_blank_does_not_hide_a_key_in_the_part() -> None:
    # The content's BEGIN marker runs over the blank into the part and swallows
    # the part's own marker: the content has no key, the part alone has one.
    part_text = f"KEY-----BEGIN RSA PRIVATE KEY-----: {B64}\n-----END RSA PRIVATE KEY-----"
    msg = _message(f"[note] -----BEGIN PRIVATE {part_text}", NewPart(kind="text", text=part_text))
    assert find_builtin(msg.content) == []
    assert find_builtin(part_text) != []
    assert _part_texts(Redactor(), msg) == ["KEY[REDACTED:private_key]"]


def test_user_patterns_still_run_on_a_covered_part() -> None:
    redactor = Redactor([UserPattern("ticket", r"^ACME-\d{5}$")])
    part = NewPart(kind="tool_result", text="ACME-12345")
    msg = _message(render_content([NewPart(kind="text", text="see"), part]), part)
    assert redactor.find(msg.content) == []
    assert _part_texts(redactor, msg) == ["[REDACTED:user:ticket]"]


part_kinds = st.sampled_from(["text", "reasoning", "tool_result", "tool_use", "file"])


@st.composite
def messages(draw: st.DrawFn) -> NewMessage:
    parts = []
    for kind in draw(st.lists(part_kinds, min_size=1, max_size=4)):
        text = draw(fragment_text)
        if kind == "tool_use":
            text = json.dumps({"command": text})
        parts.append(NewPart(kind=kind, text=text, tool_name="Bash"))
    content = render_content(parts)
    if draw(st.booleans()):  # a content that is not exactly the rendered parts
        content = draw(st.sampled_from(FRAGMENTS)) + content + draw(st.sampled_from(FRAGMENTS))
    return _message(content, *parts)


@FAST
@given(messages())
def test_parts_are_redacted_as_if_scanned_alone(msg: NewMessage) -> None:
    redactor = Redactor([UserPattern("ticket", r"^ACME-\d{5}$")])
    expected = [
        (redactor.redact_json if p.kind == "tool_use" else redactor.redact_text)(p.text or "").text
        for p in msg.parts
    ]
    assert _part_texts(redactor, msg) == expected


# ------------------------------------------ regexes that start inside their anchor


@pytest.mark.parametrize(
    ("token", "category"),
    [
        (_G.jwt(), "jwt"),
        (_G.openai_key(), "openai_api_key"),
        ("sk-ant-api03-" + _G.openai_key()[3:], "anthropic_api_key"),
        ("sk_live_aB3dE5fG7hJ9kL1mN3pQ", "stripe_key"),
    ],
)
@pytest.mark.parametrize("before", ["", " ", "x=", "\n", '"'])
def test_spans_start_at_the_anchor(token: str, category: str, before: str) -> None:
    text = f"{before}{token} and {token}"
    second = len(before) + len(token) + len(" and ")
    assert sorted(find_builtin(text)) == [
        detectors.Finding(len(before), len(before) + len(token), category),
        detectors.Finding(second, second + len(token), category),
    ]


@pytest.mark.parametrize(
    "token",
    [
        # Plain "sk-" (no project prefix, no "T3BlbkFJ") is the tail of words
        # too often ("task-"): the distinctive formats are found glued
        # (tests/redact/redact_corpus.glued).
        "sk-" + _G.mixed(ALNUM, 40),
    ],
)
def test_anchor_glued_to_a_word_is_not_a_token(token: str) -> None:
    assert find_builtin("a" + token) == []
    assert find_builtin(token) != []


@pytest.mark.parametrize(
    ("token", "category"),
    [
        (_G.jwt(), "jwt"),
        ("sk_test_" + _G.mixed(ALNUM, 24), "stripe_key"),
        ("rk_test_" + _G.mixed(ALNUM, 24), "stripe_key"),
    ],
)
@pytest.mark.parametrize("before", ["a", "x_", "session_", "build42-"])
def test_glued_spans_start_at_the_anchor(token: str, category: str, before: str) -> None:
    # A JWT's whole dotted shape, a Stripe test key's random body: found glued,
    # from the anchor on (the name stays).
    text = f"{before}{token} and"
    assert find_builtin(text) == [
        detectors.Finding(len(before), len(before) + len(token), category)
    ]
