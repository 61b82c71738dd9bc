"""examples/agent_loop.py leaves ~/.lcm alone and explains a missing API key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "agent_loop.py"


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("LCM_HOME", "ANTHROPIC_API_KEY")}
    environ.update(HOME=str(tmp_path / "user"), TMPDIR=str(tmp_path))
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
    )


def test_runs_in_a_temporary_home_by_default(tmp_path: Path) -> None:
    (tmp_path / "user").mkdir()
    done = run(tmp_path, "--turns", "30")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "user" / ".lcm").exists()
    [home] = list(tmp_path.glob("lcm-agent-loop-*"))
    assert (home / "lcm.db").is_file() and f"stored in {home}" in done.stdout
    assert "DAG depth -1" not in done.stdout


def test_anthropic_without_a_key_is_a_clear_error(tmp_path: Path) -> None:
    done = run(tmp_path, "--anthropic", "--turns", "1")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "ANTHROPIC_API_KEY" in done.stderr or "pip install" in done.stderr
    assert not list(tmp_path.glob("lcm-agent-loop-*"))  # refused before writing anything
