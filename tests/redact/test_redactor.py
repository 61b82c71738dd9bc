"""Redactor behaviour: placeholders, counts, idempotency, JSON fidelity, messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.redact.redact_corpus import Gen

from lossless.models import NewMessage, NewNativeRecord, NewPart
from lossless.redact import (
    Redaction,
    Redactor,
    UserPattern,
    merge_counts,
    placeholder,
    redact_text,
)

GEN = Gen(99)
GH = GEN.github_token()
PW = GEN.password()
JWT = GEN.jwt()
AKIA = GEN.aws_access_key()
PEM = GEN.pem()


# ------------------------------------------------------------------ placeholders


def test_placeholders_are_typed_and_counted() -> None:
    text = f"export GITHUB_TOKEN={GH}\nDB_PASSWORD={PW}\nGH2={GH} id={AKIA}\n"
    result = Redactor().redact_text(text)
    assert result.text == (
        "export GITHUB_TOKEN=[REDACTED:github_token]\n"
        "DB_PASSWORD=[REDACTED:password_assignment]\n"
        "GH2=[REDACTED:github_token] id=[REDACTED:aws_access_key]\n"
    )
    assert result.counts == {"github_token": 2, "password_assignment": 1, "aws_access_key": 1}
    assert result.changed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            f'{{"user": "admin", "password": "{PW}", "port": 5432}}',
            '{"user": "admin", "password": "[REDACTED:password_assignment]", "port": 5432}',
        ),
        (
            f"postgres://app:{PW}@db.internal:5432/app?sslmode=require",
            "postgres://app:[REDACTED:url_password]@db.internal:5432/app?sslmode=require",
        ),
        (
            f"  password: '{PW}'  # set by ops\n",
            "  password: '[REDACTED:password_assignment]'  # set by ops\n",
        ),
        (
            f'curl -s -H "Authorization: Bearer {JWT}" https://api.example.com/v1/me',
            'curl -s -H "Authorization: Bearer [REDACTED:jwt]" https://api.example.com/v1/me',
        ),
        (f"before\n{PEM}\nafter", "before\n[REDACTED:private_key]\nafter"),
        (
            "webhook: https://hooks.slack.com/services/T0ABCDEF12/B0ABCDEF34/aB3dE5fG7hJ9kL1mN3pQ5rS7 ok",
            "webhook: https://hooks.slack.com/services/[REDACTED:slack_webhook] ok",
        ),
    ],
)
def test_surrounding_text_is_unchanged(text: str, expected: str) -> None:
    assert Redactor().redact_text(text).text == expected


def test_clean_text_is_returned_as_is() -> None:
    text = "Nothing to see: commit 3f2a9c1d4e5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f, all tests pass."
    result = Redactor().redact_text(text)
    assert result.text is text
    assert result.counts == {}
    assert not result.changed


def test_already_redacted_text_is_left_alone_and_redaction_is_idempotent() -> None:
    text = f"token={GH} password: {PW} {PEM} postgres://u:{PW}@h/db {JWT} [REDACTED:user:x]"
    redactor = Redactor()
    once = redactor.redact_text(text)
    twice = redactor.redact_text(once.text)
    assert twice.text == once.text
    assert twice.counts == {}
    assert "[REDACTED:user:x]" in once.text


def test_only_real_categories_count_as_existing_placeholders() -> None:
    text = f"[REDACTED:{GH}]"
    assert Redactor().redact_text(text).text == "[REDACTED:[REDACTED:github_token]]"


def test_overlapping_findings_merge_into_one_placeholder() -> None:
    # The value is both a password assignment and (inside) a GitHub token: the
    # union is hidden and the specific category wins.
    text = f"password={GH}"
    result = Redactor().redact_text(text)
    assert result.text == "password=[REDACTED:github_token]"
    assert result.counts == {"github_token": 1}


def test_disabled_redactor_changes_nothing() -> None:
    redactor = Redactor(enabled=False)
    text = f"export GITHUB_TOKEN={GH}"
    assert redactor.redact_text(text) == Redaction(text, {})
    assert redactor.redact_json(json.dumps({"t": text})).counts == {}
    msg = NewMessage(role="user", content=text)
    assert redactor.redact_message(msg) == (msg, {})
    assert not redactor.enabled


def test_module_level_redact_text_uses_builtins() -> None:
    assert redact_text(f"GH={GH}").text == "GH=[REDACTED:github_token]"


def test_merge_counts() -> None:
    assert merge_counts({"a": 1}, {}, {"a": 2, "b": 1}) == {"a": 3, "b": 1}
    assert merge_counts() == {}


# --------------------------------------------------------------------- user patterns


def test_user_patterns_are_applied_with_their_category() -> None:
    patterns = [
        UserPattern("acme", r"acme_[A-Za-z0-9]{16}"),
        UserPattern("employee", r"employee_id=(?P<secret>E\d{6})"),
    ]
    redactor = Redactor(patterns)
    text = "key acme_AbCdEf0123456789 for employee_id=E123456, see acme_short"
    result = redactor.redact_text(text)
    assert result.text == (
        "key [REDACTED:user:acme] for employee_id=[REDACTED:user:employee], see acme_short"
    )
    assert result.counts == {"user:acme": 1, "user:employee": 1}
    assert redactor.user_patterns == tuple(patterns)


def test_user_pattern_never_matches_inside_an_existing_placeholder() -> None:
    redactor = Redactor([UserPattern("caps", r"[A-Z]{6,}")])
    result = redactor.redact_text("[REDACTED:jwt] and SHOUTING")
    assert result.text == "[REDACTED:jwt] and [REDACTED:user:caps]"


# ------------------------------------------------------------------------- JSON


def _jsonl(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _assert_same_except_placeholders(before: object, after: object) -> None:
    if isinstance(before, dict):
        assert isinstance(after, dict)
        assert list(before) == list(after)
        for key in before:
            _assert_same_except_placeholders(before[key], after[key])
    elif isinstance(before, list):
        assert isinstance(after, list)
        assert len(before) == len(after)
        for a, b in zip(before, after, strict=True):
            _assert_same_except_placeholders(a, b)
    elif isinstance(before, str) and before != after:
        assert isinstance(after, str)
        assert "[REDACTED:" in after
    else:
        assert before == after


def test_json_line_with_secrets_stays_valid_and_keeps_other_fields() -> None:
    record = {
        "type": "assistant",
        "uuid": "3579fa66-0f5d-400c-97b8-e2fbecfeb4ba",
        "message": {
            "content": [
                {"type": "text", "text": f"Set it:\nexport GITHUB_TOKEN={GH}\nDB_PASSWORD={PW}\n"},
                {
                    "type": "tool_use",
                    "input": {"command": f'curl -H "Authorization: Bearer {JWT}" x', "n": 3},
                },
                {"type": "text", "text": f"key file:\n{PEM}\n"},
            ],
            "usage": {"input_tokens": 3, "output_tokens": 13},
        },
        "note": "naïve café ✓ 中文",
    }
    line = _jsonl(record)
    result = Redactor().redact_json(line)
    after = json.loads(result.text)
    _assert_same_except_placeholders(record, after)
    assert result.counts == {
        "github_token": 1,
        "password_assignment": 1,
        "jwt": 1,
        "private_key": 1,
    }
    # Byte fidelity: only the secrets changed, the rest of the line is verbatim.
    expected = line
    for secret, category in (
        (GH, "github_token"),
        (PW, "password_assignment"),
        (JWT, "jwt"),
        (json.dumps(PEM)[1:-1], "private_key"),
    ):
        expected = expected.replace(secret, placeholder(category))
    assert result.text == expected


def test_clean_json_line_is_the_same_string() -> None:
    line = _jsonl({"type": "user", "message": {"content": "password reset flow, see token.py"}})
    result = Redactor().redact_json(line)
    assert result.text is line
    assert result.counts == {}


def test_real_transcript_lines_are_byte_identical_or_still_valid(shared_data: Path) -> None:
    redactor = Redactor()
    lines = changed = 0
    for path in sorted(shared_data.glob("*/*/*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                lines += 1
                result = redactor.redact_json(line)
                if result.counts:
                    changed += 1
                    _assert_same_except_placeholders(json.loads(line), json.loads(result.text))
                else:
                    assert result.text is line
    assert lines > 6000
    # The upstream fixtures were already scrubbed of credentials.
    assert changed == 0


def test_a_finding_across_json_syntax_falls_back_to_structural_redaction() -> None:
    # A user pattern that spans two JSON strings cannot be applied to the raw
    # line without corrupting it; the structural pass still redacts the secret.
    redactor = Redactor([UserPattern("span", r'acme-[0-9]{4}","b":"x')])
    line = '{"a":"acme-1234","b":"x","c":"token is ' + GH + '"}'
    result = redactor.redact_json(line)
    decoded = json.loads(result.text)
    assert decoded == {"a": "acme-1234", "b": "x", "c": "token is [REDACTED:github_token]"}
    assert result.counts == {"github_token": 1}


def test_structural_fallback_finds_what_the_raw_pass_cannot() -> None:
    # The key is JSON-escaped ("pass\\u0077ord" is "password"), so only the
    # decoded document shows the assignment. The structural pass runs because a
    # user finding straddles JSON syntax, and wins because it finds more.
    redactor = Redactor([UserPattern("span", r'acme-[0-9]{4}","b":"x')])
    line = '{"pass\\u0077ord":"' + PW + '","a":"acme-1234","b":"x"}'
    result = redactor.redact_json(line)
    assert json.loads(result.text) == {
        "password": "[REDACTED:password_assignment]",
        "a": "acme-1234",
        "b": "x",
    }
    assert result.counts == {"password_assignment": 1}


def test_values_run_through_json_escapes_of_ordinary_characters() -> None:
    # Stopping at the backslash would leave the rest of the password in place.
    line = '{"cfg":"password=ab\\u0063' + PW + ' rest","t":"X_TOKEN=q9\\\\Zr81kLmn\\nNEXT=1"}'
    result = Redactor().redact_json(line)
    assert json.loads(result.text) == {
        "cfg": "password=[REDACTED:password_assignment] rest",
        "t": "X_TOKEN=[REDACTED:password_assignment]\nNEXT=1",
    }


def test_escape_sequences_are_never_cut() -> None:
    redactor = Redactor([UserPattern("u", r"0063abc")])
    line = '{"a":"x\\u0063abc y"}'
    result = redactor.redact_json(line)
    assert json.loads(result.text)["a"] in {"xcabc y", "x[REDACTED:user:u] y"}
    json.loads(result.text)


def test_non_json_text_in_redact_json_is_redacted_as_text() -> None:
    assert Redactor().redact_json(f"GH={GH}").text == "GH=[REDACTED:github_token]"
    assert Redactor().redact_json("{not json " + GH).text == "{not json [REDACTED:github_token]"


# ------------------------------------------------------------------- nested values


def test_redact_value_keeps_structure_and_keys() -> None:
    value = {
        "password": PW,
        "nested": [{"cmd": f"export GITHUB_TOKEN={GH}"}, ("tuple", f"jwt {JWT}"), 3, None],
        "ok": "fine",
        7: f"non-str key {AKIA}",
        "api_key": "ollama",
    }
    redacted, counts = Redactor().redact_value(value)
    assert redacted == {
        "password": "[REDACTED:password_assignment]",
        "nested": [
            {"cmd": "export GITHUB_TOKEN=[REDACTED:github_token]"},
            ("tuple", "jwt [REDACTED:jwt]"),
            3,
            None,
        ],
        "ok": "fine",
        7: "non-str key [REDACTED:aws_access_key]",
        "api_key": "ollama",
    }
    assert counts == {
        "password_assignment": 1,
        "github_token": 1,
        "jwt": 1,
        "aws_access_key": 1,
    }
    assert isinstance(redacted["nested"][1], tuple)


def test_redact_value_returns_unchanged_containers_as_is() -> None:
    value = {"a": ["x", {"b": "y"}], "c": 1}
    redacted, counts = Redactor().redact_value(value)
    assert redacted is value
    assert counts == {}


# ----------------------------------------------------------------------- messages


def test_message_redaction_covers_content_parts_metadata_and_raw() -> None:
    raw = _jsonl(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": f"GH={GH}"}]}}
    )
    tool_input = _jsonl({"command": f"mysql --password={PW} db", "timeout": 30})
    msg = NewMessage(
        role="assistant",
        content=f"Use GH={GH}",
        parts=(
            NewPart(kind="text", text=f"GH={GH}", metadata={"id": "p1"}),
            NewPart(
                kind="tool_use",
                text=tool_input,
                tool_name="Bash",
                tool_call_id="toolu_01",
                metadata={"input": {"command": f"mysql --password={PW} db"}, "n": [1, 2]},
            ),
            NewPart(kind="tool_result", text="ok", metadata={"env": {"DB_PASSWORD": PW}}),
            NewPart(kind="image", metadata={"data": "iVBORw0KGgoAAAANSUhEUgAA"}),
        ),
        created_at="2026-01-01T00:00:00Z",
        ingest_key="k1",
        metadata={"headers": {"Authorization": f"Bearer {JWT}"}},
        native_records=(
            NewNativeRecord(native_key="n1", record_type="assistant", raw=raw, line_no=3),
            NewNativeRecord(native_key="n2", record_type="progress", raw='{"type":"progress"}'),
        ),
    )
    redacted, counts = Redactor().redact_message(msg)

    assert redacted.content == "Use GH=[REDACTED:github_token]"
    text_part, tool_part, result_part, image_part = redacted.parts
    assert text_part.text == "GH=[REDACTED:github_token]"
    assert text_part.metadata == {"id": "p1"}
    assert json.loads(tool_part.text or "") == {
        "command": "mysql --password=[REDACTED:password_assignment] db",
        "timeout": 30,
    }
    assert tool_part.metadata == {
        "input": {"command": "mysql --password=[REDACTED:password_assignment] db"},
        "n": [1, 2],
    }
    assert (tool_part.tool_name, tool_part.tool_call_id) == ("Bash", "toolu_01")
    assert result_part.metadata == {"env": {"DB_PASSWORD": "[REDACTED:password_assignment]"}}
    assert image_part is msg.parts[3]
    assert redacted.metadata == {"headers": {"Authorization": "Bearer [REDACTED:jwt]"}}
    record, clean_record = redacted.native_records
    assert json.loads(record.raw)["message"]["content"][0]["text"] == "GH=[REDACTED:github_token]"
    assert (record.native_key, record.line_no) == ("n1", 3)
    assert clean_record is msg.native_records[1]
    assert (redacted.created_at, redacted.ingest_key, redacted.role) == (
        msg.created_at,
        msg.ingest_key,
        msg.role,
    )
    assert counts == {"github_token": 3, "password_assignment": 3, "jwt": 1}


def test_clean_message_is_returned_unchanged() -> None:
    msg = NewMessage(
        role="user",
        content="please fix the failing tests",
        parts=(NewPart(kind="text", text="please fix the failing tests"),),
        native_records=(NewNativeRecord(native_key="a", record_type="user", raw='{"x":1}'),),
    )
    redacted, counts = Redactor().redact_message(msg)
    assert redacted is msg
    assert counts == {}


@pytest.mark.parametrize("escape", ["\n", "\t", "\r"])
def test_a_token_after_an_escaped_newline_in_json_text_is_found(escape: str) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    line = json.dumps({"message": {"content": f"export done{escape}{token}{escape}next"}})
    result = Redactor().redact_json(line)
    assert result.counts == {"github_token": 1}
    assert json.loads(result.text)["message"]["content"] == (
        f"export done{escape}[REDACTED:github_token]{escape}next"
    )
    # An escaped backslash and an n: decoded, a backslash-n before the token,
    # which is found there and so in the JSON text too.
    literal = json.dumps({"content": "x\\n" + token})
    assert Redactor().redact_json(literal).counts == {"github_token": 1}
    assert Redactor().redact_text("x\\n" + token).counts == {"github_token": 1}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='\\ntr"ab ', max_size=40))
def test_the_escape_view_blanks_escape_letters_in_place(text: str) -> None:
    from lossless.redact.redactor import _escape_view

    view = _escape_view(text)
    assert len(view) == len(text)
    assert "\\n" not in view and "\\t" not in view and "\\r" not in view
    kept = [(a, b) for a, b in zip(text, view, strict=True) if a != b]
    assert all(b == " " for _, b in kept)
