"""A regex grep's time budget holds for any pattern: CLI, MCP server, library.

Patterns that backtrack catastrophically on one row (``(a|aa)+$`` against a
run of ``a``: with the standard library's ``re`` that match alone runs for
longer than the universe) are cut off at the deadline; the answer says how
far back it searched. Through MCP, a grep stuck on such a row does not hold
up the next ``lcm_status``. Random patterns from a grammar of the risky
shapes (nested and overlapping repeats, backreferences) never run past the
budget and never give a traceback.

The budget is checked against the CPU time used (``tests/cpu_clock.py``: the
``regex`` matcher's timeout counts CPU, so on a loaded machine a budget's
wall time stretches with the load while its CPU time does not); wall limits
only catch a hang, far below the years an unbudgeted match would run.
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
from tests.cpu_clock import process_cpu_s, spent_by_children, spent_here
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

#: Wall seconds after which an awaited answer counts as hung: far above what
#: load stretches a call to (minutes at load 30 on two cores), far below what
#: the hangs under test would take (a wedged match runs for years).
HANG_S = 300.0

#: CPU seconds an ``lcm grep --time-budget 1`` may use: the budget plus the
#: command's start-up (imports, opening the store: ~0.5 s), with room to spare.
CLI_CPU_S = 4.0


def lcm(home: Path, *args: str, timeout: float = HANG_S) -> subprocess.CompletedProcess[str]:
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
    with spent_by_children() as spent:
        run = lcm(bomb_home, "grep", pattern, "--time-budget", "1", "--json", timeout=HANG_S)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 0, run.stderr
    assert spent.cpu_s < CLI_CPU_S, f"lcm grep {pattern!r} used {spent} with --time-budget 1"
    json.loads(run.stdout)


def test_the_pattern_length_is_capped(bomb_home: Path) -> None:
    run = lcm(bomb_home, "grep", "(a|b)" * 1000)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert "at most 2,000" in run.stderr


# --------------------------------------------------------------------------- MCP


class Wire:
    """``lcm mcp`` spoken to in raw JSON-RPC lines, answers collected by a reader thread."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lossless", "mcp"],
            cwd="/",
            env={**os.environ, "LCM_HOME": str(home), **env},
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

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)

    def call(self, request_id: int, name: str, arguments: dict[str, object]) -> None:
        self.send(
            {
                "id": request_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )


def open_wire(home: Path, **env: str) -> Wire:
    server = Wire(home, env)
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
        server.wait(0, HANG_S)
        server.send({"method": "notifications/initialized"})
        # The first call loads the engine; measure the calls that follow.
        server.call(1, "lcm_status", {})
        server.wait(1, HANG_S)
    except BaseException:
        server.close()
        raise
    return server


@pytest.fixture
def wire(bomb_home: Path) -> Iterator[Wire]:
    server = open_wire(bomb_home)
    try:
        yield server
    finally:
        server.close()


#: CPU seconds the MCP server spends after a wedging grep is sent before the
#: test takes it to be matching (its reading and compiling take milliseconds).
GREP_BUSY_CPU_S = 0.5

#: CPU seconds the MCP server may use on one grep with the default 1.5 s budget
#: (grep.time_budget_s): the budget, and the call's own work with room to spare.
MCP_GREP_CPU_S = 3.5


def test_a_grep_over_mcp_stops_at_its_budget_and_says_so(wire: Wire) -> None:
    before = process_cpu_s(wire.proc.pid)
    wire.call(2, "lcm_grep", {"pattern": r"(a|aa)+$", "all_projects": True})
    _, grep = wire.wait(2, HANG_S)
    used = process_cpu_s(wire.proc.pid) - before
    assert used < MCP_GREP_CPU_S, f"lcm_grep used {used:.2f} s CPU against a 1.5 s budget"
    result = grep["result"]
    assert isinstance(result, dict) and not result.get("isError"), grep
    text = json.dumps(result)
    assert "time budget" in text  # says it stopped, not that nothing matched


def test_a_wedged_grep_does_not_hold_up_lcm_status(bomb_home: Path) -> None:
    # A grep that stays wedged on a bomb row far longer than the status call
    # can take, however loaded the machine: a status answered while it still
    # runs was not queued behind it (nor starved of the GIL by the match).
    # The server is killed once status answers, so the grep costs no more.
    server = open_wire(bomb_home, LCM_GREP_TIME_BUDGET_S="600")
    try:
        before = process_cpu_s(server.proc.pid)
        server.call(2, "lcm_grep", {"pattern": r"(a|aa)+$", "all_projects": True})
        # Status is asked only once the grep is matching (the server is busy,
        # with nothing else to do): a status that came first proves nothing.
        started = time.monotonic()
        while process_cpu_s(server.proc.pid) - before < GREP_BUSY_CPU_S:
            assert time.monotonic() - started < HANG_S, "the grep never started"
            time.sleep(0.05)
        assert 2 not in server.answers, "lcm_grep answered before it was wedged"
        server.call(3, "lcm_status", {})
        _, status = server.wait(3, HANG_S)  # the grep would take 600 s
        assert "error" not in status, status
        assert 2 not in server.answers, "lcm_grep answered first: it was not wedged"
    finally:
        server.close()


def test_an_overlong_pattern_is_refused_over_mcp(wire: Wire) -> None:
    wire.call(2, "lcm_grep", {"pattern": "x" * 2_000_001})
    _, answer = wire.wait(2, HANG_S)
    result = answer.get("result")
    assert isinstance(result, dict) and result.get("isError"), answer
    wire.call(3, "lcm_status", {})
    wire.wait(3, HANG_S)


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
    try:
        with spent_here() as spent:
            hits = bomb_store.search.grep(
                GrepQuery(pattern, mode="regex", limit=20, time_budget_s=0.25)
            )
    except InputError:
        return  # a clear refusal (bad syntax) is an answer too
    assert spent.cpu_s < 2.0, f"{pattern!r} used {spent} against a 0.25 s budget"
    assert hits.complete or hits.scanned_until is not None
