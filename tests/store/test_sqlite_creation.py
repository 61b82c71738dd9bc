"""A new SQLite store appears whole (store.sqlite.creation).

A creator runs in a process of its own and stops at a chosen step of its
creation until the test lets it go on: right after its first connection to
the file it builds ("connected"), holding the write lock half-way through
its migrations ("migrating"), with its build finished but not published
("built"), and just after publishing it ("published"). Nothing is decided by
timing: each step is reached, then the test acts, then the creator goes on.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lossless.store.migrations import load_migrations
from lossless.store.sqlite import SQLiteStore, creation

# Opens the store argv[1], stopping at step argv[2] ("none": no stop) until a
# line (or the end) comes on stdin; prints "paused" there, then at the end
# "opened <n>": how many of its attempts at the open failed (each one that
# SQLite answered busy is tried again). The opener's busy timeout is short
# (argv[3] ms): a process that waits for another here fails soon instead of
# after 30 s.
_CREATOR = """
import os, sqlite3, sys
from lossless.store.sqlite import store as sqlite_store

path, step = sys.argv[1], sys.argv[2]
sqlite_store.BUSY_TIMEOUT_MS = int(sys.argv[3])
paused = []

def pause(at):
    if at == step and not paused:
        paused.append(at)
        print("paused", flush=True)
        sys.stdin.readline()

connect = sqlite3.connect
def connected(*args, **kwargs):
    db = connect(*args, **kwargs)
    pause("connected")
    return db
sqlite3.connect = connected

split = sqlite_store.split_statements
def splitting(sql):
    pause("migrating")  # inside the migration's BEGIN IMMEDIATE
    return split(sql)
sqlite_store.split_statements = splitting

link = os.link
def linking(source, target, **kwargs):
    pause("built")
    link(source, target, **kwargs)
    pause("published")
os.link = linking

failures = []
attempt = sqlite_store.SQLiteStore._open
def counted(self, *args, **kwargs):
    try:
        attempt(self, *args, **kwargs)
    except BaseException as exc:
        failures.append(exc)
        raise
sqlite_store.SQLiteStore._open = counted

store = sqlite_store.SQLiteStore(path)
store.close()
print("opened", len(failures), *sorted({repr(f) for f in failures}), flush=True)
"""


class _Creator:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    def line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline()

    def go_on(self) -> str:
        """Let it finish; its last line ("opened <failures>")."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        out = self.line()
        assert self.proc.wait(timeout=60) == 0
        return out


@contextmanager
def _creator(path: Path, step: str, busy_timeout_ms: int = 2000) -> Iterator[_Creator]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CREATOR, str(path), step, str(busy_timeout_ms)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield _Creator(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=60)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


def _open_in_another_process(path: Path) -> str:
    """A real process's open of ``path``, from start to end; its "opened" line."""
    done = subprocess.run(
        [sys.executable, "-c", _CREATOR, str(path), "none", "2000"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _whole(path: Path) -> bool:
    """Whether ``path`` is a whole store: in WAL mode, every migration applied."""
    with open(path, "rb") as f:
        header = f.read(100)
    if len(header) < 100 or header[18:20] != b"\x02\x02":  # WAL's read/write versions
        return False
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        applied = {v for (v,) in db.execute("SELECT version FROM schema_migrations")}
    finally:
        db.close()
    return applied == {m.version for m in load_migrations("lossless.store.sqlite")}


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def _temporary(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name + ".new-"))


@pytest.mark.parametrize("step", ["connected", "migrating", "built", "published"])
def test_an_opener_beside_a_creator_meets_no_store_or_a_whole_one_and_never_busy(
    tmp_path: Path, step: str
) -> None:
    path = tmp_path / "home" / "lcm.db"
    with _creator(path, step) as creator:
        assert creator.line() == "paused\n"
        # Wherever the creator is, its store is not there yet, or whole.
        if step == "published":
            assert _whole(path)
        else:
            assert not path.exists()
            assert _temporary(path)  # being built beside it
        building = _temporary(path)
        # Another process opens it now, from start to end, while the creator
        # still holds what it holds (the write lock, when "migrating"):
        # no attempt of its open fails (none was answered busy).
        assert _open_in_another_process(path) == "opened 0"
        assert _whole(path)
        # It left the live creator's files alone.
        assert set(building) <= set(_temporary(path))
        # The creator goes on: before publishing, it finds the store there,
        # drops its own build and opens that one, also at the first attempt.
        assert creator.go_on() == "opened 0\n"
    assert _whole(path)
    assert _temporary(path) == []
    assert _mode(path) == 0o600
    with SQLiteStore(path) as store:
        assert store.stats().conversations == 0


@pytest.mark.parametrize("step", ["connected", "migrating", "built"])
def test_a_creator_killed_mid_build_leaves_files_the_next_open_removes(
    tmp_path: Path, step: str
) -> None:
    path = tmp_path / "lcm.db"
    with _creator(path, step) as creator:
        assert creator.line() == "paused\n"
        left = _temporary(path)
        assert left
        assert not [left for left in creation.leftovers(path) if left.gone]
        creator.proc.kill()
        # Dead but not yet reaped (a zombie): its files count as left already.
        os.waitid(os.P_PID, creator.proc.pid, os.WEXITED | os.WNOWAIT)
        assert [left.file.name for left in creation.leftovers(path) if left.gone] == left
    assert not path.exists()
    with SQLiteStore(path) as store:
        assert store.stats().conversations == 0
    assert _whole(path)
    assert _temporary(path) == []


def test_a_leftover_of_a_killed_creator_beside_a_published_store_is_removed_by_doctor(
    tmp_path: Path, lcm_home: Path
) -> None:
    from lossless.config import load_config
    from lossless.doctor import check_store_and_worker

    path = lcm_home / "lcm.db"
    with _creator(path, "built") as creator:
        assert creator.line() == "paused\n"
        assert _open_in_another_process(path) == "opened 0"
        left = _temporary(path)
        assert len(left) == 1
        creator.proc.kill()
        creator.proc.wait(timeout=60)
    # Every later open finds the store there and creates nothing: doctor cleans.
    SQLiteStore(path).close()
    assert _temporary(path) == left
    checks = [c for c in check_store_and_worker(load_config()) if c.name == "leftovers"]
    assert [c.status for c in checks] == ["ok"]
    assert left[0] in checks[0].detail
    assert _temporary(path) == []
    assert not [c for c in check_store_and_worker(load_config()) if c.name == "leftovers"]


def test_doctor_names_a_build_under_way_and_leaves_it(tmp_path: Path, lcm_home: Path) -> None:
    from lossless.config import load_config
    from lossless.doctor import check_store_and_worker

    path = lcm_home / "lcm.db"
    with _creator(path, "migrating") as creator:
        assert creator.line() == "paused\n"
        building = _temporary(path)
        checks = [c for c in check_store_and_worker(load_config()) if c.name == "leftovers"]
        assert [c.status for c in checks] == ["info"]
        assert f"process {creator.proc.pid}" in checks[0].detail
        assert _temporary(path) == building
        assert creator.go_on() == "opened 0\n"
    assert _whole(path)
    assert _temporary(path) == []


def test_a_leftover_of_a_live_process_or_an_unknown_name_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    mine = creation._identity(os.getpid())
    alive = tmp_path / f"lcm.db.new-{mine}-0123abcd"
    unknown = tmp_path / "lcm.db.new-backup"
    dead = tmp_path / "lcm.db.new-999999999-1-0123abcd-wal"  # beyond any pid_max
    for file in (alive, unknown, dead):
        file.write_bytes(b"")
    with SQLiteStore(path):
        pass
    assert alive.exists() and unknown.exists()
    assert not dead.exists()


def test_without_hard_links_the_store_is_created_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(source: object, target: object, **kwargs: object) -> None:
        raise PermissionError(1, "Operation not permitted")  # vfat's answer

    monkeypatch.setattr(os, "link", no_links)
    path = tmp_path / "lcm.db"
    with SQLiteStore(path) as store:
        assert store.stats().conversations == 0
    assert _whole(path)
    assert _mode(path) == 0o600
    assert _temporary(path) == []


def test_a_build_that_fails_leaves_nothing_and_the_open_in_place_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Path] = []

    def failing(self: SQLiteStore, file: Path) -> None:
        built.append(file)
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(SQLiteStore, "_build", failing)
    path = tmp_path / "lcm.db"
    with SQLiteStore(path) as store:
        assert store.stats().conversations == 0
    assert built and not built[0].exists()
    assert _whole(path)
    assert _temporary(path) == []


def test_a_missing_folder_is_made_private_and_the_store_0600(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "lcm.db"
    with SQLiteStore(path):
        # The log and shared memory take the database file's mode.
        assert {p.name: _mode(p) for p in path.parent.iterdir()} == {
            "lcm.db": 0o600,
            "lcm.db-wal": 0o600,
            "lcm.db-shm": 0o600,
        }
    assert _mode(path.parent) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == ["lcm.db"]
    assert _whole(path)


def test_a_fresh_empty_file_is_opened_where_it_is(tmp_path: Path) -> None:
    """As before: a 0-byte file just made is another process creating the store
    in place (an older lossless, or no hard links), never replaced."""
    path = tmp_path / "lcm.db"
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    inode = path.stat().st_ino
    SQLiteStore(path).close()
    assert path.stat().st_ino == inode
    assert _whole(path)
    assert _temporary(path) == []


def test_a_dangling_symbolic_link_is_created_through_as_before(tmp_path: Path) -> None:
    elsewhere = tmp_path / "disk" / "store.db"
    elsewhere.parent.mkdir()
    path = tmp_path / "lcm.db"
    path.symlink_to(elsewhere)
    SQLiteStore(path).close()
    assert path.is_symlink()
    assert _whole(elsewhere)
