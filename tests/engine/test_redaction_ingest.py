"""Secrets never reach the store: not the tables, not the FTS index, not the WAL, not files."""

from __future__ import annotations

import json
import secrets
import string
from pathlib import Path

from click.testing import CliRunner

from lossless.cli import cli
from lossless.engine.engine import Engine


def _random(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def planted() -> dict[str, str]:
    """Fresh, randomly generated secrets in real formats (never real credentials)."""
    upper_digits = string.ascii_uppercase + string.digits
    alnum = string.ascii_letters + string.digits
    return {
        "aws": "AKIA" + _random(upper_digits, 16),
        "github": "ghp_" + _random(alnum, 36),
        "anthropic": "sk-ant-api03-" + _random(alnum + "-_", 93) + "AA",
        "password": "Zq" + _random(alnum, 18),
        "github_2": "ghp_" + _random(alnum, 36),
        "github_3": "ghp_" + _random(alnum, 36),
    }


def _files_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())


def test_planted_secrets_never_reach_disk(tmp_path: Path, lcm_home: Path) -> None:
    found = planted()
    transcript = tmp_path / "session.jsonl"
    huge_output = "log line\n" * 20_000 + f"AWS_ACCESS_KEY_ID={found['aws']}\n"
    lines = [
        {"role": "user", "content": f"deploy with key {found['aws']} please"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Using token {found['github']}."},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Bash",
                    "input": {"command": f"curl -H 'x-api-key: {found['anthropic']}' api"},
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": huge_output}],
        },
        {"role": "user", "content": f"db at postgres://app:{found['password']}@db:5432/x"},
        # In the raw JSONL record the newline is the escape "\\n", glued to the token.
        {"role": "assistant", "content": f"exported:\n{found['github_2']}\tdone"},
    ]
    body = "\n".join(json.dumps(line) for line in lines) + "\n"
    # A line that cannot be parsed still lands in quarantine: it must be redacted too.
    body += f'{{"role": "user", "content": "broken {found["github"]}\n'
    body += f'{{"role": "user", "content": "broken too\\n{found["github_3"]}\n'
    transcript.write_text(body, "utf-8")

    with Engine.open(lcm_home) as engine:
        result = engine.import_file(transcript, kind="generic", final=True)
        assert result.messages_added == 5 and len(result.problems) == 2
        assert result.redactions  # counted per category
        stored = " ".join(
            m.content for m in engine.store.messages.list(result.conversation_id or 0)
        )
        assert "[REDACTED:aws_access_key]" in stored
        assert "[REDACTED:github_token]" in stored
        # The huge tool output went to a large file, redacted before it was written.
        assert engine.store.stats().large_files == 1
        # Raw records are stored compressed: the bytes on disk alone would not
        # show a secret left in one, so they are read back through the store.
        raw = " ".join(
            r.raw
            for c in engine.store.conversations.list()
            for r in engine.store.messages.native_records(c.id)
        )
        assert all(value not in raw for value in found.values())
        # grep for the secret finds nothing; grep for the placeholder finds it.
        assert engine.grep(found["github"][:12]) == []
        assert engine.grep(r"\[REDACTED:github_token\]")
    on_disk = _files_bytes(lcm_home)
    for name, value in found.items():
        assert value.encode() not in on_disk, f"{name} secret found on disk"
        assert value[-12:].encode() not in on_disk, f"part of the {name} secret found on disk"


def test_status_counts_redactions_by_category(tmp_path: Path) -> None:
    found = planted()
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(
        json.dumps({"role": "user", "content": f"{found['github']} and {found['aws']}"}) + "\n"
    )
    runner = CliRunner()
    assert runner.invoke(cli, ["import", "--complete", "-q", str(transcript)]).exit_code == 0
    status = json.loads(runner.invoke(cli, ["status", "--json"]).stdout)
    assert status["redactions"] == {"aws_access_key": 1, "github_token": 1}


def test_user_patterns_from_the_cli(tmp_path: Path) -> None:
    runner = CliRunner()
    added = runner.invoke(cli, ["sensitive", "add", "ticket", r"ACME-(?P<secret>\d{5})"])
    assert added.exit_code == 0, added.output
    refused = runner.invoke(cli, ["sensitive", "add", "slow", "(x+)+y"])
    assert refused.exit_code == 1 and "catastrophic" in refused.stderr
    listed = json.loads(runner.invoke(cli, ["sensitive", "list", "--json"]).stdout)
    assert [p["name"] for p in listed["patterns"]] == ["ticket"]
    tested = json.loads(
        runner.invoke(cli, ["sensitive", "test", "see ACME-12345 now", "--json"]).stdout
    )
    assert tested == {"text": "see ACME-[REDACTED:user:ticket] now", "counts": {"user:ticket": 1}}
    transcript = tmp_path / "tickets.jsonl"
    transcript.write_text(json.dumps({"role": "user", "content": "ticket ACME-54321"}) + "\n")
    runner.invoke(cli, ["import", "--complete", "-q", str(transcript)])
    # A generic file's session is its name plus a hash of its path: a prefix finds it.
    shown = json.loads(runner.invoke(cli, ["messages", "tickets", "--json"]).stdout)
    assert shown["messages"][0]["content"] == "ticket ACME-[REDACTED:user:ticket]"
    removed = runner.invoke(cli, ["sensitive", "remove", "ticket"])
    assert removed.exit_code == 0
    missing = runner.invoke(cli, ["sensitive", "remove", "ticket"])
    assert missing.exit_code == 1 and "no redaction pattern" in missing.stderr
