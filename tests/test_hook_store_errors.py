"""`lcm hook` on PostgreSQL when a live server answers with an error.

Real hook subprocesses against the embedded PostgreSQL server, which stays
up: a statement cancelled by a ``statement_timeout`` while another session
holds a lock, and a schema written by a newer lossless. The hook exits 0,
prints nothing, captures offline, and its log line names the store error (not
"server unavailable"); ``lcm status`` and ``lcm doctor``'s checks show the
waiting capture and why; once the cause is gone the next hook delivers it,
once. (A stopped server still says "server unavailable":
tests/test_offline_capture.py.)
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.pg_fixtures import own_pg_server
from tests.store.postgres_server import EmbeddedPostgres
from tests.test_hooks import assert_quiet, claude_payload, claude_turn, fire, hooks_log, lcm_argv
from tests.test_offline_capture import captured_ever, outbox_pending, receipts

from lossless.config import load_config
from lossless.doctor import check_hook_log, check_outbox
from lossless.errors import StoreError, StoreUnavailableError
from lossless.worker import running_worker_pid

__all__ = ["own_pg_server"]

SESSION = "0b7e4c1a-9d2f-4e6b-8a35-71c2f0d9e4b8"


@pytest.fixture
def store_url(
    own_pg_server: EmbeddedPostgres, monkeypatch: pytest.MonkeyPatch, lcm_home: Path
) -> Iterator[str]:
    """A database holding the store's schema, selected for this test's ``LCM_HOME``."""
    url = own_pg_server.create_store_database()
    monkeypatch.setenv("LCM_STORAGE_BACKEND", "postgresql")
    monkeypatch.setenv("LCM_POSTGRES_URL", url)
    monkeypatch.setenv("LCM_WORKER_IDLE_S", "1")
    try:
        yield url
    finally:
        pid = running_worker_pid(lcm_home)
        if pid:
            os.kill(pid, signal.SIGTERM)
        own_pg_server.drop_database(url)


def database(url: str) -> str:
    return url.rsplit("/", 1)[1]


def contents(url: str) -> list[str]:
    from lossless.store.postgres import PostgresStore

    with PostgresStore(url, migrate=False) as store:
        (conversation,) = store.conversations.list()
        return [m.content for m in store.messages.iter_all(conversation.id)]


def turns(n: int) -> list[str]:
    """What a Stop hook after turn ``n`` stores: the last answer waits for the
    record after it (an assistant message can still grow)."""
    return [text for t in range(1, n + 1) for text in (f"question {t}", f"answer {t}")][:-1]


def stop_hook(transcript: Path) -> None:
    assert_quiet(fire("Stop", claude_payload("Stop", transcript, SESSION), client="claude-code"))


def last_line(home: Path) -> str:
    return hooks_log(home).splitlines()[-1]


def assert_delivered_once(home: Path, url: str, events: int, turn: int) -> None:
    """The last hook delivered the ``events`` captured, each once, and the
    store then holds exactly the transcript's first ``turn`` turns."""
    line = last_line(home)
    assert f"outbox: {events} delivered, 0 left" in line, line
    assert receipts(url) == captured_ever(home) == events
    assert contents(url) == turns(turn)


def status_json() -> dict[str, object]:
    result = subprocess.run(
        [*lcm_argv(), "status", "--json"], capture_output=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr.decode()
    found: dict[str, object] = json.loads(result.stdout)
    return found


def test_a_statement_timeout_on_a_live_server_is_a_store_error_captured_and_delivered_once(
    own_pg_server: EmbeddedPostgres, store_url: str, tmp_path: Path, lcm_home: Path
) -> None:
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    claude_turn(transcript, SESSION, 1)
    stop_hook(transcript)
    assert contents(store_url) == turns(1)

    # Another session holds the conversations table; the hooks' database
    # cancels any statement after 300 ms. The server is up all along.
    own_pg_server.admin_execute(
        f"ALTER DATABASE {database(store_url)} SET statement_timeout = '300ms'"
    )
    blocker = psycopg.connect(store_url)
    try:
        blocker.execute("LOCK TABLE lcm.conversations IN ACCESS EXCLUSIVE MODE")
        claude_turn(transcript, SESSION, 2)
        stop_hook(transcript)
    finally:
        blocker.rollback()
        blocker.close()
        own_pg_server.admin_execute(f"ALTER DATABASE {database(store_url)} RESET statement_timeout")
    line = last_line(lcm_home)
    assert " warn " in line, line
    assert "server unavailable" not in line, line
    assert re.search(r"store error \(57014 QueryCanceled: PostgreSQL at \S+: a statement", line)
    assert "captured offline; the next hook or `lcm worker` delivers it" in line, line
    assert re.search(r"\.jsonl: [1-9]\d*B captured", line), line
    assert outbox_pending(lcm_home) == 1

    config = load_config(lcm_home)
    (waiting,) = check_outbox(config)
    assert waiting.status == "warn" and "1 event(s) captured offline" in waiting.detail
    assert "store error (57014 QueryCanceled" in waiting.detail
    (warned,) = check_hook_log(config)
    assert warned.name == "store errors" and "1 of 2 hook run(s)" in warned.detail
    outbox = status_json()["outbox"]
    assert isinstance(outbox, dict) and outbox["pending"] == 1
    assert outbox["last_cause"]["label"] == "57014 QueryCanceled"
    assert outbox["last_cause"]["transient"] is True
    # Nothing reached the server meanwhile, and nothing is lost.
    assert contents(store_url) == turns(1)

    claude_turn(transcript, SESSION, 3)
    stop_hook(transcript)
    assert " ok " in last_line(lcm_home)
    assert_delivered_once(lcm_home, store_url, events=1, turn=3)
    assert outbox_pending(lcm_home) == 0
    (emptied,) = check_outbox(config)
    assert emptied.status == "ok"


def test_a_schema_from_a_newer_lossless_is_captured_loudly_until_it_is_fixed(
    own_pg_server: EmbeddedPostgres, store_url: str, tmp_path: Path, lcm_home: Path
) -> None:
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    claude_turn(transcript, SESSION, 1)
    stop_hook(transcript)

    with psycopg.connect(store_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO lcm.schema_migrations(version, name, checksum) "
            "SELECT max(version) + 1, 'from_a_newer_lossless', 'x' FROM lcm.schema_migrations"
        )
    for turn in (2, 3):
        claude_turn(transcript, SESSION, turn)
        stop_hook(transcript)
        line = last_line(lcm_home)
        assert " warn " in line and "server unavailable" not in line, line
        assert "store error (MigrationError: PostgreSQL at " in line, line
        assert "written by a newer lossless" in line, line
        assert "this will not clear by itself: fix its cause (`lcm doctor`)" in line, line
    assert outbox_pending(lcm_home) == 2
    (stuck,) = check_outbox(load_config(lcm_home))
    assert stuck.status == "problem", stuck
    assert "2 event(s) captured offline" in stuck.detail
    assert "store error (MigrationError" in stuck.detail

    with psycopg.connect(store_url, autocommit=True) as conn:
        conn.execute("DELETE FROM lcm.schema_migrations WHERE name = 'from_a_newer_lossless'")
    claude_turn(transcript, SESSION, 4)
    stop_hook(transcript)
    assert_delivered_once(lcm_home, store_url, events=2, turn=4)


def test_a_connection_is_unavailable_only_when_the_server_cannot_be_reached(
    own_pg_server: EmbeddedPostgres, store_url: str
) -> None:
    from lossless.store.postgres import PostgresStore

    refused = re.sub(r":\d+/", f":{own_pg_server.port + 1}/", store_url)  # nothing listens
    with pytest.raises(StoreUnavailableError, match="cannot connect to PostgreSQL"):
        PostgresStore(refused, connect_timeout_s=2)
    # The server answered and refused: waiting will not help, so it is no outage.
    for url, said in (
        (store_url.replace(database(store_url), "lcm_no_such_database"), "does not exist"),
        (re.sub(r":[^:@/]+@", ":wrong-password@", store_url), "authentication failed"),
    ):
        with pytest.raises(StoreError, match=said) as caught:
            PostgresStore(url, connect_timeout_s=2)
        assert not isinstance(caught.value, StoreUnavailableError)
        assert not caught.value.transient
        assert caught.value.label in ("login refused", "authentication failed")


def test_a_missing_privilege_is_a_lasting_store_error_and_nothing_is_lost(
    own_pg_server: EmbeddedPostgres,
    store_url: str,
    tmp_path: Path,
    lcm_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    transcript = tmp_path / "project" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    claude_turn(transcript, SESSION, 1)
    stop_hook(transcript)
    # A role that may read the store but not write to it (roles are the
    # cluster's, so its name is this database's).
    role = f"reader_{database(store_url)}"
    with psycopg.connect(store_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'reader-secret'")
        conn.execute(f"GRANT USAGE ON SCHEMA lcm TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA lcm TO {role}")
    try:
        monkeypatch.setenv(
            "LCM_POSTGRES_URL", re.sub(r"//[^@]+@", f"//{role}:reader-secret@", store_url)
        )
        claude_turn(transcript, SESSION, 2)
        stop_hook(transcript)
        line = last_line(lcm_home)
        assert " warn " in line and "server unavailable" not in line, line
        assert "store error (42501 InsufficientPrivilege: PostgreSQL at " in line, line
        assert "permission denied for table" in line, line
        assert "this will not clear by itself" in line, line
        assert "reader-secret" not in hooks_log(lcm_home)
        (stuck,) = check_outbox(load_config(lcm_home))
        assert stuck.status == "problem" and "42501 InsufficientPrivilege" in stuck.detail
    finally:
        with psycopg.connect(store_url, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
    monkeypatch.setenv("LCM_POSTGRES_URL", store_url)
    claude_turn(transcript, SESSION, 3)
    stop_hook(transcript)
    assert_delivered_once(lcm_home, store_url, events=1, turn=3)


def test_a_connection_killed_mid_transaction_is_unavailable_a_timeout_is_not(
    store_url: str,
) -> None:
    from lossless.store.postgres import PostgresStore

    with PostgresStore(store_url, statement_timeout_ms=200) as store:
        with pytest.raises(StoreError) as timed_out:
            store._q1("SELECT pg_sleep(1)")
        assert not isinstance(timed_out.value, StoreUnavailableError)
        assert timed_out.value.transient and timed_out.value.label == "57014 QueryCanceled"
        with pytest.raises(StoreUnavailableError, match="was lost"), store.transaction() as tx:
            tx.conversations.list()
            conn = tx._current()
            assert conn is not None
            with psycopg.connect(store_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", [conn.info.backend_pid])
            tx.conversations.list()


def test_the_doctor_reads_each_hook_lines_status_word(lcm_home: Path) -> None:
    import time

    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    logs = lcm_home / "logs"
    logs.mkdir(parents=True)
    (logs / "hooks.log").write_text(
        f"{stamp}Z Stop session=s pid=1 ok 40ms server unavailable (cannot connect to "
        "PostgreSQL at h:1/d: refused): captured offline; t.jsonl: 10B captured\n"
        f"{stamp}Z Stop session=s pid=2 warn 41ms store error (57014 QueryCanceled: PostgreSQL "
        "at h:1/d: a statement was cancelled): captured offline; t.jsonl: 12B captured\n"
        f"{stamp}Z summarizer session=- pid=3 warn 2 of 3 summaries fell back\n"
        f"{stamp}Z Stop pid=4 error 3ms HookInputError: empty stdin\n",
        "utf-8",
    )
    failed, stored = check_hook_log(load_config(lcm_home))
    assert failed.name == "recent errors" and "1 of 4 hook run(s)" in failed.detail
    assert "HookInputError" in failed.detail
    assert stored.name == "store errors" and stored.detail.startswith("1 of 4 hook run(s)")
    assert "57014 QueryCanceled" in stored.detail
