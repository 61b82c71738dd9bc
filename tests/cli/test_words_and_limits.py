"""Counts read as words, and nonsense limits or clients are refused up front."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lossless.words import plural


def lcm(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lossless", "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )


@pytest.mark.parametrize(
    ("noun", "count", "expected"),
    [("memory", 1, "memory"), ("memory", 2, "memories"), ("summary", 18, "summaries"),
     ("message", 3, "messages"), ("day", 2, "days"), ("match", 2, "matches")],
)  # fmt: skip
def test_plural(noun: str, count: int, expected: str) -> None:
    assert plural(noun, count) == expected


def test_export_counts_read_as_words(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert lcm(home, "remember", "Deploys go through scripts/blue_green.sh").returncode == 0
    done = lcm(home, "export", "-o", str(tmp_path / "out.jsonl"))
    assert done.returncode == 0, done.stderr
    assert "1 memory" in done.stderr and "memorys" not in done.stderr


@pytest.mark.parametrize(
    "args",
    [("conversations", "--client", "foo"), ("conversations", "--limit", "0"),
     ("messages", "1", "--limit", "-2"), ("grep", "x", "--limit", "-1")],
)  # fmt: skip
def test_nonsense_options_are_usage_errors(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = lcm(tmp_path / "home", *args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Invalid value" in done.stderr
