"""The resident hook server on a PostgreSQL store: real processes, a real PostgreSQL 18.

Two homes, each on its own database of one embedded server: hooks go through
the hook server in one and run inline in the other, and must answer and
store the same. Then the PostgreSQL server goes away while the hook server
lives: the served hooks capture offline exactly as inline ones do (exit 0,
nothing on stdout or stderr, the log saying why), the hook server goes on,
and once PostgreSQL is back the next hooks deliver what was captured: both
stores end the same as a bulk import of the transcripts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.pg_fixtures import ensure_running, own_pg_server  # noqa: F401  (fixture)
from tests.store.postgres_server import EmbeddedPostgres
from tests.test_hook_server import (
    SESSION,
    hook,
    log_lines,
    served,
    start_server,
    wait_for_worker,
)
from tests.test_hooks import claude_payload, claude_turn, snapshot

from lossless.hook_server.control import alive, read_info, state, stop


def on_postgres(home: Path, url: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'[storage]\nbackend = "postgresql"\n\n[postgres]\nurl = "{url}"\nconnect_timeout_s = 2\n',
        "utf-8",
    )


@pytest.fixture
def pg_homes(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    lcm_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[EmbeddedPostgres, Path, Path]]:
    """(PostgreSQL, served home, inline home), each home on a fresh database; the
    hook server stopped at the end."""
    server: EmbeddedPostgres = request.getfixturevalue("own_pg_server")
    monkeypatch.setenv("LCM_HOOKS_SERVER", "true")
    monkeypatch.setenv("LCM_HOOKS_SERVER_IDLE_S", "120")
    monkeypatch.setenv("LCM_WORKER_IDLE_S", "1")  # the teardown waits for the workers
    urls = [server.create_database() for _ in range(2)]
    inline = tmp_path / "inline-home"
    for home, url in zip((lcm_home, inline), urls, strict=True):
        on_postgres(home, url)
    try:
        yield server, lcm_home, inline
    finally:
        ensure_running(server)
        pid = (read_info(lcm_home) or {}).get("pid")
        stop(lcm_home)
        for home in (lcm_home, inline):
            wait_for_worker(home)
        for url in urls:
            server.drop_database(url)
        assert not isinstance(pid, int) or not alive(pid) or _gone_soon(pid)


def _gone_soon(pid: int) -> bool:
    from tests.test_hook_server import wait_gone

    wait_gone(pid)
    return True


def test_served_hooks_on_postgres_store_as_inline_and_survive_the_server_going_away(
    pg_homes: tuple[EmbeddedPostgres, Path, Path], tmp_path: Path
) -> None:
    postgres, serving, inline_home = pg_homes
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    off = {**os.environ, "LCM_HOOKS_SERVER": "false"}
    hook_server = start_server(serving, transcript)  # turn 1, inline, starts the server
    first = hook("Stop", claude_payload("Stop", transcript, SESSION), inline_home, env=off)
    assert first.returncode == 0, first.stderr.decode()

    def both(event: str, turn: int) -> list[str]:
        claude_turn(transcript, SESSION, turn)
        payload = claude_payload(event, transcript, SESSION, prompt="how do we deploy?")
        via_server = hook(event, payload, serving)
        inline = hook(event, payload, inline_home, env=off)
        assert (via_server.returncode, via_server.stdout, via_server.stderr) == (
            inline.returncode,
            inline.stdout,
            inline.stderr,
        ), event
        assert via_server.returncode == 0 and via_server.stderr == b"", event
        last = log_lines(serving)[-1]
        assert served(last), last
        assert not served(log_lines(inline_home)[-1])
        return [last, log_lines(inline_home)[-1]]

    for turn, event in enumerate(("UserPromptSubmit", "Stop", "UserPromptSubmit", "Stop"), 2):
        both(event, turn)
    assert snapshot(serving) == snapshot(inline_home)
    assert state(serving).pid == hook_server.pid

    # PostgreSQL goes away while the hook server lives.
    postgres.stop()
    offline = [both("Stop", turn) for turn in (6, 7)]
    for served_line, inline_line in offline:
        assert "server unavailable" in served_line and "captured offline" in served_line
        assert "server unavailable" in inline_line and "captured offline" in inline_line
    assert state(serving).pid == hook_server.pid, "the hook server went on"

    # Back: the next hooks deliver the outbox, in both homes.
    postgres.start()
    postgres.wait_ready()
    both("Stop", 8)
    both("SessionEnd", 9)
    assert state(serving).pid == hook_server.pid
    got, want = snapshot(serving), snapshot(inline_home)
    assert got == want
    (conversation,) = got.values()
    # Every turn's user and assistant message (the last one with SessionEnd).
    assert len(conversation["messages"]) == 2 * 9
