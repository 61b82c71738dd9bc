"""A read-only home and a full disk, through the real ``lcm`` CLI (subprocesses).

Read-only: writing commands (import, compact, remember) give one clear error
and change nothing; reading commands work and ``lcm verify`` finds no false
problems. Full disk: a clear error, no traceback, no empty conversation row,
nothing stored before lost, and once there is room a re-run converges to what
a clean run stores.

The full disk is a small tmpfs where this user may mount one (root, as on CI),
and a file size limit (RLIMIT_FSIZE) everywhere; the read-only home is a
read-only bind mount for root, file modes otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

FILES = 4
LINES = 250


def lcm(
    home: Path, *args: str, preexec: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lossless", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "LCM_HOME": str(home)},
        preexec_fn=preexec,
    )


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


def _umount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A few sessions of ~1 MB each: words that compress badly, like real text."""
    import random

    rng = random.Random(16)
    folder = tmp_path_factory.mktemp("disk-transcripts")
    for f in range(FILES):
        lines = []
        for i in range(LINES):
            words = " ".join(
                rng.choice(["alpha", "beta", "gamma", f"w{rng.randint(0, 10**6)}"])
                for _ in range(450)
            )
            lines.append(
                json.dumps(
                    {
                        "type": "user" if i % 2 == 0 else "assistant",
                        "uuid": f"f{f}-u{i}",
                        "parentUuid": f"f{f}-u{i - 1}" if i else None,
                        "sessionId": f"s-disk-{f}",
                        "cwd": "/w",
                        "timestamp": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z",
                        "message": {
                            "role": "user" if i % 2 == 0 else "assistant",
                            "content": f"{i}: {words}",
                        },
                    }
                )
            )
        (folder / f"s{f}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _messages(home: Path, *, immutable: bool = False) -> list[tuple[str, int, str]]:
    # immutable: a read-only folder has no room for SQLite's shared-memory file.
    flags = "mode=ro&immutable=1" if immutable else "mode=ro"
    db = sqlite3.connect(f"file:{home / 'lcm.db'}?{flags}", uri=True)
    try:
        rows = db.execute(
            "SELECT c.session_id, m.seq, m.content FROM messages m "
            "JOIN conversations c ON c.id = m.conversation_id ORDER BY 1, 2"
        ).fetchall()
    finally:
        db.close()
    return [(str(a), int(b), str(c)) for a, b, c in rows]


def _empty_conversations(home: Path) -> list[str]:
    db = sqlite3.connect(f"file:{home / 'lcm.db'}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT session_id FROM conversations c WHERE NOT EXISTS "
            "(SELECT 1 FROM messages m WHERE m.conversation_id = c.id)"
        ).fetchall()
    finally:
        db.close()
    return [str(r[0]) for r in rows]


@pytest.fixture(scope="module")
def clean_run(transcripts: Path, tmp_path_factory: pytest.TempPathFactory) -> list:  # type: ignore[type-arg]
    home = tmp_path_factory.mktemp("disk-clean") / "home"
    run = lcm(home, "import", str(transcripts), "--complete")
    assert run.returncode == 0, run.stderr
    return _messages(home)


def _clear(run: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert run.returncode == 1, (run.returncode, run.stdout, run.stderr)
    assert "Traceback" not in run.stderr, run.stderr
    for needle in needles:
        assert needle in run.stderr, run.stderr


def _after_room_converges(home: Path, transcripts: Path, clean: list) -> None:  # type: ignore[type-arg]
    again = lcm(home, "import", str(transcripts), "--complete")
    assert again.returncode == 0, again.stderr
    assert _messages(home) == clean
    verify = lcm(home, "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr


# --------------------------------------------------------------------------- full disk


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "small-disk"
    where.mkdir()
    if not _mount("-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)):
        pytest.skip("cannot mount a tmpfs here (not root); the RLIMIT_FSIZE test covers it")
    try:
        yield where
    finally:
        _umount(where)


def test_a_full_tmpfs(small_tmpfs: Path, transcripts: Path, clean_run: list) -> None:  # type: ignore[type-arg]
    home = small_tmpfs / "home"
    run = lcm(home, "import", str(transcripts), "--complete")
    _clear(run, "could not be written", "Nothing stored before was lost")
    kept = _messages(home)
    assert len(kept) < len(clean_run)
    assert _empty_conversations(home) == []
    for args in (("status",), ("verify",), ("grep", "alpha")):
        read = lcm(home, *args)
        assert read.returncode == 0, (args, read.stdout, read.stderr)
    # Fill what is left. A small write may still fit in the space the store's
    # write-ahead log already holds; one that does not is a clear error.
    filler = small_tmpfs / "filler"
    with filler.open("wb") as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 65536)
    for args in (("remember", "a fact to keep", "--project", "/w"), ("compact", "--all")):
        small = lcm(home, *args)
        assert "Traceback" not in small.stderr, small.stderr
        assert small.returncode == 0 or "could not be written" in small.stderr, small.stderr
    _clear(lcm(home, "import", str(transcripts), "--complete"), "could not be written")
    assert _messages(home) == kept
    assert lcm(home, "verify").returncode == 0
    filler.unlink()
    assert _mount("-o", "remount,size=64m", str(small_tmpfs))
    _after_room_converges(home, transcripts, clean_run)


def _file_size_limit(limit: int) -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of death
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_file_size_limit(tmp_path: Path, transcripts: Path, clean_run: list) -> None:  # type: ignore[type-arg]
    home = tmp_path / "home"
    run = lcm(home, "import", str(transcripts), "--complete", preexec=_file_size_limit(2 << 20))
    _clear(run, "could not be written")
    kept = _messages(home)
    assert len(kept) < len(clean_run)
    assert _empty_conversations(home) == []
    verify = lcm(home, "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    _after_room_converges(home, transcripts, clean_run)


# --------------------------------------------------------------------------- read-only home


@pytest.fixture
def read_only_home(tmp_path: Path, transcripts: Path) -> Iterator[Path]:
    outer = tmp_path / "ro"
    home = outer / "home"
    seeded = lcm(home, "import", str(transcripts / "s0.jsonl"), "--complete")
    assert seeded.returncode == 0, seeded.stderr
    assert lcm(home, "remember", "the billing port is 8443", "--project", "/w").returncode == 0
    if os.geteuid() == 0:
        if not (
            _mount("--bind", str(outer), str(outer)) and _mount("-o", "remount,bind,ro", str(outer))
        ):
            _umount(outer)
            pytest.skip("cannot make a read-only bind mount here")
        try:
            yield home
        finally:
            _umount(outer)
    else:
        modes = {p: p.stat().st_mode for p in [home, *home.rglob("*")]}
        for path in modes:
            path.chmod(modes[path] & ~0o222)
        try:
            yield home
        finally:
            for path, mode in modes.items():
                path.chmod(mode)


def test_a_read_only_home(read_only_home: Path, transcripts: Path) -> None:
    home = read_only_home
    before = _messages(home, immutable=True)
    for args in (
        ("import", str(transcripts), "--complete"),
        ("compact", "--all"),
        ("remember", f"another fact {uuid.uuid4().hex}", "--project", "/w"),
    ):
        _clear(lcm(home, *args), "cannot write to the store", "read commands")
    for args in (
        ("status",),
        ("grep", "alpha"),
        ("search", "billing", "--all-projects"),
        ("describe", "1"),
    ):
        read = lcm(home, *args)
        assert read.returncode == 0 and "Traceback" not in read.stderr, (args, read.stderr)
    verify = lcm(home, "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "all whole" in verify.stdout
    assert _messages(home, immutable=True) == before
