"""The worker on an outbox whose delivery keeps failing: back-off, few log lines, recovery.

A real PostgreSQL store (the embedded server) and a role that lost a
privilege (INSERT on ``lcm.messages``): delivery fails on a live server until
the privilege is granted again. The worker's loop runs on a clock the test
moves (its sleeps advance it), so attempts and log lines are counted per poll,
never raced against wall time; the subprocess test uses a real ``lcm worker``
and waits only for what the outbox itself records.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.pg_fixtures import own_pg_server
from tests.store.postgres_server import EmbeddedPostgres
from tests.test_hook_store_errors import SESSION, contents, database, turns
from tests.test_hooks import claude_turn, lcm_argv
from tests.test_offline_capture import captured_ever, outbox_pending, receipts

from lossless import offline_capture
from lossless.config import load_config
from lossless.delivery_retry import DeliveryRetry
from lossless.doctor import check_outbox
from lossless.engine.engine import Engine
from lossless.offline_capture import DELIVERY_ERROR, OutboxDelivery, capture_offline, outbox_state
from lossless.store.outbox import Outbox
from lossless.worker import Worker, running_worker_pid

__all__ = ["own_pg_server"]


class Store:
    """A store database, the owner's URL, and a role's URL that may lose INSERT on messages."""

    def __init__(self, server: EmbeddedPostgres) -> None:
        self.server = server
        self.owner = server.create_store_database()
        self.role = f"writer_{database(self.owner)}"
        with psycopg.connect(self.owner, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {self.role} LOGIN PASSWORD 'writer-secret'")
            conn.execute(f"GRANT USAGE ON SCHEMA lcm TO {self.role}")
            conn.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA lcm TO {self.role}")
            conn.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA lcm TO {self.role}")
        self.url = re.sub(r"//[^@]+@", f"//{self.role}:writer-secret@", self.owner)

    def insert_on_messages(self, allowed: bool) -> None:
        verb = f"GRANT INSERT ON lcm.messages TO {self.role}"
        if not allowed:
            verb = f"REVOKE INSERT ON lcm.messages FROM {self.role}"
        with psycopg.connect(self.owner, autocommit=True) as conn:
            conn.execute(verb)

    def drop(self) -> None:
        with psycopg.connect(self.owner, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {self.role}")
            conn.execute(f"DROP ROLE {self.role}")
        self.server.drop_database(self.owner)


@pytest.fixture
def store(
    own_pg_server: EmbeddedPostgres, monkeypatch: pytest.MonkeyPatch, lcm_home: Path
) -> Iterator[Store]:
    found = Store(own_pg_server)
    monkeypatch.setenv("LCM_STORAGE_BACKEND", "postgresql")
    monkeypatch.setenv("LCM_POSTGRES_URL", found.url)
    try:
        yield found
    finally:
        pid = running_worker_pid(lcm_home)
        if pid:
            os.kill(pid, 15)
        found.drop()


def capture(transcript: Path, turn: int) -> None:
    """What a hook that could not store turn ``turn`` puts into the outbox."""
    claude_turn(transcript, SESSION, turn)
    capture_offline(load_config(), [(transcript, "claude-code")], final=False)


class Clock:
    """The worker's clock and sleep: time moves only when the worker sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.polls = 0
        self.at_poll: dict[int, object] = {}

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.polls += 1
        self.now += seconds
        action = self.at_poll.pop(self.polls, None)
        if callable(action):
            action()


def test_a_lasting_store_error_backs_off_to_the_cap_logs_little_and_recovery_delivers_once(
    store: Store,
    tmp_path: Path,
    lcm_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LCM_WORKER_OUTBOX_RETRY_MAX_S", "600")
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    store.insert_on_messages(False)
    capture(transcript, 1)
    assert outbox_pending(lcm_home) == 1

    clock = Clock()
    attempts: list[float] = []
    deliver = offline_capture.deliver_outbox

    def counted(engine: Engine, *, limit: int | None = None) -> OutboxDelivery | None:
        delivery = deliver(engine, limit=limit)
        if delivery is not None:
            attempts.append(clock.now)
        return delivery

    monkeypatch.setattr(offline_capture, "deliver_outbox", counted)
    # Poll 100 (t = 6000 s): a hook captures turn 2. Poll 150 (t = 9000 s):
    # someone grants the privilege again.
    clock.at_poll[100] = lambda: capture(transcript, 2)
    clock.at_poll[150] = lambda: store.insert_on_messages(True)
    lines: list[str] = []
    with Engine.open() as engine:
        # idle 0: on its own the worker would exit at its first idle poll.
        report = Worker(engine, log=lines.append, clock=clock, sleep=clock.sleep).run(
            idle_s=0, poll_s=60
        )

    # The wait doubles from the poll interval up to the cap (600 s); the new
    # capture makes the worker try at its next poll, and wait little again.
    waits = [b - a for a, b in itertools.pairwise(attempts)]
    assert waits[:5] == [60, 120, 240, 480, 600]
    assert attempts[attempts.index(5700) + 1] == 6000, attempts
    after = attempts.index(6000)
    assert waits[after : after + 5] == [60, 120, 240, 480, 600]
    assert attempts[-1] == 9300  # the first attempt after the grant
    assert len(attempts) == 22 and clock.polls == 155

    outbox_lines = [line for line in lines if line.startswith("outbox:")]
    assert len(outbox_lines) == 4, lines
    first, *still, recovered = outbox_lines
    assert first.startswith("outbox: delivery failing, 1 event(s) wait: ")
    assert "42501 InsufficientPrivilege" in first or "permission denied" in first, first
    assert "next attempt in 60 s, then less often (at most every 600 s)" in first
    # At most once an hour while the cause stays the same.
    cause = first.split(" wait: ", 1)[1].split("; next attempt in ")[0]
    assert still == [
        f"outbox: delivery still failing after 10 attempts over 65.0 min: {cause} "
        "(1 event(s) wait; next attempt in 600 s)",
        f"outbox: delivery still failing after 19 attempts over 125.0 min: {cause} "
        "(2 event(s) wait; next attempt in 600 s)",
    ]
    assert recovered == (
        "outbox: 2 delivered, 0 left: delivery works again after 21 failed attempt(s) "
        "over 155.0 min"
    )
    assert "writer-secret" not in "\n".join(lines)

    assert report.delivered == 2 and report.outbox_error is None and report.idle_exit
    assert outbox_pending(lcm_home) == 0
    assert receipts(store.owner) == captured_ever(lcm_home) == 2
    assert contents(store.owner) == turns(2)
    state = outbox_state(load_config())
    assert state is not None and state.delivery_error is None


def test_the_worker_stays_while_delivery_fails_and_delivers_once_it_works(
    store: Store, tmp_path: Path, lcm_home: Path
) -> None:
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    store.insert_on_messages(False)
    capture(transcript, 1)
    env = {**os.environ, "LCM_WORKER_OUTBOX_RETRY_MAX_S": "0.2"}
    # --idle 0: a worker that does not hold on for the outbox exits after
    # its first failed attempt.
    worker = subprocess.Popen(
        [*lcm_argv(), "worker", "--idle", "0", "--poll", "0.05"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        # Until the worker has failed three times, or exited; the deadline only
        # ends a hung run (no outcome depends on it).
        failed, deadline = 0, time.monotonic() + 120
        while worker.poll() is None and failed < 3:
            assert time.monotonic() < deadline, "the worker neither failed 3 times nor exited"
            with Outbox(lcm_home / "outbox.db") as outbox:
                note = outbox.noted(DELIVERY_ERROR)
            failed = note.get("attempts", 1) if isinstance(note, dict) else 0
            assert isinstance(failed, int)
            time.sleep(0.02)
        assert worker.poll() is None, worker.communicate(timeout=60)
        (stuck,) = check_outbox(load_config())
        assert stuck.status == "problem" and "attempts)" in stuck.detail, stuck
        store.insert_on_messages(True)
        _, err = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate()
    assert worker.returncode == 0, err
    said = [line for line in err.splitlines() if line.startswith("lcm worker: outbox:")]
    assert len(said) == 2, err
    assert said[0].startswith("lcm worker: outbox: delivery failing, 1 event(s) wait: ")
    assert re.fullmatch(
        r"lcm worker: outbox: 1 delivered, 0 left: delivery works again after \d+ failed "
        r"attempt\(s\) over [\d.]+ min",
        said[1],
    ), said
    assert outbox_pending(lcm_home) == 0
    assert receipts(store.owner) == captured_ever(lcm_home) == 1
    assert contents(store.owner) == turns(1)


def test_delivery_retry_says_a_changed_cause_and_an_emptied_outbox() -> None:
    now = [0.0]
    said: list[str] = []
    retry = DeliveryRetry(2.0, 8.0, lambda: now[0], said.append)

    def fail(error: str, delivered: int = 0) -> None:
        retry.failed(OutboxDelivery(delivered=delivered, remaining=3, error=error), (1, 3))

    fail("event 1 (transcript): server unavailable")
    assert retry.failing and retry.next_at == 2.0 and len(said) == 1
    for _ in range(5):
        now[0] = retry.next_at
        assert retry.due((1, 3))
        fail("event 1 (transcript): server unavailable")
    assert len(said) == 1 and retry.wait_s() == 8.0
    assert not retry.due((1, 3)) and retry.due((1, 4))  # a hook captured: at once
    # The same cause at a later event (a hook delivered the first) is no news.
    fail("event 2 (transcript): server unavailable")
    assert len(said) == 1 and retry.next_at == now[0] + 2.0
    fail("event 2 (transcript): 42501 InsufficientPrivilege", delivered=1)
    assert said[1] == "outbox: 1 delivered, 3 left (stopped: event 2 (transcript): 42501 " + (
        "InsufficientPrivilege)"
    )
    assert said[2].startswith("outbox: delivery still failing after 8 attempts over 0.5 min, now:")
    retry.emptied()
    assert not retry.failing and said[3].startswith("outbox: delivered by another process after 8")
    retry.emptied()
    assert len(said) == 4
