"""SQLite-only behaviour: file mode, pragmas, the migration ledger."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import stat
from pathlib import Path

import pytest

from lossless.errors import MigrationError, StoreError
from lossless.store.migrations import load_migrations
from lossless.store.sqlite import SQLiteStore


def test_database_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "lcm.db"
    SQLiteStore(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_wal_and_foreign_keys(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "lcm.db")
    try:
        assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store._db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        with pytest.raises(sqlite3.IntegrityError):
            store._db.execute(
                "INSERT INTO messages(conversation_id, seq, role, content, token_count, "
                "created_at) VALUES (999, 0, 'user', 'x', 1, 'now')"
            )
    finally:
        store.close()


def test_migrations_are_recorded_with_checksums(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "lcm.db")
    applied = store.migrations()
    store.close()
    expected = [m.version for m in load_migrations("lossless.store.sqlite")]
    assert [m.version for m in applied] == expected
    assert expected[:2] == [1, 2]
    assert all(len(m.checksum) == 64 for m in applied)
    # hashlib's SHA-256 of each file, though computed without hashlib's OpenSSL
    # (stores migrated by earlier versions recorded hashlib's).
    files = load_migrations("lossless.store.sqlite")
    assert [m.checksum for m in applied] == [
        hashlib.sha256(m.sql.encode("utf-8")).hexdigest() for m in files
    ]
    assert [m.checksum for m in files] == [m.checksum for m in applied]
    # Reopening applies nothing new and accepts the recorded history.
    SQLiteStore(tmp_path / "lcm.db").close()


def test_migration_checksum_without_the_builtin_sha256(monkeypatch: pytest.MonkeyPatch) -> None:
    """An interpreter built without its own SHA-256 checksums through hashlib, alike."""
    from lossless.store import migrations

    first = load_migrations("lossless.store.sqlite")[0]
    expected = hashlib.sha256(first.sql.encode("utf-8")).hexdigest()
    assert first.checksum == expected

    def no_module(name: str) -> object:
        raise ImportError(name)

    monkeypatch.setattr(migrations.importlib, "import_module", no_module)
    monkeypatch.setattr(migrations, "_sha256", None)  # looked up again, now absent
    assert first.checksum == expected
    assert migrations._sha256 is hashlib.sha256


def test_changed_applied_migration_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    SQLiteStore(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE schema_migrations SET checksum = 'deadbeef' || substr(checksum, 9)")
    db.commit()
    db.close()
    with pytest.raises(MigrationError, match="changed after it was applied"):
        SQLiteStore(path)


def test_newer_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    SQLiteStore(path).close()
    db = sqlite3.connect(path)
    future = len(load_migrations("lossless.store.sqlite")) + 1
    db.execute(
        "INSERT INTO schema_migrations VALUES (?, 'from_the_future', 'x', '2030-01-01')", (future,)
    )
    db.commit()
    db.close()
    with pytest.raises(MigrationError, match="newer lossless"):
        SQLiteStore(path)


def test_opening_a_current_store_never_waits_for_a_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store whose migrations are all applied opens and reads while another
    process holds the write lock (a hook's or an import's transaction): only
    a store that needs migrating takes the lock, and waits for it."""
    from lossless.store.sqlite import store as sqlite_store

    path = tmp_path / "lcm.db"
    SQLiteStore(path).close()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    # Were the lock needed, the open would fail after 50 ms, not wait 30 s.
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 50)
    try:
        store = SQLiteStore(path)
        try:
            assert store.stats().conversations == 0
        finally:
            store.close()
        # A store that needs a migration does wait for the lock.
        writer.execute("ROLLBACK")
        writer.execute(
            "DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)"
        )
        writer.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError, match="locked"):
            SQLiteStore(path)
    finally:
        writer.close()


def test_garbage_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=str(path)):
        SQLiteStore(path)


def test_sub_agent_matches_rank_below_their_session(tmp_path: Path) -> None:
    from lossless.models import NewMessage
    from lossless.store.contract import GrepQuery

    store = SQLiteStore(tmp_path / "lcm.db")
    try:
        parent = store.conversations.get_or_create(
            project="p", session_id="s", client="claude-code"
        )
        child = store.conversations.get_or_create(
            project="p", session_id="s-agent", client="claude-code", parent_id=parent.id
        )
        same = "the flaky retry loop in the uploader"
        # The sub-agent's copy is newer, so without the weighting it would win the tie.
        store.messages.append(
            parent.id,
            [NewMessage("user", same, ingest_key="a", created_at="2026-01-01T00:00:00.000Z")],
        )
        store.messages.append(
            child.id,
            [NewMessage("user", same, ingest_key="b", created_at="2026-01-02T00:00:00.000Z")],
        )
        store.messages.append(
            child.id,
            [
                NewMessage(
                    "user",
                    "uploader retry loop: the retry loop of the uploader is flaky, flaky retry",
                    ingest_key="c",
                )
            ],
        )
        hits = store.search.grep(GrepQuery("flaky retry uploader", mode="full_text"))
        order = [(h.conversation_id, "loop in" in h.snippet) for h in hits]
        assert order.index((parent.id, True)) < order.index((child.id, True))
        assert len(hits) == 3
    finally:
        store.close()


@pytest.mark.parametrize("varied", [False, True])
@pytest.mark.parametrize("project", [None, "p-small"])
@pytest.mark.parametrize("limit", [1, 5, 20])
def test_full_text_ranking_from_the_best_rows_equals_ranking_them_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: str | None, limit: int, varied: bool
) -> None:
    from lossless.models import NewMessage
    from lossless.store import lexical
    from lossless.store.contract import GrepQuery
    from lossless.store.sqlite import search as sqlite_search

    store = SQLiteStore(tmp_path / "lcm.db")
    try:
        # Many exact duplicates (equal bm25: ties at every cut) or varied
        # ranks, a small project whose rows rank worst, and more matches than
        # any over-fetch: the quick path and the fallback are both taken.
        for name, count in (("p-big", 300), ("p-small", 30)):
            conv = store.conversations.get_or_create(
                project=name, session_id=name, client="generic"
            )
            texts = [
                "cache miss" if i % 3 else "cache miss in the cache layer, cache again"
                for i in range(count)
            ]
            if varied:
                # Some rows hold the word only through its stem: the exact
                # match's boost reorders the index's ranking.
                texts = [
                    f"{'caching' if i % 4 == 0 else 'cache'} {'cache ' * (i % 5)}{'x ' * (i % 11)}{i}"
                    for i in range(count)
                ]
            if name == "p-small":
                texts = [f"cache {'filler ' * 40}{i}" for i in range(count)]
            store.messages.append(
                conv.id,
                [
                    NewMessage(
                        "user",
                        text,
                        ingest_key=f"{name}-{i}",
                        created_at=f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z",
                    )
                    for i, text in enumerate(texts)
                ],
            )
        query = GrepQuery("cache", mode="full_text", scope="messages", project=project, limit=limit)
        fast = [(h.id, h.rank) for h in store.search.grep(query)]
        # A first window holding every matching row: everything ranked at once.
        monkeypatch.setattr(lexical, "OVERFETCH", 100_000)
        monkeypatch.setattr(sqlite_search, "_RANKED_MAX_CANDIDATES", 100_000_000)
        everything = [(h.id, h.rank) for h in store.search.grep(query)]
        assert fast == everything and len(fast) == limit
    finally:
        store.close()


def test_a_very_long_full_text_page_is_ranked_in_one_pass(tmp_path: Path) -> None:
    from lossless.models import NewMessage
    from lossless.store.contract import GrepQuery

    store = SQLiteStore(tmp_path / "lcm.db")
    try:
        conv = store.conversations.get_or_create(project="p", session_id="s", client="generic")
        store.messages.append(
            conv.id, [NewMessage("user", f"cache {i}", ingest_key=str(i)) for i in range(50)]
        )
        assert len(store.search.grep(GrepQuery("cache", mode="full_text", limit=100_000))) == 50
    finally:
        store.close()


@pytest.mark.parametrize("indexed", [0, 30, 60])
def test_rare_and_common_literals_find_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indexed: int
) -> None:
    from lossless.models import NewMessage
    from lossless.store.contract import GrepQuery
    from lossless.store.sqlite import regex_scan

    store = SQLiteStore(tmp_path / "lcm.db")
    try:
        conv = store.conversations.get_or_create(project="p", session_id="s", client="generic")
        store.messages.append(
            conv.id,
            [
                NewMessage(
                    "user",
                    f"row {i}: needle_{i % 7}" if i % 3 else f"row {i}: hay",
                    ingest_key=str(i),
                    # Out of id order, so the time order is the one that counts.
                    created_at=f"2026-01-01T00:00:{(i * 37) % 60:02d}.000Z",
                )
                for i in range(60)
            ],
        )
        store.search.catch_up(indexed)  # the rest is the not-yet-indexed backlog
        answers = []
        # Fetched by id; then the newest rows read first (a window, then more
        # of them in steps), the index's candidates taking over after 1, 7 or
        # 25 rows, or never.
        # (A probe in two steps, never dense: the second continues after the
        # first's last id, then fetches by id or reads the newest rows.)
        plans = (
            (10_000, 200, 0, 0),
            (2, 2, 1, 0),
            (2, 2, 7, 0),
            (2, 2, 25, 0),
            (2, 2, 1_000, 0),
            (2, 2, 1, 3),
            (10_000, 3, 0, 0),
            (8, 3, 5, 0),
        )
        for rare_rows, first_rows, window, more in plans:
            monkeypatch.setattr(regex_scan, "RARE_LITERAL_ROWS", rare_rows)
            monkeypatch.setattr(regex_scan, "FIRST_PROBE_ROWS", first_rows)
            monkeypatch.setattr(regex_scan, "DENSE", 2.0 if first_rows == 3 else 0.01)
            monkeypatch.setattr(regex_scan, "window_rows", lambda *_a, n=window: n)
            monkeypatch.setattr(regex_scan, "more_rows", lambda *_a, n=more: n)
            for pattern in (r"needle_[0-3]", r"(?i)NEEDLE_[0-3]"):
                query = GrepQuery(pattern, mode="regex", scope="messages", limit=15)
                answers.append([(h.id, h.created_at) for h in store.search.grep(query)])
        assert all(a == answers[0] for a in answers) and len(answers[0]) == 15
        assert answers[0] == sorted(answers[0], key=lambda a: (a[1], int(a[0])), reverse=True)
    finally:
        store.close()


def test_native_records_are_stored_compressed_and_read_back_exactly(tmp_path: Path) -> None:
    from lossless.models import NewMessage, NewNativeRecord

    line = json.dumps({"type": "user", "text": "ünïcode ✓ " + "tool output line\n" * 400})
    store = SQLiteStore(tmp_path / "lcm.db")
    try:
        conv = store.conversations.get_or_create(project="p", session_id="s", client="generic")
        records = (NewNativeRecord("k1", "user", line), NewNativeRecord("k2", "user", "{}"))
        store.messages.append(
            conv.id, [NewMessage("user", "hi", ingest_key="k1", native_records=records)]
        )
        stored = {r.native_key: r for r in store.messages.native_records(conv.id)}
        assert (stored["k1"].raw, stored["k2"].raw) == (line, "{}")
        store.messages.rewrite_native_record(stored["k1"].id, line.replace("tool", "TOOL"))
        assert store.messages.native_records(conv.id)[0].raw == line.replace("tool", "TOOL")
    finally:
        store.close()
    db = sqlite3.connect(tmp_path / "lcm.db")
    sizes = dict(db.execute("SELECT native_key, length(raw) FROM native_records"))
    kinds = dict(db.execute("SELECT native_key, typeof(raw) FROM native_records"))
    assert kinds == {"k1": "blob", "k2": "text"} and sizes["k1"] < len(line) // 5


def test_a_store_from_before_the_deferred_index_upgrades_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0005 on a store written by the code before it (both indexes inline)."""
    from lossless.models import NewMessage
    from lossless.store.contract import GrepQuery
    from lossless.store.sqlite import store as sqlite_store

    before = [m for m in load_migrations("lossless.store.sqlite") if m.version <= 4]
    monkeypatch.setattr(sqlite_store, "load_migrations", lambda _package: before)
    old = SQLiteStore(tmp_path / "lcm.db")
    conv = old.conversations.get_or_create(project="p", session_id="s", client="generic")
    # What the code of that time did on append (its schema has no content
    # hashes, so today's append cannot write it): the row, both indexes inline.
    kept_id = old._db.execute(
        "INSERT INTO messages(conversation_id, seq, role, content, token_count, created_at, "
        "ingest_key) VALUES (?, 0, 'user', 'token ACME-1 here', 5, '2026-01-01T00:00:00Z', 'a')",
        (conv.id,),
    ).lastrowid
    old._db.execute("INSERT INTO messages_fts(rowid, content) SELECT id, content FROM messages")
    old._db.execute("INSERT INTO messages_trigram(rowid, content) SELECT id, content FROM messages")
    old.close()
    monkeypatch.undo()

    store = SQLiteStore(tmp_path / "lcm.db")
    try:
        assert [m.version for m in store.migrations()][-1] >= 5
        assert store.search.index_backlog() == 0  # everything old was indexed
        store.messages.append(conv.id, [NewMessage("user", "token ACME-2 here", ingest_key="b")])
        assert store.search.index_backlog() == 1
        store.messages.rewrite(int(kept_id or 0), "token [X] here", None)
        assert [h.snippet for h in store.search.grep(GrepQuery(r"ACME-\d", mode="regex"))] == [
            "token [ACME-2] here"
        ]
        assert store.search.catch_up(10) == 1
        assert store.integrity_check() == []
    finally:
        store.close()


def test_texts_are_stored_once(tmp_path: Path) -> None:
    """A part that repeats the content and a raw line that repeats it are kept as
    references: the rows hold none of the text (lossless.store.stored_once)."""
    from lossless.models import NewMessage, NewNativeRecord, NewPart

    text = "a message text long enough to be worth referring to, twice over"
    raw = json.dumps({"type": "assistant", "message": {"content": text}})
    path = tmp_path / "lcm.db"
    with SQLiteStore(path) as store:
        conversation = store.conversations.get_or_create(project="p", session_id="s", client="c")
        record = NewNativeRecord("n1", "assistant", raw)
        message = NewMessage(
            role="assistant", content=text, parts=(NewPart("text", text),), native_records=(record,)
        )
        store.messages.append(conversation.id, [message])
        assert store.messages.native_records(conversation.id)[0].raw == raw
    db = sqlite3.connect(path)
    assert db.execute("SELECT text, text_start, text_len FROM message_parts").fetchone() == (
        None,
        0,
        len(text),
    )
    stored, templated = db.execute("SELECT raw, raw_template FROM native_records").fetchone()
    assert templated == 1 and text not in stored and len(stored) < len(raw) - len(text) + 8
    db.close()


def test_a_statement_past_the_time_budget_is_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget holds inside SQL: a statement still running at the deadline
    (here: at once, the clock looked at on every step) is stopped, and the
    answer says nothing was searched instead of running on."""
    from lossless.models import NewMessage
    from lossless.store.contract import GrepQuery
    from lossless.store.sqlite import regex_scan

    store = SQLiteStore(tmp_path / "lcm.db")
    try:
        conv = store.conversations.get_or_create(project="p", session_id="s", client="generic")
        store.messages.append(
            conv.id,
            [
                NewMessage(
                    "user",
                    f"row {i}: " + ("needle here" if i % 50 == 0 else "hay"),
                    ingest_key=str(i),
                    created_at=f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z",
                )
                for i in range(3_000)
            ],
        )
        store.search.catch_up(3_000)
        unbounded = store.search.grep(GrepQuery("needle", mode="regex", scope="messages", limit=20))
        assert unbounded.complete and len(unbounded) == 20
        monkeypatch.setattr(regex_scan, "MIN_SQL_S", 0.0)
        monkeypatch.setattr(regex_scan, "PROGRESS_STEPS", 1)
        for pattern in ("needle", r"row \d+: needle", r"\d+: n"):
            cut = store.search.grep(
                GrepQuery(pattern, mode="regex", scope="messages", time_budget_s=0.0)
            )
            assert not cut.complete and len(cut) == 0, pattern
            assert cut.scanned_until == "2026-01-01T00:49:59.000Z"
        # The connection is left as it was: no handler, later statements run.
        assert store.search.grep(GrepQuery("needle", mode="regex", scope="messages")).complete
    finally:
        store.close()


def test_an_update_of_context_rows_is_counted(tmp_path: Path) -> None:
    """Nothing updates a context row today; if something does, the kept totals
    (migration 0012) count it as the old row removed and the new one added."""
    from tests.store.conformance import msg, recount

    store = SQLiteStore(tmp_path / "lcm.db")
    try:
        a, b = (
            store.conversations.get_or_create(project="p", session_id=s, client="generic").id
            for s in ("a", "b")
        )
        for cid in (a, b):
            ms = store.messages.append(cid, [msg(f"{cid} m{i}", f"{cid}-{i}") for i in range(4)])
            store.context.append_messages(cid, ms.inserted)
        with store._db:
            store._db.execute("UPDATE context_items SET token_count = token_count + 5")
            store._db.execute(
                "UPDATE context_items SET conversation_id = ?, ordinal = ordinal + 100 "
                "WHERE conversation_id = ? AND ordinal = 0",
                (b, a),
            )
        for cid in (a, b):
            assert store.context.stats(cid) == recount(store.context.list(cid))
        assert store.context.stats(b).items == 5
    finally:
        store.close()


def test_a_regex_grep_over_summaries_reads_them_newest_first_without_sorting(
    tmp_path: Path,
) -> None:
    # Without summaries_latest (0017) SQLite sorted every summary, its text
    # included, in a temporary B-tree before the first could be tested; with
    # it the scan walks the index and stops at the grep's limit. Checked
    # without sqlite_stat1, as a store no process has closed yet is.
    from lossless.store.sqlite.search import SUMMARIES_NEWEST_FIRST

    path = tmp_path / "lcm.db"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE IF EXISTS sqlite_stat1")
        for where, params in (("", ()), (" AND s.latest_at >= ?", ("2026-01-01",))):
            plan = " | ".join(
                str(r[3])
                for r in db.execute(
                    "EXPLAIN QUERY PLAN " + SUMMARIES_NEWEST_FIRST.format(where=where), params
                )
            )
            assert "USING INDEX summaries_latest" in plan, plan
            assert "TEMP B-TREE" not in plan, plan
