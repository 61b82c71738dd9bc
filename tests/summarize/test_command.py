from __future__ import annotations

import os
import sys
import time

import pytest

from lossless.delegation import CHILD_MARKER_ENV
from lossless.summarize import (
    SummarizerFatalError,
    SummarizerRefused,
    SummarizerUnavailable,
    SummaryRequest,
    summarize_with_escalation,
)
from lossless.summarize.command import CommandSummarizer

REQUEST = SummaryRequest(
    text="[2026-02-17T07:37:00.000Z] user:\nfix the bug", depth=0, target_tokens=50
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


def script(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_prompt_goes_to_stdin_and_stdout_is_the_summary() -> None:
    code = (
        "import sys, os; data = sys.stdin.read(); "
        "print('got', len(data), 'chars;', 'fenced' if '<transcript>' in data else 'unfenced', "
        f"'marker=' + os.environ.get('{CHILD_MARKER_ENV}', '-'))"
    )
    response = CommandSummarizer(script(code), timeout_s=20, model="cli-model").summarize(REQUEST)
    assert response.text.startswith("got ")
    assert "fenced" in response.text
    assert "marker=1" in response.text
    assert response.model == "cli-model"
    assert response.input_tokens > 100  # the whole system + user prompt was estimated
    assert response.output_tokens >= 1


def test_non_zero_exit_is_unavailable_with_stderr_tail() -> None:
    code = (
        "import sys; sys.stdin.read(); sys.stderr.write('x' * 5000 + 'rate limited'); sys.exit(3)"
    )
    with pytest.raises(SummarizerUnavailable, match=r"status 3: x+rate limited") as info:
        CommandSummarizer(script(code), timeout_s=20).summarize(REQUEST)
    assert len(str(info.value)) < 1000


def test_empty_stdout_is_refused() -> None:
    code = "import sys; sys.stdin.read(); sys.stderr.write('not logged in')"
    with pytest.raises(SummarizerRefused, match="printed nothing; stderr: not logged in"):
        CommandSummarizer(script(code), timeout_s=20).summarize(REQUEST)


def test_timeout_kills_the_whole_process_group() -> None:
    # The child spawns a grandchild that keeps stdout open; only a group kill ends it.
    code = (
        "import subprocess, sys, time; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); "
        "time.sleep(30)"
    )
    started = time.monotonic()
    with pytest.raises(SummarizerUnavailable, match=r"timed out after 0\.5s"):
        CommandSummarizer(script(code), timeout_s=0.5).summarize(REQUEST)
    assert time.monotonic() - started < 4


def test_command_that_ignores_stdin_still_works() -> None:
    response = CommandSummarizer(script("print('summary')"), timeout_s=20).summarize(
        SummaryRequest(text="x" * 500_000, depth=0, target_tokens=50)
    )
    assert response.text == "summary"


def test_missing_command_is_fatal() -> None:
    with pytest.raises(SummarizerFatalError, match="not found"):
        CommandSummarizer(["lcm-no-such-summarizer-binary"], timeout_s=5).summarize(REQUEST)


def test_env_override_still_marks_child() -> None:
    code = f"import os; print(os.environ.get('{CHILD_MARKER_ENV}'), os.environ.get('ONLY'))"
    env = {"ONLY": "me", "PATH": os.environ.get("PATH", "")}
    response = CommandSummarizer(script(code), timeout_s=20, env=env).summarize(REQUEST)
    assert response.text == "1 me"


def test_invalid_argv() -> None:
    with pytest.raises(ValueError):
        CommandSummarizer([])
    with pytest.raises(ValueError):
        CommandSummarizer(["claude", ""])


def test_escalation_over_a_failing_command_falls_back() -> None:
    source = "step done\n" * 2000
    result = summarize_with_escalation(
        CommandSummarizer(script("import sys; sys.exit(1)"), timeout_s=20),
        source,
        depth=0,
        target_tokens=100,
    )
    assert result.level == "fallback"
    assert result.error is not None and "exited with status 1" in result.error
