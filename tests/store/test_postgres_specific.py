"""PostgreSQL-only behaviour on a real server: the migration ledger and its lock,
connection faults, timeouts, concurrency, and search parity with SQLite."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.store.conformance import msg
from tests.store.postgres_server import PASSWORD, EmbeddedPostgres, require_psycopg

from lossless.config import load_config
from lossless.errors import ConfigError, MigrationError, StoreError
from lossless.models import NewSummary
from lossless.store import open_store
from lossless.store.contract import GrepQuery, Store
from lossless.store.sqlite import SQLiteStore

psycopg = require_psycopg()

from lossless.store.postgres import PostgresStore  # noqa: E402
from lossless.store.postgres.migrate import (  # noqa: E402
    applied_migrations,
    available_migrations,
    migrate_schema,
)


def admin(url: str, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    s = PostgresStore(pg_url)
    yield s
    s.close()


def conv(store: Store, session: str = "s1") -> int:
    return store.conversations.get_or_create(project="p", session_id=session, client="generic").id


# -- migrations -----------------------------------------------------------


def test_migrations_are_recorded_with_checksums(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    rows = admin(
        pg_url, "SELECT version, name, checksum FROM lcm.schema_migrations ORDER BY version"
    )
    files = available_migrations()
    assert [(r[0], r[1], r[2]) for r in rows] == [(m.version, m.name, m.checksum) for m in files]
    assert rows[0][:2] == (1, "initial")
    # Reopening applies nothing and accepts the recorded history.
    with PostgresStore(pg_url) as again:
        assert [m.version for m in again.migrations()] == [m.version for m in files]
        assert again.info()["migrations"][0] == "0001_initial"


def test_changed_applied_migration_is_refused(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    admin(pg_url, "UPDATE lcm.schema_migrations SET checksum = 'deadbeef' || substr(checksum, 9)")
    with pytest.raises(MigrationError, match="changed after it was applied"):
        PostgresStore(pg_url)


def test_newer_database_is_refused(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    future = len(available_migrations()) + 1
    admin(
        pg_url,
        "INSERT INTO lcm.schema_migrations VALUES (%s, 'from_the_future', 'x', now())",
        [future],
    )
    with pytest.raises(MigrationError, match="newer lossless"):
        PostgresStore(pg_url)


def test_missing_or_reordered_history_is_refused(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    admin(pg_url, "DELETE FROM lcm.schema_migrations WHERE version = 1")
    with pytest.raises(MigrationError, match="gap or is out of order"):
        PostgresStore(pg_url)


def test_unmigrated_database_is_refused_without_migrate(pg_url: str) -> None:
    with pytest.raises(MigrationError, match="lcm postgres migrate"):
        PostgresStore(pg_url, migrate=False)
    PostgresStore(pg_url).close()
    PostgresStore(pg_url, migrate=False).close()


def test_failed_migration_applies_nothing(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from lossless.store import migrations
    from lossless.store.postgres import migrate as runner

    PostgresStore(pg_url).close()
    broken = [
        *available_migrations(),
        migrations.Migration(
            len(available_migrations()) + 1,
            "broken",
            "CREATE TABLE lcm.half_done (x int);\nSELECT no_such_function();\n",
        ),
    ]
    monkeypatch.setattr(runner, "available_migrations", lambda: broken)
    with (
        psycopg.connect(pg_url, autocommit=True, row_factory=psycopg.rows.dict_row) as conn,
        pytest.raises(MigrationError, match="_broken failed and nothing was applied"),
    ):
        migrate_schema(conn, where="test")
    assert admin(pg_url, "SELECT to_regclass('lcm.half_done')") == [(None,)]
    versions = [r[0] for r in admin(pg_url, "SELECT version FROM lcm.schema_migrations")]
    assert sorted(versions) == [m.version for m in available_migrations()]


def test_concurrent_migrations_converge(pg_url: str) -> None:
    runners = 4
    barrier = threading.Barrier(runners)
    applied: list[int] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with psycopg.connect(
                pg_url, autocommit=True, row_factory=psycopg.rows.dict_row
            ) as conn:
                barrier.wait()
                applied.append(len(migrate_schema(conn, where="test").applied))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(runners)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    latest = len(available_migrations())
    assert sorted(applied) == [0] * (runners - 1) + [latest]
    with psycopg.connect(pg_url, autocommit=True, row_factory=psycopg.rows.dict_row) as conn:
        assert [m.version for m in applied_migrations(conn)] == list(range(1, latest + 1))


# -- configuration and connection errors ----------------------------------


def test_open_store_selects_postgres_and_never_falls_back(pg_url: str, tmp_path: Path) -> None:
    config = load_config(
        tmp_path, env={"LCM_STORAGE_BACKEND": "postgresql", "LCM_POSTGRES_URL": pg_url}
    )
    store = open_store(config)
    try:
        assert store.backend == "postgresql"
        assert store.capabilities.distributed_coordination
    finally:
        store.close()
    with pytest.raises(ConfigError, match="LCM_POSTGRES_URL"):
        open_store(load_config(tmp_path, env={"LCM_STORAGE_BACKEND": "postgresql"}))
    assert not (tmp_path / "lcm.db").exists()


def test_info_reports_server_migrations_and_pool(store: PostgresStore) -> None:
    info = store.info()
    assert info["backend"] == "postgresql"
    assert info["server_version"].startswith("18")
    assert info["migrations"] == [f"{m.version:04d}_{m.name}" for m in available_migrations()]
    assert info["pool"]["max"] >= info["pool"]["size"] >= 1
    assert PASSWORD not in str(info) and "****" in info["path"]


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_unreachable_server_names_host_and_port_not_password() -> None:
    port = _closed_port()
    with pytest.raises(StoreError) as caught:
        PostgresStore(f"postgresql://lcm:hunter2secret@127.0.0.1:{port}/lcm")
    text = str(caught.value)
    assert f"127.0.0.1:{port}" in text
    assert "hunter2secret" not in text and "never falls back" in text


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose listener never answers: the TCP handshake completes (the
    kernel queues it), then libpq waits for a reply that never comes, as with
    a server behind a firewall that drops packets."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def _fails_after(open_it: Callable[[], object]) -> tuple[float, str]:
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        open_it()
    return time.monotonic() - started, str(caught.value)


def test_a_silent_server_fails_after_the_connect_timeout(silent_port: int) -> None:
    url = f"postgresql://lcm:hunter2secret@127.0.0.1:{silent_port}/lcm"
    took, text = _fails_after(lambda: PostgresStore(url, connect_timeout_s=2))
    assert 1.9 <= took < 4.0, took
    assert f"127.0.0.1:{silent_port}/lcm" in text and "no answer within 2 s" in text
    assert "postgres.connect_timeout_s" in text
    assert "hunter2secret" not in text


def test_connect_timeout_setting_reaches_the_adapter(silent_port: int, tmp_path: Path) -> None:
    url = f"postgresql://lcm:hunter2secret@127.0.0.1:{silent_port}/lcm"
    env = {
        "LCM_STORAGE_BACKEND": "postgresql",
        "LCM_POSTGRES_URL": url,
        "LCM_POSTGRES_CONNECT_TIMEOUT_S": "3",
    }
    config = load_config(tmp_path, env=env)
    took, text = _fails_after(lambda: open_store(config))
    assert 2.9 <= took < 5.0, took  # 3 s, not the 5 s default
    assert "no answer within 3 s" in text and "hunter2secret" not in text
    # `lcm postgres status` and `migrate` connect with the same setting.
    from lossless.store.postgres import postgres_schema_status

    took, text = _fails_after(lambda: postgres_schema_status(config))
    assert 2.9 <= took < 5.0, took


def test_connect_timeout_in_the_url_wins_over_the_setting(silent_port: int) -> None:
    url = f"postgresql://lcm:pw@127.0.0.1:{silent_port}/lcm?connect_timeout=2"
    took, text = _fails_after(lambda: PostgresStore(url, connect_timeout_s=30))
    assert took < 4.0, took
    assert "no answer within 2 s" in text


def test_connect_timeout_must_be_positive() -> None:
    with pytest.raises(ConfigError, match=r"postgres\.connect_timeout_s"):
        PostgresStore("postgresql://u@127.0.0.1:1/db", connect_timeout_s=0)


def test_a_hook_gives_up_on_a_silent_server_after_two_seconds(
    silent_port: int, tmp_path: Path
) -> None:
    """Whatever postgres.connect_timeout_s says, a hook waits 2 s, then captures."""
    import json
    import os
    import subprocess
    import sys

    from lossless.store.outbox import OUTBOX_FILE, Outbox

    transcript = tmp_path / "session.jsonl"
    transcript.write_text(
        json.dumps(
            {
                "type": "user",
                "uuid": "u1",
                "sessionId": "s1",
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": "hello"},
            }
        )
        + "\n"
    )
    payload = {
        "session_id": "s1",
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    env = {
        **os.environ,
        "LCM_HOME": str(tmp_path / "home"),
        "LCM_STORAGE_BACKEND": "postgresql",
        "LCM_POSTGRES_URL": f"postgresql://lcm:pw@127.0.0.1:{silent_port}/lcm",
        "LCM_POSTGRES_CONNECT_TIMEOUT_S": "30",
    }
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "lossless", "hook", "Stop", "--client", "claude-code"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=60,
        check=False,
        env=env,
    )
    took = time.monotonic() - started
    assert result.returncode == 0 and result.stdout == b"", result.stderr.decode()
    assert 1.9 <= took < 6.0, took  # 2 s plus interpreter start-up, not 30 s
    with Outbox(tmp_path / "home" / OUTBOX_FILE) as outbox:
        assert outbox.pending() == 1


def test_wrong_password_is_a_clear_error(pg_server: EmbeddedPostgres) -> None:
    url = pg_server.url(password="not-the-password")
    with pytest.raises(StoreError, match="authentication failed for user 'postgres'") as caught:
        PostgresStore(url)
    assert "not-the-password" not in str(caught.value)
    assert PASSWORD not in str(caught.value)


def test_invalid_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not a valid PostgreSQL URL"):
        PostgresStore("postgresql://u:pw@host:notaport/db?bogus_option=1")


# -- faults mid-transaction -----------------------------------------------


def _backend_pids(url: str, state: str) -> list[int]:
    rows = admin(
        url,
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name = 'lossless' AND state = %s",
        [state],
    )
    return [r[0] for r in rows]


def test_statement_timeout_rolls_back_and_store_recovers(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    store = PostgresStore(pg_url, statement_timeout_ms=300)
    try:
        cid = conv(store)
        store.messages.append(cid, [msg("committed", "k0")])
        with psycopg.connect(pg_url) as blocker:
            # Another session holds the conversation's row lock, so the
            # append below waits until statement_timeout cancels it.
            blocker.execute("SELECT id FROM lcm.conversations WHERE id = %s FOR UPDATE", [cid])
            started = time.monotonic()
            with (
                pytest.raises(StoreError, match="statement_timeout") as caught,
                store.transaction() as tx,
            ):
                tx.quarantine.add(source_path="/x", line_no=1, byte_offset=0, error="e", raw=b"r")
                tx.messages.append(cid, [msg("never", "k1")])
            assert time.monotonic() - started < 10
            assert "rolled back" in str(caught.value)
            blocker.rollback()
        assert [m.content for m in store.messages.list(cid)] == ["committed"]
        assert store.quarantine.count() == 0
        store.messages.append(cid, [msg("after", "k2")])
        assert store.messages.count(cid) == 2
    finally:
        store.close()


def test_connection_killed_mid_transaction(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    try:
        cid = conv(store)
        store.messages.append(cid, [msg("committed", "k0")])
        with (
            pytest.raises(StoreError, match=r"connection to PostgreSQL at .* was lost") as caught,
            store.transaction() as tx,
        ):
            tx.messages.append(cid, [msg("in flight", "k1")])
            (pid,) = _backend_pids(pg_url, "idle in transaction")
            admin(pg_url, "SELECT pg_terminate_backend(%s)", [pid])
            tx.messages.append(cid, [msg("in flight too", "k2")])
        assert "nothing in it was committed" in str(caught.value)
        # The pool notices the dead connection and the next call just works.
        assert [m.content for m in store.messages.list(cid)] == ["committed"]
        store.messages.append(cid, [msg("after", "k3")])
        assert [m.seq for m in store.messages.list(cid)] == [0, 1]
    finally:
        store.close()


def test_connection_lost_at_commit_says_the_outcome_is_unknown(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    try:
        cid = conv(store)
        with (
            pytest.raises(StoreError, match="may or may not have been committed"),
            store.transaction() as tx,
        ):
            tx.messages.append(cid, [msg("in flight", "k1")])
            (pid,) = _backend_pids(pg_url, "idle in transaction")
            admin(pg_url, "SELECT pg_terminate_backend(%s)", [pid])
        assert store.messages.count(cid) == 0
        store.messages.append(cid, [msg("after", "k2")])
        assert store.messages.count(cid) == 1
    finally:
        store.close()


def test_server_restart_mid_transaction(pg_server: EmbeddedPostgres, pg_url: str) -> None:
    store = PostgresStore(pg_url, connect_timeout_s=3)
    try:
        cid = conv(store)
        store.messages.append(cid, [msg("committed", "k0")])
        with pytest.raises(StoreError, match="was lost"), store.transaction() as tx:
            tx.messages.append(cid, [msg("in flight", "k1")])
            pg_server.restart()
            tx.messages.append(cid, [msg("in flight too", "k2")])
        pg_server.wait_ready()
        assert [m.content for m in store.messages.list(cid)] == ["committed"]
        store.messages.append(cid, [msg("after", "k3")])
        assert store.messages.count(cid) == 2
    finally:
        store.close()


def test_server_down_is_a_clear_error_then_recovers(
    pg_server: EmbeddedPostgres, pg_url: str
) -> None:
    store = PostgresStore(pg_url, connect_timeout_s=1)
    try:
        cid = conv(store)
        pg_server.stop()
        try:
            with pytest.raises(StoreError, match=f"127.0.0.1:{pg_server.port}") as caught:
                store.messages.count(cid)
            assert PASSWORD not in str(caught.value)
        finally:
            pg_server.start()
            pg_server.wait_ready()
        assert store.messages.count(cid) == 0
    finally:
        store.close()


def test_lone_surrogates_are_refused_before_the_database(store: PostgresStore) -> None:
    from lossless.errors import InputError

    cid = conv(store)
    with pytest.raises(InputError, match="surrogate"):
        store.messages.append(cid, [msg("bad \ud800 half", "k1")])
    with pytest.raises(InputError, match="surrogate"):
        store.conversations.update_metadata(cid, {"k": "\udfff"})
    assert store.messages.count(cid) == 0


# -- concurrency ------------------------------------------------------------


def _in_threads(n: int, work: Callable[[int], Any]) -> list[Any]:
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    return results


def test_concurrent_appenders_lose_and_duplicate_nothing(pg_url: str) -> None:
    stores = [PostgresStore(pg_url) for _ in range(4)]
    try:
        cids = _in_threads(4, lambda i: conv(stores[i], "shared"))
        assert len(set(cids)) == 1
        cid = cids[0]

        def append(i: int) -> int:
            added = 0
            for batch in range(5):
                # Every writer sends the same shared keys plus its own.
                batch_msgs = [msg(f"shared {batch}", f"shared-{batch}")]
                batch_msgs += [msg(f"w{i} b{batch} m{j}", f"w{i}-{batch}-{j}") for j in range(3)]
                added += len(stores[i].messages.append(cid, batch_msgs).inserted)
            return added

        added = _in_threads(4, append)
        messages = stores[0].messages.list(cid)
        assert sum(added) == len(messages) == 5 + 4 * 5 * 3
        assert [m.seq for m in messages] == list(range(len(messages)))
        assert len({m.ingest_key for m in messages}) == len(messages)
    finally:
        for s in stores:
            s.close()


def test_one_lease_among_contenders_with_growing_fences(pg_url: str) -> None:
    stores = [PostgresStore(pg_url) for _ in range(4)]
    try:
        cid = conv(stores[0])
        leases = _in_threads(4, lambda i: stores[i].leases.acquire(cid, f"w{i}", 0.5))
        held = [lease for lease in leases if lease is not None]
        assert len(held) == 1
        assert abs(held[0].expires_at - time.time()) < 5
        time.sleep(0.6)
        taken = stores[1].leases.acquire(cid, "late", 30)
        assert taken is not None and taken.fence > held[0].fence
    finally:
        for s in stores:
            s.close()


def test_lease_check_in_transaction_blocks_takeover_until_commit(pg_url: str) -> None:
    holder, rival = PostgresStore(pg_url), PostgresStore(pg_url, statement_timeout_ms=300)
    try:
        cid = conv(holder)
        lease = holder.leases.acquire(cid, "holder", 0.2)
        assert lease is not None
        with holder.transaction() as tx:
            tx.leases.check(lease)
            time.sleep(0.3)  # the lease expires while the fenced write is in flight
            # The rival cannot take over before this transaction ends.
            with pytest.raises(StoreError, match="statement_timeout"):
                rival.leases.acquire(cid, "rival", 30)
            tx.messages.append(cid, [msg("fenced write", "k")])
        taken = rival.leases.acquire(cid, "rival", 30)
        assert taken is not None and taken.fence > lease.fence
    finally:
        holder.close()
        rival.close()


def test_threads_share_a_store_with_separate_transactions(store: PostgresStore) -> None:
    cid = conv(store)

    def work(i: int) -> int:
        with store.transaction() as tx:
            tx.messages.append(cid, [msg(f"t{i}", f"k{i}")])
            time.sleep(0.05)
        return store.messages.count(cid)

    _in_threads(4, work)
    assert store.messages.count(cid) == 4


# -- search -------------------------------------------------------------------


def test_full_text_words_are_split_like_sqlite(store: PostgresStore) -> None:
    cid = conv(store)
    store.messages.append(
        cid,
        [
            msg("edited /src/lossless/store/postgres/store.py and docs/README.md", "k1"),
            msg("Le café était fermé", "k2"),
            msg("visit https://example.com/path?q=1 or mail me@example.org", "k3"),
            msg("version 3.11.7 of snake_case_name", "k4"),
        ],
    )

    def found(pattern: str) -> list[str]:
        return [h.snippet for h in store.search.grep(GrepQuery(pattern, scope="messages"))]

    assert found("postgres") == [
        "edited /src/lossless/store/[postgres]/store.py and docs/README.md"
    ]
    assert found("CAFE ferme") == ["Le [café] était [fermé]"]
    assert len(found("example")) == 1
    assert len(found("11")) == 1
    assert len(found("case")) == 1
    assert found("snake_case") == ["version 3.11.7 of [snake]_[case]_name"]


def test_huge_message_is_stored_and_found(store: PostgresStore) -> None:
    cid = conv(store)
    words = " ".join(f"w{i}x{i * 7919 % 100_003}" for i in range(200_000))
    content = words + " needle-at-the-end"
    (m,) = store.messages.append(cid, [msg(content, "big")]).inserted
    got = store.messages.get(m.id)
    assert got is not None and got.content == content
    hits = store.search.grep(GrepQuery("needle-at-the-end", mode="regex"))
    assert [h.id for h in hits] == [str(m.id)]
    assert store.search.grep(GrepQuery("w5x39595", mode="full_text"))


def test_search_indexes_exist_and_are_used(store: PostgresStore, pg_url: str) -> None:
    names = {
        r[0] for r in admin(pg_url, "SELECT indexname FROM pg_indexes WHERE schemaname = 'lcm'")
    }
    assert {
        "messages_search",
        "messages_content_trgm",
        "summaries_search",
        "summaries_content_trgm",
    } <= names
    with psycopg.connect(pg_url, options="-c search_path=lcm,public -c enable_seqscan=off") as c:
        plan = "\n".join(
            r[0] for r in c.execute("EXPLAIN SELECT id FROM messages WHERE content LIKE '%abc%'")
        )
        assert "messages_content_trgm" in plan
        plan = "\n".join(
            r[0]
            for r in c.execute(
                "EXPLAIN SELECT id FROM messages WHERE search_document @@ search_word('abc')"
            )
        )
        assert "messages_search" in plan


def _seed(store: Store) -> None:
    a = store.conversations.get_or_create(project="pa", session_id="a", client="generic").id
    b = store.conversations.get_or_create(project="pb", session_id="b", client="codex").id
    texts = [
        "the database migration failed with error 42",
        "we fixed the migration by adding an index",
        "Database MIGRATION again, same timestamp",
        "same timestamp as the one before: migration",
        "unrelated chatter about lunch",
        "日本語のテキストを検索する migration",
        "ERROR: connection refused at /var/run/postgresql",
        "error error error",
    ]
    for i, text in enumerate(texts):
        at = f"2026-01-0{1 + i // 2}T10:00:00.000Z"  # pairs share a timestamp: ties
        store.messages.append(a if i % 2 else b, [msg(text, f"k{i}", at=at)])
    ms = store.messages.list(a)
    store.summaries.create(
        NewSummary(a, "leaf", 0, "Leaf: the migration error was fixed", 9, None, None),
        message_ids=[ms[0].id],
    )
    store.summaries.create(
        NewSummary(
            a,
            "leaf",
            0,
            "another migration summary",
            5,
            "2026-01-01T00:00:00.000Z",
            "2026-01-03T10:00:00.000Z",
        ),
        message_ids=[ms[1].id],
    )


PARITY_QUERIES = [
    GrepQuery("migr\\w+", mode="regex"),
    GrepQuery("migration", mode="regex", scope="messages"),
    GrepQuery("(?i)error", mode="regex"),
    GrepQuery("error", mode="regex", limit=2),
    GrepQuery("timestamp", mode="regex"),
    GrepQuery("テキスト", mode="regex"),
    GrepQuery("igrat", mode="regex", project="pa"),
    GrepQuery("migration", mode="regex", since="2026-01-02T00:00:00.000Z"),
    GrepQuery("migration", mode="regex", scope="summaries"),
    GrepQuery("/var/run", mode="regex", session_id="a"),
]


def test_regex_results_match_sqlite_exactly(store: PostgresStore, tmp_path: Path) -> None:
    lite = SQLiteStore(tmp_path / "lcm.db")
    try:
        _seed(lite)
        _seed(store)
        for query in PARITY_QUERIES:
            ours = [(h.kind, h.snippet, h.created_at, h.seq) for h in store.search.grep(query)]
            theirs = [(h.kind, h.snippet, h.created_at, h.seq) for h in lite.search.grep(query)]
            assert ours == theirs, query
    finally:
        lite.close()


def test_full_text_results_match_sqlite(store: PostgresStore, tmp_path: Path) -> None:
    lite = SQLiteStore(tmp_path / "lcm.db")
    try:
        _seed(lite)
        _seed(store)
        for pattern in [
            "migration",
            "database migration",
            "error",
            "lunch",
            "postgresql",
            "the lunch",  # a stop word is left out when the query has other words
            "the",  # and kept when it is the only one
        ]:
            query = GrepQuery(pattern)
            ours = store.search.grep(query)
            theirs = lite.search.grep(query)
            assert {(h.kind, h.created_at, h.seq) for h in ours} == {
                (h.kind, h.created_at, h.seq) for h in theirs
            }, pattern
            # Best first, then newest first, then id descending among equals.
            keys = [(h.rank, _desc(h.created_at)) for h in ours]
            assert keys == sorted(keys), pattern
    finally:
        lite.close()


def _desc(text: str | None) -> tuple[int, ...]:
    return tuple(-ord(ch) for ch in text or "")


def test_full_text_rows_with_every_word_come_first_like_sqlite(
    store: PostgresStore, tmp_path: Path
) -> None:
    """A page is filled from rows holding every word before rows holding any word.

    The one-word rows are short and repeat the word, so ranked on their own
    they would beat the long rows holding both words.
    """
    filler = " ".join(f"filler{i}" for i in range(40))

    def seed(s: Store) -> None:
        cid = conv(s)
        texts = [f"alpha {filler} beta" for _ in range(3)] + ["alpha alpha alpha"] * 6
        s.messages.append(
            cid,
            [
                msg(text, f"k{i}", at=f"2026-01-01T10:00:{i:02d}.000Z")
                for i, text in enumerate(texts)
            ],
        )

    lite = SQLiteStore(tmp_path / "lcm.db")
    try:
        seed(lite)
        seed(store)
        for backend in (lite, store):
            top = backend.search.grep(GrepQuery("alpha beta", scope="messages", limit=2))
            assert [h.created_at for h in top] == [
                "2026-01-01T10:00:02.000Z",
                "2026-01-01T10:00:01.000Z",
            ], backend.backend
            everything = backend.search.grep(GrepQuery("alpha beta", scope="messages"))
            assert len(everything) == 9, backend.backend
    finally:
        lite.close()


def test_regex_literal_with_like_wildcards_finds_exactly_its_rows(store: PostgresStore) -> None:
    # The trigram pre-filter uses the whole literal, its %, _ and \ escaped:
    # unescaped, 'C:\Users' would become the LIKE pattern 'C:Users' and miss.
    cid = conv(store)
    store.messages.append(
        cid,
        [
            msg(r"opened C:\Users\bob\notes.txt", "k1"),
            msg("opened C:Users bob", "k2"),
            msg("rate 50%_off today", "k3"),
            msg("rate 50xxoff today", "k4"),
            msg("request_id=dead01 failed", "k5"),
            msg("requestXid=dead02 failed", "k6"),
        ],
    )

    def found(pattern: str) -> list[str]:
        return [h.snippet for h in store.search.grep(GrepQuery(pattern, mode="regex"))]

    assert found(r"C:\\Users\\bob") == [r"opened [C:\Users\bob]\notes.txt"]
    assert found("50%_off") == ["rate [50%_off] today"]
    assert found(r"request_id=dead\w*") == ["[request_id=dead01] failed"]
    assert found(r"(?i)REQUEST_ID=DEAD") == ["[request_id=dead]01 failed"]


def test_sub_agent_matches_rank_below_their_session_like_sqlite(
    store: PostgresStore, tmp_path: Path
) -> None:
    from lossless.models import NewMessage

    same = "the flaky retry loop in the uploader"

    def seed(s: Store) -> tuple[int, int]:
        parent = s.conversations.get_or_create(project="p", session_id="s", client="claude-code")
        child = s.conversations.get_or_create(
            project="p", session_id="s-agent", client="claude-code", parent_id=parent.id
        )
        # The sub-agent's copy is newer, so without the weighting it would win the tie.
        s.messages.append(
            parent.id,
            [NewMessage("user", same, ingest_key="a", created_at="2026-01-01T00:00:00.000Z")],
        )
        s.messages.append(
            child.id,
            [NewMessage("user", same, ingest_key="b", created_at="2026-01-02T00:00:00.000Z")],
        )
        return parent.id, child.id

    lite = SQLiteStore(tmp_path / "lcm.db")
    try:
        for backend in (lite, store):
            parent, child = seed(backend)
            hits = backend.search.grep(GrepQuery("flaky retry uploader", mode="full_text"))
            assert [h.conversation_id for h in hits] == [parent, child], backend.backend
    finally:
        lite.close()


def test_a_long_regex_scan_matches_sqlite_page_after_page(
    store: PostgresStore, tmp_path: Path
) -> None:
    """Common literals, sparse matches, tied times and summaries without a time:
    the scan goes through every LIMIT page and on into the cursor, and keeps
    SQLite's order (newest first, then id descending, timeless summaries last)."""

    def seed(s: Store) -> None:
        cid = conv(s)
        with s.transaction() as tx:
            tx.messages.append(
                cid,
                [
                    # Five messages share each time (ties are broken by id),
                    # and ids do not follow times.
                    msg(
                        f"row {n} end",
                        f"k{n}",
                        at=f"2026-01-01T{t // 300:02d}:{t // 5 % 60:02d}:00.000Z",
                    )
                    for n in range(3_000)
                    for t in [n * 1_001 % 3_000]
                ],
            )
            for n in range(1_150):
                at = None if n % 2 else f"2026-02-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
                tx.summaries.create(
                    NewSummary(cid, "leaf", 0, f"row {n} end of summary", 5, at, at)
                )

    lite = SQLiteStore(tmp_path / "lcm.db")
    try:
        seed(lite)
        seed(store)
        for query in (
            GrepQuery(r"row \d*7 end", mode="regex", scope="messages", limit=1_000),
            GrepQuery(r"row \d*3 end", mode="regex", scope="messages", limit=250),
        ):
            ours = [(h.id, h.snippet, h.created_at) for h in store.search.grep(query)]
            theirs = [(h.id, h.snippet, h.created_at) for h in lite.search.grep(query)]
            assert ours == theirs, query
            assert len(ours) > 200, query
        # Summary ids differ between the stores, and timeless summaries are
        # ordered by id: the same hits, each store in its own id order.
        query = GrepQuery(r"row \d*[05] end of", mode="regex", scope="summaries", limit=1_000)
        for backend in (lite, store):
            hits = backend.search.grep(query)
            assert len(hits) == 230
            timed = [(h.created_at, h.id) for h in hits if h.created_at is not None]
            timeless = [h.id for h in hits if h.created_at is None]
            assert [(h.created_at, h.id) for h in hits] == sorted(timed, reverse=True) + [
                (None, i) for i in sorted(timeless, reverse=True)
            ]
        assert {h.snippet for h in store.search.grep(query)} == {
            h.snippet for h in lite.search.grep(query)
        }
    finally:
        lite.close()


# -- the regex time budget inside statements --------------------------------


def test_a_statement_past_the_grep_budget_is_cancelled(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A statement still running at the deadline is cancelled: the connection
    keeps no timeout of the scan's, a transaction around it stays usable (a
    savepoint), and the scan sees ``DeadlineReached`` rather than a driver error."""
    from lossless.store.postgres import statement_budget
    from lossless.store.postgres.statement_budget import DeadlineReached, statement_deadline
    from lossless.store.regex import ScanBudget

    monkeypatch.setattr(statement_budget, "MIN_SQL_S", 0.0)
    with store._pinned(), store._connection() as conn:
        start = time.monotonic()
        with (
            pytest.raises(DeadlineReached),
            statement_deadline(conn, ScanBudget(0.2), None) as arm,
        ):
            arm()
            conn.execute("SELECT pg_sleep(5)")
        assert time.monotonic() - start < 2.0
        assert conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}
        assert conn.execute("SHOW statement_timeout").fetchone() == {"statement_timeout": "0"}
        with statement_deadline(conn, ScanBudget(30.0), None) as arm:
            arm()
            conn.execute("SELECT 2")
        assert conn.execute("SHOW statement_timeout").fetchone() == {"statement_timeout": "0"}
    cid = conv(store)
    with store.transaction() as tx:
        tx.messages.append(cid, [msg("kept through the cancel", "k1")])
        with (
            store._connection() as conn,
            pytest.raises(DeadlineReached),
            statement_deadline(conn, ScanBudget(0.1), None) as arm,
        ):
            arm()
            conn.execute("SELECT pg_sleep(5)")
        tx.messages.append(cid, [msg("and after it", "k2")])
    assert store.messages.count(cid) == 2
    # No budget: nothing is cancelled.
    with (
        store._pinned(),
        store._connection() as conn,
        statement_deadline(conn, ScanBudget(None), None) as arm,
    ):
        arm()
        conn.execute("SELECT pg_sleep(0.3)")
        assert conn.execute("SELECT 2 AS two").fetchone() == {"two": 2}


def test_a_store_timeout_shorter_than_the_budget_stays_an_error(pg_url: str) -> None:
    from lossless.store.postgres.statement_budget import statement_deadline
    from lossless.store.regex import ScanBudget

    PostgresStore(pg_url).close()  # migrated first: a migration may take longer than 100 ms
    short = PostgresStore(pg_url, statement_timeout_ms=100)
    try:
        with (
            pytest.raises(StoreError, match="cancelled"),
            short._pinned(),
            short._connection() as conn,
            statement_deadline(conn, ScanBudget(30.0), short.statement_timeout_ms) as arm,
        ):
            arm()
            conn.execute("SELECT pg_sleep(5)")
        with short._pinned(), short._connection() as conn:
            assert conn.execute("SHOW statement_timeout").fetchone() == {
                "statement_timeout": "100ms"
            }
    finally:
        short.close()


def test_an_update_of_context_rows_is_counted(store: PostgresStore, pg_url: str) -> None:
    """As on SQLite: an update counts as the old rows removed and the new ones added."""
    from tests.store.conformance import recount

    a, b = conv(store, "a"), conv(store, "b")
    for cid in (a, b):
        ms = store.messages.append(cid, [msg(f"{cid} m{i}", f"{cid}-{i}") for i in range(4)])
        store.context.append_messages(cid, ms.inserted)
    admin(pg_url, "UPDATE lcm.context_items SET token_count = token_count + 5")
    admin(
        pg_url,
        "UPDATE lcm.context_items SET conversation_id = %s, ordinal = ordinal + 100 "
        "WHERE conversation_id = %s AND ordinal = 0",
        [b, a],
    )
    for cid in (a, b):
        assert store.context.stats(cid) == recount(store.context.list(cid))
    assert store.context.stats(b).items == 5
