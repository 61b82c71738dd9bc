"""A spend cap on a paid summarizer, on the wire: past the cap no more calls
reach the API, compaction uses the offline summarizer and says so, and
`lcm status` shows the use against the cap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.wire_server import Received, Reply, running_wire_server

from lossless.config import load_config
from lossless.summarize.spend import LEDGER_FILE, SpendLedger


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


def answer(_: Received) -> Reply:
    body: dict[str, Any] = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
        "content": [{"type": "text", "text": "The user asked for a fix; it was made."}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 1000, "output_tokens": 20},
    }  # fmt: skip
    return Reply(200, body)


def test_past_the_cap_compaction_goes_offline_and_says_so(
    tmp_path: Path, shared_data: Path
) -> None:
    pytest.importorskip("anthropic")
    home = tmp_path / "home"
    transcript = sorted((shared_data / "codex").rglob("*.jsonl"))[0]
    assert lcm(home, "import", "--complete", "-q", str(transcript)).returncode == 0
    with running_wire_server() as server:
        server.responder = answer
        env = {
            "LCM_SUMMARIZER_PROVIDER": "anthropic",
            "LCM_SUMMARIZER_BASE_URL": f"http://127.0.0.1:{server.port}",
            "LCM_SUMMARIZER_API_KEY": "sk-test-not-a-real-key",
            "LCM_SUMMARIZER_MODEL": "test-model",
            "LCM_SUMMARIZER_MAX_CALLS_PER_HOUR": "2",
        }
        done = lcm(home, "compact", "--all", "--json", **env)
        calls = len(server.received)
        text = lcm(home, "status", **env).stdout
        status = json.loads(lcm(home, "status", "--json", **env).stdout)
    assert done.returncode == 0, done.stderr
    assert calls == 2  # the cap held: no third call reached the API
    passes = [p for c in json.loads(done.stdout)["conversations"] for p in c["passes"]]
    assert len(passes) > 2
    assert [p["model"] for p in passes[:2]] == ["test-model", "test-model"]
    offline = [p for p in passes[2:] if p["model"]]
    assert offline and all(p["model"].startswith("extractive (spend cap reached") for p in offline)
    assert all(p["level"] != "fallback" for p in passes)  # real summaries, not truncations
    spend = status["summarizer_spend"]
    assert spend["use"]["calls_hour"] == 2 and spend["use"]["tokens_hour"] == 2 * 1020
    assert spend["caps"]["calls_per_hour"] == 2 and "2 of 2 calls per hour" in spend["reached"]
    assert "calls 2/2 this hour" in text and "cap reached" in text


def test_compact_text_output_names_the_cap(tmp_path: Path, shared_data: Path) -> None:
    pytest.importorskip("anthropic")
    home = tmp_path / "home"
    transcript = sorted((shared_data / "codex").rglob("*.jsonl"))[0]
    assert lcm(home, "import", "--complete", "-q", str(transcript)).returncode == 0
    # The day's budget is already spent (another process, earlier today).
    SpendLedger(load_config(home).home / LEDGER_FILE).record(50_000)
    with running_wire_server() as server:
        server.responder = answer
        done = lcm(
            home, "compact", "--all", "-q",
            LCM_SUMMARIZER_PROVIDER="anthropic",
            LCM_SUMMARIZER_BASE_URL=f"http://127.0.0.1:{server.port}",
            LCM_SUMMARIZER_API_KEY="sk-test-not-a-real-key",
            LCM_SUMMARIZER_MAX_TOKENS_PER_DAY="40000",
        )  # fmt: skip
        assert server.received == []
    assert done.returncode == 0, done.stderr
    assert "written by the offline summarizer: the spend cap was reached" in done.stdout
    assert "50,000 of 40,000 tokens per day" in done.stdout


def test_no_cap_still_counts_the_use(tmp_path: Path) -> None:
    ledger = SpendLedger(tmp_path / LEDGER_FILE)
    for tokens in (10, 20, 30):
        ledger.record(tokens)
    use = ledger.use()
    assert (use.calls_hour, use.calls_day, use.tokens_hour, use.tokens_day) == (3, 3, 60, 60)
    old = SpendLedger(tmp_path / LEDGER_FILE, clock=lambda: 0.0)  # a call long ago
    old.record(1_000)
    assert ledger.use().calls_day == 3  # older than a day: outside every window
