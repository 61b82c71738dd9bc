"""Raw lines packed with the store's trained dictionary (migration 0015) read back exactly.

On SQLite files: the packing itself (property tests), a dictionary trained
from the first batch big enough and used by every append after it, rows
written before it (and before 0015) repacked by ``lcm gc``'s
``store_texts_once``, and a rolled-back dictionary never used again.
PostgreSQL keeps raw lines as text and has no dictionaries.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.store.old_code import plain_raw_packing

from lossless.models import NewMessage, NewNativeRecord, NewPart
from lossless.store.hashing import raw_hash
from lossless.store.migrations import Migration
from lossless.store.raw_packing import DICTIONARY_FORMAT, TRAIN_MIN_LINES, RawPacker, train
from lossless.store.sqlite import SQLiteStore

# Lines alike as a transcript's are: the same keys, other values.
LINES = [
    json.dumps(
        {
            "role": "tool" if i % 3 else "assistant",
            "tool_call_id": f"call_{i:07d}",
            "content": f"output {i}",
            "created_at": f"2025-01-06T09:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z",
        }
    )
    for i in range(400)
]
# Anything storable: no lone surrogates or NUL (refused before the store).
storable = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))


def _packer(dictionaries: dict[int, bytes]) -> RawPacker:
    return RawPacker(lambda: dictionaries)


@settings(max_examples=200, deadline=None)
@given(raw=storable)
def test_any_line_reads_back_exactly(raw: str) -> None:
    dictionary = train(LINES)
    assert dictionary is not None
    packer = _packer({3: dictionary})
    long = raw + "".join(LINES[:8])  # past PLAIN_MIN_CHARS: the long lines' compressor
    for line in (raw, long):
        assert packer.unpack(packer.pack(line, 3, dictionary)) == line
        assert packer.unpack(packer.pack(line, None, None)) == line


def test_a_line_alike_the_samples_shrinks_to_a_fraction() -> None:
    dictionary = train(LINES[:200])
    assert dictionary is not None and len(dictionary) <= 4096
    packer = _packer({1: dictionary})
    packed = [packer.pack(line, 1, dictionary) for line in LINES[200:]]
    assert all(isinstance(p, bytes) and p[0] == DICTIONARY_FORMAT for p in packed)
    assert sum(map(len, packed)) * 3 < sum(len(line) for line in LINES[200:])
    # Without a dictionary a short line stays text: zlib alone would grow it.
    assert packer.pack(LINES[0], None, None) == LINES[0]


def test_too_few_lines_train_no_dictionary() -> None:
    assert train(LINES[: TRAIN_MIN_LINES - 1]) is None


def test_lines_packed_before_dictionaries_read_alike() -> None:
    line = LINES[0] * 20
    assert _packer({}).unpack(zlib.compress(line.encode(), 1)) == line


def test_a_line_naming_a_missing_dictionary_says_so() -> None:
    dictionary = train(LINES)
    assert dictionary is not None
    packed = _packer({}).pack(LINES[0], 200, dictionary)
    with pytest.raises(LookupError, match="dictionary 200"):
        _packer({}).unpack(packed)


def _batch(prefix: str, lines: list[str]) -> list[NewMessage]:
    return [
        NewMessage(
            "tool",
            f"output {i}",
            parts=(NewPart("tool_result", f"output {i}"),),
            ingest_key=f"{prefix}{i}",
            native_records=(NewNativeRecord(f"{prefix}{i}", "message", line),),
        )
        for i, line in enumerate(lines)
    ]


def _stored(path: Path) -> list[tuple[str, object]]:
    db = sqlite3.connect(path)
    try:
        return list(db.execute("SELECT typeof(raw), raw FROM native_records ORDER BY id"))
    finally:
        db.close()


def _whole(store: SQLiteStore, cid: int, lines: list[str]) -> None:
    """Every raw line byte-exact, and what ``lcm verify`` checks matches."""
    assert [r.raw for r in store.messages.native_records(cid)] == lines
    hashed = [h for h in store.messages.hashed_rows(cid) if h.kind == "native_record"]
    assert [raw_hash(str(h.fields[0])) for h in hashed] == [h.recorded for h in hashed]


def test_the_first_big_batch_trains_the_dictionary_every_append_then_uses(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lcm.db"
    with SQLiteStore(path) as store:
        cid = store.conversations.get_or_create(project="p", session_id="s", client="c").id
        # A hook's few lines: no dictionary yet, stored as before.
        store.messages.append(cid, _batch("h", LINES[:3]))
        assert [kind for kind, _ in _stored(path)] == ["text"] * 3
        store.messages.append(cid, _batch("i", LINES[3:200]))
        store.messages.append(cid, _batch("j", LINES[200:203]))
        _whole(store, cid, LINES[:203])
    rows = _stored(path)
    assert [kind for kind, _ in rows[3:]] == ["blob"] * 200
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM raw_dictionaries").fetchone() == (1,)
    db.close()
    # Another process (a fresh store object) reads them, and gc packs the
    # three lines stored before the dictionary existed; a second gc finds nothing.
    with SQLiteStore(path) as store:
        _whole(store, cid, LINES[:203])
        assert store.messages.store_texts_once(cid) == 3
        assert store.messages.store_texts_once(cid) == 0
        _whole(store, cid, LINES[:203])
    assert [kind for kind, _ in _stored(path)] == ["blob"] * 203


def test_a_hooks_few_lines_at_a_time_train_it_once_the_store_holds_enough(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lcm.db"
    with SQLiteStore(path) as store:
        cid = store.conversations.get_or_create(project="p", session_id="s", client="c").id
        for start in range(0, 100, 10):
            store.messages.append(cid, _batch(f"t{start}-", LINES[start : start + 10]))
        _whole(store, cid, LINES[:100])
    # The 7th append finds 60 lines stored and brings 10: enough to train from.
    assert [kind for kind, _ in _stored(path)] == ["text"] * 60 + ["blob"] * 40


def test_a_dictionary_rolled_back_is_not_used_again(tmp_path: Path) -> None:
    """The store forgets a dictionary trained in a transaction that rolled back:
    another writer's dictionary may then get its id."""
    path = tmp_path / "lcm.db"
    first, other = SQLiteStore(path), SQLiteStore(path)
    try:
        cid = first.conversations.get_or_create(project="p", session_id="s", client="c").id
        with pytest.raises(RuntimeError), first.transaction() as tx:
            tx.messages.append(cid, _batch("a", [line.upper() for line in LINES[:100]]))
            raise RuntimeError("the import fails after the append")
        other.messages.append(cid, _batch("b", LINES[100:200]))  # trains dictionary 1
        first.messages.append(cid, _batch("c", LINES[200:300]))
        for store in (first, other):
            _whole(store, cid, LINES[100:300])
    finally:
        first.close()
        other.close()


def test_a_store_from_before_0015_upgrades_and_gc_packs_its_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lossless.store.sqlite import store as sqlite_store

    path = tmp_path / "lcm.db"
    every = sqlite_store.load_migrations
    before: list[Migration] = [m for m in every("lossless.store.sqlite") if m.version <= 14]
    monkeypatch.setattr(sqlite_store, "load_migrations", lambda _package: before)
    # The code before 0015 packed lines from 512 characters on, without a dictionary.
    plain_raw_packing(monkeypatch)
    long_line = json.dumps({"role": "tool", "content": "x", "pad": "y" * 600})
    old_lines = [*LINES[:150], long_line]
    with SQLiteStore(path) as old:
        cid = old.conversations.get_or_create(project="p", session_id="s", client="c").id
        old.messages.append(cid, _batch("o", old_lines))
    monkeypatch.undo()
    before_bytes = sum(len(value) for _, value in _stored(path))  # type: ignore[arg-type]

    with SQLiteStore(path) as store:
        assert [m.version for m in store.migrations()][-1] >= 15
        _whole(store, cid, old_lines)
        store.messages.append(cid, _batch("n", LINES[150:250]))  # trains the dictionary
        assert store.messages.store_texts_once(cid) == len(old_lines)
        _whole(store, cid, [*old_lines, *LINES[150:250]])
    rows = _stored(path)
    assert [kind for kind, _ in rows] == ["blob"] * len(rows)
    after_bytes = sum(len(value) for _, value in rows[: len(old_lines)])  # type: ignore[arg-type]
    assert after_bytes * 2 < before_bytes
