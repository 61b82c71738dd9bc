"""A mistake in config.toml costs only its own line: everything still runs and says where."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lossless.cli import cli
from lossless.config import load_config
from lossless.errors import ConfigError

BROKEN = """# my settings
fresh_tail_count = 48
[summarizer]
provider = "command"
command = "claude -p"   # the CLI I pay for
timeout_s = = 30
[recall]
limt = 5
budget_bytes = "lots"
"""


def _write(home: Path, text: str = BROKEN) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_lenient_load_keeps_the_valid_settings_and_names_each_bad_line(tmp_path: Path) -> None:
    path = _write(tmp_path)
    config = load_config(tmp_path, env={}, lenient=True)
    assert config.fresh_tail_count == 48
    assert (config.summarizer_provider, config.summarizer_command) == ("command", "claude -p")
    assert config.summarizer_timeout_s == 60.0 and config.recall_budget_bytes == 1_500
    found = {(p.line, p.message.split(" ")[0]) for p in config.problems}
    assert {line for line, _ in found} == {6, 8, 9}, config.problems
    texts = [p.describe() for p in config.problems]
    assert any(t.startswith(f"{path}:6: not valid TOML") for t in texts), texts
    assert any("unknown setting 'recall.limt' (did you mean 'recall.limit'?)" in t for t in texts)
    assert any(f"{path}:9:" in t and "expected int" in t for t in texts), texts


def test_strict_load_names_the_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path)
    with pytest.raises(ConfigError, match=rf"{path}:6: not valid TOML.*lcm config show"):
        load_config(tmp_path, env={})


def test_a_bad_environment_value_is_named_too(tmp_path: Path) -> None:
    config = load_config(tmp_path, env={"LCM_FRESH_TAIL_COUNT": "many"}, lenient=True)
    assert config.fresh_tail_count == 32
    assert [p.describe() for p in config.problems] == [
        "env LCM_FRESH_TAIL_COUNT: fresh_tail_count from env LCM_FRESH_TAIL_COUNT: "
        "expected int, got 'many'"
    ]


def test_config_show_status_and_doctor_run_and_point_at_the_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = _write(home)
    runner = CliRunner()
    shown = runner.invoke(cli, ["--home", str(home), "config", "show"])
    assert shown.exit_code == 0, shown.output
    assert "fresh_tail_count = 48" in shown.stdout
    assert "Newest raw messages that are never compacted." in shown.stdout
    assert "env LCM_FRESH_TAIL_COUNT" in shown.stdout
    assert f"{path}:6: not valid TOML" in shown.stderr
    as_json = json.loads(
        runner.invoke(cli, ["--home", str(home), "config", "show", "--json"]).stdout
    )
    entry = as_json["summarizer.timeout_s"]
    assert (entry["type"], entry["default"], entry["env"]) == (
        "float",
        60.0,
        "LCM_SUMMARIZER_TIMEOUT_S",
    )
    status = runner.invoke(cli, ["--home", str(home), "status"])
    assert status.exit_code == 0, status.output
    assert f"config problem: {path}:8: unknown setting 'recall.limt'" in status.stdout
    other = runner.invoke(cli, ["--home", str(home), "conversations"])
    assert other.exit_code != 0 and f"{path}:6" in other.output
    assert "Traceback" not in other.output
    doctor = runner.invoke(cli, ["--home", str(home), "doctor", "--json"])
    checks = json.loads(doctor.stdout)["checks"]
    config_checks = [c for c in checks if c["area"] == "config"]
    assert len(config_checks) == 3 and all(c["status"] == "problem" for c in config_checks)


def test_hooks_keep_capturing_and_log_the_problem(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = _write(home)
    transcript = tmp_path / "project" / "0b7e4c1d-2a95-4f68-8e3b-6d9c0a1f5e24.jsonl"
    transcript.parent.mkdir()
    transcript.write_text(
        json.dumps({"role": "user", "content": "deploy the api"})
        + "\n"
        + json.dumps({"role": "assistant", "content": "deployed"})
        + "\n",
        encoding="utf-8",
    )
    payload = {"session_id": "s1", "transcript_path": str(transcript), "cwd": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "lossless", "--home", str(home), "hook", "SessionEnd"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == b""
    log = (home / "logs" / "hooks.log").read_text()
    assert " ok " in log and f"config: {path}:6: not valid TOML" in log, log
    config = load_config(home, lenient=True)
    from lossless.store import open_store

    with open_store(config) as store:
        (conversation,) = store.conversations.list()
        assert store.messages.count(conversation.id) == 2


def test_config_set_and_unset_keep_comments_and_order(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = _write(
        home,
        '# top comment\nfresh_tail_count = 48  # keep more\n\n[summarizer]\nprovider = "extractive"\n\n[recall]\nlimit = 2\n',
    )
    runner = CliRunner()
    for argv in (
        ["config", "set", "fresh_tail_count", "64"],
        ["config", "set", "summarizer.command", "claude -p"],
        ["config", "set", "summarizer.provider", "command"],
        ["config", "set", "grep.time_budget_s", "2.5"],
        ["config", "unset", "recall.limit"],
    ):
        result = runner.invoke(cli, ["--home", str(home), *argv])
        assert result.exit_code == 0, result.output
    assert path.read_text() == (
        "# top comment\n"
        "fresh_tail_count = 64  # keep more\n"
        "\n"
        "[summarizer]\n"
        'provider = "command"\n'
        'command = "claude -p"\n'
        "\n"
        "[recall]\n"
        "\n"
        "[grep]\n"
        "time_budget_s = 2.5\n"
    )
    config = load_config(home, env={})
    assert (config.fresh_tail_count, config.summarizer_command, config.grep_time_budget_s) == (
        64,
        "claude -p",
        2.5,
    )
    bad = runner.invoke(cli, ["--home", str(home), "config", "set", "fresh_tail_cont", "3"])
    assert bad.exit_code != 0 and "did you mean 'fresh_tail_count'" in bad.output
    bad = runner.invoke(cli, ["--home", str(home), "config", "set", "fresh_tail_count", "x"])
    assert bad.exit_code != 0 and "expected int" in bad.output
    assert "fresh_tail_count = 64" in path.read_text()


def test_the_mcp_server_starts_with_a_broken_config(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import anyio
    from tests.test_mcp_server import stdio_session, structured

    home = tmp_path / "home"
    _write(home)
    project = tmp_path / "project"
    project.mkdir()

    async def main() -> None:
        async with stdio_session(home, project) as session:
            status = structured(await session.call_tool("lcm_status", {}))
            assert status["conversations"] == 0 and status["summarizer"] == "command"

    anyio.run(main)
