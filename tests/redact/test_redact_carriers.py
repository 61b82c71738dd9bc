"""Secrets in the shapes that used to slip past the raw-text scan.

Redaction must hold on the *decoded* value of every string: a JSON record that
spells a token with ``\\uXXXX`` escapes, a JSON document inside a JSON string
(tool arguments, a tool's JSON output), a file path with a key in it, a
letters-only password. Each case plants a secret and checks that no decoding
of the result gives it back.
"""

from __future__ import annotations

import contextlib
import json
from types import SimpleNamespace

import pytest
from tests.redact.redact_corpus import ALNUM, UPPER_DIGITS, Gen, glued, near_misses, positives

from lossless.engine.memory import remember
from lossless.redact import Redactor
from lossless.store.contract import NewMemory

REDACTOR = Redactor()
# (label, text with the secret in its context, the secret, its category)
SECRETS = [
    (case.label, case.text, case.text[s.start : s.end], s.category)
    for case in positives()
    for s in case.secrets
    # JSONL cases hold the JSON-escaped form; the rest hold the secret itself.
    if not case.text.startswith('{"type"')
]


def _escape_all(text: str) -> str:
    """``text`` as a JSON string body with every character a ``\\uXXXX`` escape."""
    return "".join(f"\\u{ord(c):04x}" for c in text)


def _escape_some(text: str) -> str:
    """Every third character escaped: a token's prefix is cut up too."""
    return "".join(
        f"\\u{ord(c):04x}" if i % 3 == 1 else json.dumps(c)[1:-1] for i, c in enumerate(text)
    )


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        out = [value]
        if value[:1] in "{[":
            with contextlib.suppress(ValueError):
                out += _strings(json.loads(value))
        return out
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _leaks(raw: str, secret: str) -> bool:
    return secret in raw or any(secret in s for s in _strings(json.loads(raw)))


@pytest.mark.parametrize("escape", [_escape_all, _escape_some])
def test_unicode_escaped_secrets_in_raw_records(escape: object) -> None:
    assert callable(escape)
    leaked = []
    for label, text, secret, _category in SECRETS:
        raw = '{"type":"user","message":{"content":"' + escape(text) + '"}}'
        assert json.loads(raw)["message"]["content"] == text
        out = REDACTOR.redact_json(raw).text
        json.loads(out)  # still valid JSON
        if _leaks(out, secret):
            leaked.append(label)
    assert not leaked, leaked


def test_every_category_planted_escaped_is_redacted() -> None:
    categories = {category for *_, category in SECRETS}
    assert len(categories) >= 50
    for label, text, secret, category in SECRETS:
        body = json.dumps(text)[1:-1]
        start = body.index(json.dumps(secret)[1:-1])
        # Only the secret's first three characters escaped: the raw text
        # shows no known prefix any more.
        body = body[:start] + _escape_all(secret[:3]) + body[start + 3 :]
        out = REDACTOR.redact_json('{"text":"' + body + '"}')
        # The category may be the name-based one: the raw scan can already
        # see ``aws_secret_access_key = <escaped value>``.
        assert out.counts, (label, category)
        assert not _leaks(out.text, secret), (label, out.text)


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_nested_json_strings_behind_escaped_quotes(depth: int) -> None:
    secret = "Zx9kQ2mW7pL4vB8nR3tY6u"
    hexkey = "9f86d081884c7d659a2feaa0c55ad015"
    doc: object = {"command": f'export API_TOKEN="{secret}"', "args": {"api_key": hexkey}}
    for _ in range(depth):
        doc = {"content": json.dumps(doc)}
    raw = json.dumps(doc)
    out = REDACTOR.redact_json(raw).text
    assert not _leaks(out, secret)
    assert not _leaks(out, hexkey)


def test_tool_arguments_string_in_codex_record() -> None:
    hexkey = "c2f0a3b47d1e95f86a0b3c4d5e6f7a8b"
    record = {
        "type": "response_item",
        "payload": {
            "type": "function_call",
            "name": "shell",
            "arguments": json.dumps({"command": ["curl", "-H", f"X-Api-Key: {hexkey}"]}),
        },
    }
    nested = {"type": "event", "payload": {"arguments": json.dumps({"api_key": hexkey})}}
    for doc in (nested, {"wrapped": json.dumps(nested)}):
        out = REDACTOR.redact_json(json.dumps(doc)).text
        assert not _leaks(out, hexkey), out
    # The header form is a named value inside a list item: covered by the decoded walk.
    assert REDACTOR.redact_json(json.dumps(record)).counts


@pytest.mark.parametrize(
    "text",
    [
        "password=hunterabc",
        "mysql -u root --password=correcthorsebattery db",
        "db_password: letmeinplease",
        "export PGPASSWORD=swordfishes",
    ],
)
def test_letters_only_password_assignment(text: str) -> None:
    out = REDACTOR.redact_text(text)
    assert out.counts, text
    assert "[REDACTED:" in out.text


@pytest.mark.parametrize(
    "text",
    [
        "password=password",
        "login(user, password=getpass)",
        "def connect(password=None):",
        "password=request",
        "password=newpassword",
        "password: str",
        "password=pw",
    ],
)
def test_password_variables_stay(text: str) -> None:
    assert not REDACTOR.redact_text(text).counts, text


@pytest.mark.parametrize(
    ("path", "category"),
    [
        ("/home/u/AKIAQ3EGRXWZ7PTLMN4V/creds.txt", "aws_access_key"),
        ("/tmp/AIzaSyB1c2D3e4F5g6H7i8J9k0LmNoPqRsTuVwX/x.json", "google_api_key"),
        (
            "/srv/eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9Pl/y",
            "jwt",
        ),
    ],
)
def test_keys_inside_file_paths(path: str, category: str) -> None:
    out = REDACTOR.redact_text(f"Read {path}")
    assert category in out.counts, out.text


def test_lookalikes_in_paths_stay() -> None:
    for path in (
        "/cache/3f786850e387550fdab836ed7e6dc881de23001b/blob",
        "/sessions/0b8e6c8e-4d9b-4a53-9a4e-3c7f6c2b1d0e.jsonl",
        "/objects/sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    ):
        assert not REDACTOR.redact_text(path).counts, path


def test_near_misses_still_clean_when_json_escaped() -> None:
    for case in near_misses():
        raw = json.dumps({"text": case.text}, ensure_ascii=True)
        assert not REDACTOR.redact_json(raw).counts, case.label


def test_deep_json_does_not_exhaust_the_stack() -> None:
    secret = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    value: object = {"token": secret}
    for _ in range(5000):
        value = [value]
    redacted, counts = REDACTOR.redact_value(value)
    assert counts == {"github_token": 1}
    inner = redacted
    for _ in range(5000):
        assert isinstance(inner, list)
        inner = inner[0]
    assert inner == {"token": "[REDACTED:github_token]"}


# ------------------------------------------------ tokens glued to an identifier

GLUED = [
    (case.label, case.text[s.start : s.end], s.category)
    for case in glued(Gen(20261202))
    for s in case.secrets
    if not case.text.startswith('{"type"')
]


def _carriers(token: str) -> list[tuple[str, str]]:
    """``(carrier, raw text)``: the token glued to a name in every place a
    transcript can hold it."""
    glued_name = f"OPENAI_KEY_{token}"
    nested: object = {"command": f"echo {glued_name}", "cwd": f"/tmp/x_{token}/file"}
    for _ in range(2):
        nested = {"content": json.dumps(nested)}
    return [
        ("text", f"export {glued_name} -{token} AWS_KEY{token}"),
        ("escaped JSON", json.dumps({"type": "user", "message": {"content": glued_name}})),
        ("nested JSON", json.dumps(nested)),
        ("path", f"Read /tmp/x_{token}/file and /srv/token_{token}"),
        ("file name", f"cp ./x_{token} /tmp/ && ls token_{token}"),
    ]


@pytest.mark.parametrize(("label", "token", "category"), GLUED, ids=[g[0] for g in GLUED])
def test_tokens_glued_to_a_name_are_redacted_in_every_carrier(
    label: str, token: str, category: str
) -> None:
    for carrier, raw in _carriers(token):
        redact = REDACTOR.redact_json if raw.startswith("{") else REDACTOR.redact_text
        out = redact(raw)
        assert out.counts, (carrier, raw)
        assert token not in out.text and not (raw.startswith("{") and _leaks(out.text, token)), (
            carrier,
            out.text,
        )
        # The identifier before the token stays.
        assert "OPENAI_KEY_[REDACTED:" in out.text or carrier in ("path", "file name"), out.text
        assert redact(out.text).text == out.text, carrier


def test_tokens_glued_to_a_name_in_memories() -> None:
    stored: list[NewMemory] = []
    repos = SimpleNamespace(memory=SimpleNamespace(create=stored.append))
    tokens = [token for _, token, _ in GLUED]
    for token in tokens:
        remember(
            repos,  # type: ignore[arg-type]
            f"the mirror deploys with MIRROR_KEY_{token} now",
            project="/app",
            tags=(f"tag_{token}",),
        )
    assert len(stored) == len(tokens)
    for token, memory in zip(tokens, stored, strict=True):
        assert "MIRROR_KEY_[REDACTED:" in memory.text, memory.text
        assert token not in memory.text and token not in "".join(memory.tags)


@pytest.mark.parametrize("n", [2, 6])
def test_tokens_glued_to_each_other_are_all_found_in_one_scan(n: int) -> None:
    g = Gen(7)
    makers = [
        lambda: "ghp_" + g.mixed(ALNUM, 36),
        lambda: "AKIA" + g.chars(UPPER_DIGITS, 15) + "7",
        lambda: "npm_" + g.mixed(ALNUM, 36),
        lambda: "sk_live_" + g.mixed(ALNUM, 99),
        lambda: "sk_test_" + g.mixed(ALNUM, 99),
        lambda: "rk_test_" + g.mixed(ALNUM, 24),
    ]
    for make in makers:
        tokens = [make() for _ in range(n)]
        text = "x_" + "".join(tokens) + " done"
        # Each ends where the next begins, so one scan finds them all: the
        # redactor's few rounds would otherwise leave the first ones of a
        # longer chain.
        assert len(REDACTOR.find(text)) == n, text
        out = REDACTOR.redact_text(text)
        assert not any(t in out.text for t in tokens), out.text
        assert out.text.startswith("x_[REDACTED:")
        assert REDACTOR.redact_text(out.text).text == out.text


@pytest.mark.parametrize("before", ["x_", "session_", "TOKEN=abc_", "X=abc_", "/tmp/x_"])
def test_jwt_glued_after_a_name_is_redacted(before: str) -> None:
    jwt = Gen(11).jwt()
    text = f"{before}{jwt} done"
    out = REDACTOR.redact_text(text)
    assert jwt not in out.text and "eyJ" not in out.text, out.text
    # "TOKEN=" also makes the whole value an assignment; elsewhere the name stays.
    assert out.text.startswith(before) or before.startswith("TOKEN="), out.text
    doc = json.dumps({"content": json.dumps({"command": f"echo {text}"})})
    assert not _leaks(REDACTOR.redact_json(doc).text, jwt)
