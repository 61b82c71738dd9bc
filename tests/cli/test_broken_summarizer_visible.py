"""A broken summarizer is visible: `lcm compact` counts the summaries of each
escalation level and says why, `lcm status` counts the stored ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def lcm(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ, **env)
    environ.pop("COLUMNS", None)
    return subprocess.run(
        [sys.executable, "-m", "lossless", "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=600,
    )


BROKEN = {
    "LCM_SUMMARIZER_PROVIDER": "command",
    "LCM_SUMMARIZER_COMMAND": "false",
    "LCM_SUMMARIZER_RETRIES": "0",
}


@pytest.fixture
def home(tmp_path: Path, shared_data: Path) -> Path:
    where = tmp_path / "home"
    transcript = shared_data / "claude-code" / "spotter" / "tool_heavy.jsonl"
    codex = sorted((shared_data / "codex").rglob("*.jsonl"))[-1]
    done = lcm(where, "import", "--complete", "-q", str(transcript), str(codex))
    assert done.returncode == 0, done.stderr
    return where


def test_compact_and_status_count_fallbacks_and_say_why(home: Path) -> None:
    done = lcm(home, "compact", "--all", "-q", **BROKEN)
    assert done.returncode == 0, done.stderr
    assert "Summaries by escalation level: 0 normal, 0 aggressive," in done.stdout
    assert "fallback = truncation" in done.stdout
    assert "why: normal: summarizer command 'false' exited with status 1" in done.stdout

    status = json.loads(lcm(home, "status", "--json").stdout)["summary_levels"]
    stored = json.loads(lcm(home, "status", "--json").stdout)["stats"]["summaries"]
    assert stored > 0 and status["levels"] == {"fallback": stored}
    assert status["latest_level"] == "fallback"
    # the command's failure, or the open breaker it caused
    assert "'false'" in status["latest_why"] or "circuit open" in status["latest_why"]
    text = lcm(home, "status").stdout
    assert f"by level:    {stored:,} fallback" in text and "latest fallback" in text


def test_compact_json_reports_levels_and_reasons(home: Path) -> None:
    done = lcm(home, "compact", "--all", "--json", **BROKEN)
    report = json.loads(done.stdout)["conversations"]
    acted = [c for c in report if c["summaries_created"]]
    assert acted
    for conv in acted:
        assert set(conv["levels"]) == {"fallback"}
        assert sum(conv["levels"].values()) == len(conv["summaries_created"])
        assert conv["reasons"] and all(p["why"] for p in conv["passes"])


def test_a_working_summarizer_is_reported_normal(home: Path) -> None:
    done = lcm(home, "compact", "--all", "-q")  # the offline extractive summarizer
    assert done.returncode == 0, done.stderr
    assert "Summaries by escalation level:" in done.stdout and "why:" not in done.stdout
    levels = json.loads(lcm(home, "status", "--json").stdout)["summary_levels"]
    assert levels["latest_level"] is None and "fallback" not in levels["levels"]
