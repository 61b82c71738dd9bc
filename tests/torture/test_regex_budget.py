"""A regex grep's time budget holds for any pattern: CLI, MCP server, library.

Patterns that backtrack catastrophically on one row (``(a|aa)+$`` against a
run of ``a``: with the standard library's ``re`` that match alone runs for
longer than the universe) are cut off at the deadline; the answer says how
far back it searched. Through MCP, a grep stuck on such a row does not hold
up the next ``lcm_status``. Random patterns from a grammar of the risky
shapes (nested and overlapping repeats, backreferences) never run past the
budget and never give a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.torture.knobs import EXAMPLES

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.errors import InputError
from lossless.store.contract import GrepQuery, Store

#: Rows a backtracking matcher chokes on.
BOMBS = ["a" * 60 + "!", "ab " * 40 + "!", "a" * 3000, "x" * 30 + "y" * 30 + "\n" * 5]

#: Patterns that wedged the old matcher; each is given with a row it explodes on.
PATTERNS = [
    r"(a|aa)+$",
    r"^(a|a?)+$",
    r"(a+)+$",
    r"(.*a){20}",
    r"(\w+)\s(\w*\s?)*\1!",
    r"^(([a-z])+.)+[A-Z]([a-z])+$",
]

#: Generous against a 1 s budget: the CLI's own start-up and import take ~1-2 s
#: on a loaded two-core machine.
CLI_SECONDS = 20.0


def lcm(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lossless", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "LCM_HOME": str(home)},
    )


@pytest.fixture(scope="module")
def bomb_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("regex-home") / "home"
    with Engine.open(config=load_config(home, env={})) as engine:
        engine.conversation("s-bombs", project="/w").ingest(
            [{"role": "user", "content": bomb} for bomb in BOMBS]
            + [{"role": "assistant", "content": "aaaa, the newest message"}]
        )
    return home


@pytest.mark.parametrize("pattern", PATTERNS)
def test_cli_grep_answers_within_its_budget(bomb_home: Path, pattern: str) -> None:
    started = time.monotonic()
    run = lcm(bomb_home, "grep", pattern, "--time-budget", "1", "--json", timeout=120)
    took = time.monotonic() - started
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 0, run.stderr
    assert took < CLI_SECONDS, f"lcm grep {pattern!r} took {took:.1f} s with --time-budget 1"
    json.loads(run.stdout)


def test_the_pattern_length_is_capped(bomb_home: Path) -> None:
    run = lcm(bomb_home, "grep", "(a|b)" * 1000)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert "at most 2,000" in run.stderr


# --------------------------------------------------------------------------- MCP


class Wire:
    """``lcm mcp`` spoken to in raw JSON-RPC lines, answers collected by a reader thread."""

    def __init__(self, home: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lossless", "mcp"],
            cwd="/",
            env={**os.environ, "LCM_HOME": str(home)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.answers: dict[int, tuple[float, dict[str, object]]] = {}
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            if isinstance(message.get("id"), int):
                with self.arrived:
                    self.answers[message["id"]] = (time.monotonic(), message)
                    self.arrived.notify_all()

    def send(self, message: dict[str, object]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def wait(self, request_id: int, timeout: float) -> tuple[float, dict[str, object]]:
        with self.arrived:
            assert self.arrived.wait_for(lambda: request_id in self.answers, timeout), (
                f"no answer to request {request_id} within {timeout} s"
            )
            return self.answers[request_id]

    def call(self, request_id: int, name: str, arguments: dict[str, object]) -> None:
        self.send(
            {
                "id": request_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )


@pytest.fixture
def wire(bomb_home: Path) -> Iterator[Wire]:
    server = Wire(bomb_home)
    try:
        server.send(
            {
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "torture", "version": "1"},
                },
            }
        )
        server.wait(0, 60)
        server.send({"method": "notifications/initialized"})
        # The first call loads the engine; time the calls that follow.
        server.call(1, "lcm_status", {})
        server.wait(1, 60)
        yield server
    finally:
        server.proc.kill()
        server.proc.wait(timeout=10)


def test_a_wedged_grep_does_not_hold_up_lcm_status(wire: Wire) -> None:
    sent = time.monotonic()
    wire.call(2, "lcm_grep", {"pattern": r"(a|aa)+$", "all_projects": True})
    wire.call(3, "lcm_status", {})
    grep_at, grep = wire.wait(2, 30)
    status_at, status = wire.wait(3, 30)
    # grep's budget is the grep.time_budget_s setting (1.5 s).
    assert grep_at - sent < 10, f"lcm_grep took {grep_at - sent:.1f} s"
    assert status_at - sent < 10, f"lcm_status waited {status_at - sent:.1f} s"
    result = grep["result"]
    assert isinstance(result, dict) and not result.get("isError"), grep
    assert "error" not in status, status
    text = json.dumps(result)
    assert "time budget" in text  # says it stopped, not that nothing matched


def test_an_overlong_pattern_is_refused_over_mcp(wire: Wire) -> None:
    wire.call(2, "lcm_grep", {"pattern": "x" * 2_000_001})
    _, answer = wire.wait(2, 30)
    result = answer.get("result")
    assert isinstance(result, dict) and result.get("isError"), answer
    wire.call(3, "lcm_status", {})
    wire.wait(3, 10)


# --------------------------------------------------------------------------- generated patterns


def _patterns() -> st.SearchStrategy[str]:
    atoms = st.sampled_from(["a", "b", "aa", ".", r"\w", r"\s", "[ab]", r"\d", "a?", "(?:a|aa)"])

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        quantifier = st.sampled_from(["*", "+", "?", "{2,}", "{1,30}", "{20}", "*?", "++"])
        return st.one_of(
            st.tuples(inner, quantifier).map(lambda t: f"(?:{t[0]}){t[1]}"),
            st.tuples(inner, quantifier).map(lambda t: f"({t[0]}){t[1]}"),
            st.tuples(inner, inner).map(lambda t: f"{t[0]}{t[1]}"),
            st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
            inner.map(lambda p: f"({p})\\1"),
            inner.map(lambda p: f"{p}$"),
            inner.map(lambda p: f"(?i){p}"),
        )

    return st.recursive(atoms, grow, max_leaves=8)


@pytest.fixture(scope="module")
def bomb_store(bomb_home: Path) -> Iterator[Store]:
    with Engine.open(config=load_config(bomb_home, env={})) as engine:
        yield engine.store


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(pattern=_patterns())
def test_generated_patterns_never_outrun_the_budget(bomb_store: Store, pattern: str) -> None:
    started = time.monotonic()
    try:
        hits = bomb_store.search.grep(
            GrepQuery(pattern, mode="regex", limit=20, time_budget_s=0.25)
        )
    except InputError:
        return  # a clear refusal (bad syntax) is an answer too
    took = time.monotonic() - started
    assert took < 2.0, f"{pattern!r} took {took:.2f} s against a 0.25 s budget"
    assert hits.complete or hits.scanned_until is not None
