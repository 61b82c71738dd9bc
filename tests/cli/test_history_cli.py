"""The `lcm` CLI contract: help everywhere, one JSON document with --json, errors on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from lossless.cli import cli

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample-session.jsonl"


def all_commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    # Through click's own listing: ``lcm``'s group loads a command's module
    # only when asked for it, so ``group.commands`` alone depends on what
    # earlier tests happened to load.
    found: list[tuple[str, click.Command]] = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, f"`lcm {prefix}{name}` is listed but cannot be loaded"
        found.append((f"{prefix}{name}", command))
        if isinstance(command, click.Group):
            found.extend(all_commands(command, f"{prefix}{name} "))
    return found


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_every_command_has_help_text() -> None:
    commands = all_commands(cli)
    assert {"import", "status", "conversations", "messages", "grep", "describe", "expand"} <= {
        name for name, _ in commands
    }
    for name, command in commands:
        assert command.help and len(command.help.strip()) > 20, f"`lcm {name}` lacks help"
        code, out, _ = run(*name.split(), "--help")
        assert code == 0 and "Usage:" in out


def test_read_commands_print_one_json_document() -> None:
    code, _, _ = run("import", "--complete", "-q", str(SAMPLE))
    assert code == 0
    documents: dict[str, object] = {}
    for args in (
        ("status",),
        ("conversations",),
        ("messages", "1", "--limit", "5"),
        ("grep", "advisory", "--limit", "3"),
        ("grep", "migration tests", "--mode", "full_text"),
        ("describe", "3"),
        ("config", "show"),
        ("import", str(SAMPLE)),
    ):
        code, out, _ = run(*args, "--json")
        assert code == 0, args
        documents[" ".join(args)] = json.loads(out)  # exactly one document, or this raises
    status = documents["status"]
    assert isinstance(status, dict) and status["stats"]["messages"] == 120
    grep_doc = documents["grep advisory --limit 3"]
    assert isinstance(grep_doc, dict) and len(grep_doc["hits"]) == 3
    assert all("advisory" in h["snippet"] for h in grep_doc["hits"])
    described = documents["describe 3"]
    assert isinstance(described, dict) and described["message"]["id"] == 3
    again = documents[f"import {SAMPLE}"]
    assert isinstance(again, dict) and again["messages_added"] == 0


def test_tables_by_default() -> None:
    run("import", "--complete", "-q", str(SAMPLE))
    code, out, _ = run("grep", "pg_advisory_xact_lock", "--limit", "2")
    assert code == 0
    header = out.splitlines()[0].split()
    assert header[:3] == ["id", "conv", "role"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("describe", "sum_doesnotexist"), "no summary sum_doesnotexist"),
        (("describe", "999999"), "no message 999999"),
        (("describe", "banana"), "is not an id"),
        (("grep", "([unclosed"), "invalid regular expression"),
        (("messages", "no-such-session"), "no conversation"),
        (("expand", "sum_nothing"), "no summary"),
        (("import", "/definitely/not/here.jsonl"), "no such file"),
    ],
)
def test_errors_go_to_stderr_with_nonzero_exit(args: tuple[str, ...], message: str) -> None:
    run("import", "--complete", "-q", str(SAMPLE))
    code, out, err = run(*args)
    assert code != 0
    assert out == ""
    assert message in err


def test_import_of_only_garbage_exits_nonzero(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\x00\x01 not json\n{broken\n")
    code, _, err = run("import", "--kind", "generic", str(garbage))
    assert code == 1
    assert f"{garbage}:1" in err and f"{garbage}:2" in err


def test_import_without_paths_discovers_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude_home = tmp_path / "claude"
    project = claude_home / "projects" / "-home-dev-inventory"
    project.mkdir(parents=True)
    (project / "5a3c0f4e-7d21-4b8e-9f60-2c1d8e4b7a90.jsonl").write_bytes(SAMPLE.read_bytes())
    monkeypatch.setenv("LCM_CLAUDE_HOME", str(claude_home))
    code, out, _ = run("import", "--complete", "--json")
    assert code == 0
    assert json.loads(out)["messages_added"] == 120


def test_config_show_reports_origins(lcm_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lcm_home.mkdir(parents=True, exist_ok=True)
    (lcm_home / "config.toml").write_text("fresh_tail_count = 12\n[summarizer]\nmodel = 'm1'\n")
    monkeypatch.setenv("LCM_LEAF_TARGET_TOKENS", "900")
    monkeypatch.setenv("LCM_POSTGRES_URL", "postgresql://me:hunter2@db.example:5432/lcm")
    code, out, _ = run("config", "show", "--json")
    assert code == 0
    shown = json.loads(out)
    assert shown["fresh_tail_count"]["value"] == "12"
    assert shown["fresh_tail_count"]["origin"].startswith("file ")
    entry = shown["leaf_target_tokens"]
    assert (entry["value"], entry["origin"]) == ("900", "env LCM_LEAF_TARGET_TOKENS")
    assert shown["summarizer.model"]["value"] == "m1"
    assert "hunter2" not in out and "db.example:5432" in out
    assert shown["storage.backend"]["origin"] == "default"


def test_lcm_runs_as_a_real_process(tmp_path: Path) -> None:
    env_home = tmp_path / "proc-home"
    done = subprocess.run(
        [sys.executable, "-m", "lossless", "--home", str(env_home), "status", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout)["stats"]["messages"] == 0


def test_grep_reports_a_scan_cut_short_by_its_time_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run("import", "--complete", str(SAMPLE))[0] == 0
    monkeypatch.setenv("LCM_GREP_TIME_BUDGET_S", "1e-9")
    code, out, err = run("grep", r"\w+", "--limit", "500", "--json")
    assert code == 0
    cut = json.loads(out)
    assert cut["complete"] is False and cut["scanned_until"] and cut["hits"]
    code, out, err = run("grep", r"\w+", "--limit", "500")
    assert "were not searched" in err
    # --time-budget 0 searches everything, whatever the setting says.
    whole = json.loads(run("grep", r"\w+", "--limit", "500", "--time-budget", "0", "--json")[1])
    assert whole["complete"] is True and len(whole["hits"]) > len(cut["hits"])
