"""Process plumbing shared by hooks, offline capture and the worker.

- ``FileLock``: an exclusive advisory lock the kernel drops when its holder
  dies (no stale lock after a crash), and the per-transcript ingest lock
  hooks and offline capture take;
- ``running_worker_pid``: whether a home's worker runs (it holds ``worker.lock``);
- ``spawn_detached``: start a process in its own session that outlives the
  hook that started it;
- ``alive`` and ``proc_stat``: whether a pid answers, and its state and start
  time (a zombie is dead; a later start time is another process on a reused
  pid), for whoever tells a dead holder from a live one.

Imported by every hook, so its top level is stdlib only.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from lossless.config import Config

# Held by the one worker of a home for its lifetime.
WORKER_LOCK = "worker.lock"
# How long a hook waits for another hook of the same transcript to finish its
# ingest. Past it, it ingests anyway: idempotent keys make that safe.
INGEST_LOCK_WAIT_S = 10.0


class FileLock:
    """An exclusive advisory lock on a file (``flock``; ``msvcrt`` on Windows).

    The kernel releases it when the holder exits or dies, which is the point:
    no stale lock survives a crash.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, timeout_s: float = 0.0, *, poll_s: float = 0.02) -> bool:
        """Take the lock, waiting up to ``timeout_s``; False if someone else keeps it."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            if _try_lock(fd):
                self._fd = fd
                return True
            if time.monotonic() >= deadline:
                os.close(fd)
                return False
            time.sleep(poll_s)

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        _unlock(fd)
        os.close(fd)

    @classmethod
    def adopt(cls, path: Path, fd: int) -> FileLock:
        """The lock behind ``fd``, taken by a parent process and inherited."""
        lock = cls(path)
        lock._fd = fd
        return lock

    def hand_over(self) -> int:
        """Give up this process's claim without unlocking; returns the fd to pass on.

        ``flock`` belongs to the open file, not the process: a child that
        inherits the fd keeps the lock after the parent closes its copy, so
        no other process can slip in between the parent's check and the
        child's start.
        """
        assert self._fd is not None, "hand_over() of a lock that is not held"
        fd, self._fd = self._fd, None
        return fd

    def still_in_place(self) -> bool:
        """Whether the held lock's path still names the file this lock is on.

        False once the file (or the folder holding it) was deleted or
        replaced: a process guarding a data folder that is gone, or whose
        lock a newcomer can now take afresh, should stop.
        """
        if self._fd is None:
            return False
        try:
            held, named = os.fstat(self._fd), os.stat(self.path)
        except OSError:
            return False
        return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)

    def write_pid(self) -> None:
        """Record the holder's pid in the lock file, for ``lcm doctor``."""
        if self._fd is None:
            return
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def __enter__(self) -> FileLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import contextlib
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        with contextlib.suppress(OSError):
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


class ProcStat(NamedTuple):
    """What ``/proc/<pid>/stat`` says of a process that matters here."""

    state: str  # "R", "S", ..., "Z" for a dead child not yet reaped
    start_ticks: int  # its start, in clock ticks since boot


def proc_stat(pid: int) -> ProcStat | None:
    """The process's state and start time, or None (no such process, or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after it.
    fields = stat[stat.rfind(")") + 2 :].split()
    if len(fields) <= 19 or not fields[19].isdigit():
        return None
    return ProcStat(fields[0], int(fields[19]))


def alive(pid: int) -> bool:
    """Whether ``pid`` answers ``kill 0`` (a zombie does: see ``proc_stat``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def ingest_lock_path(home: Path, transcript: Path) -> Path:
    """The lock file that serialises ingests of one transcript on one home."""
    import hashlib

    digest = hashlib.sha256(
        str(transcript.resolve()).encode("utf-8", "surrogateescape")
    ).hexdigest()
    return home / "locks" / f"ingest-{digest[:24]}.lock"


def spawn_detached(
    config: Config, argv: list[str], *, stdin: bytes | None = None, pass_fds: tuple[int, ...] = ()
) -> int:
    """Start ``argv`` in its own session, stderr to ``logs/worker.log``; its pid.

    ``stdin`` is written to the child and closed; ``pass_fds`` stay open in
    it (closed here once passed on).
    """
    import subprocess

    config.log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        with (config.log_dir / "worker.log").open("ab") as err:
            child = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=err,
                cwd=str(config.home),
                close_fds=True,
                pass_fds=pass_fds,
                start_new_session=True,
            )
    finally:
        for fd in pass_fds:
            os.close(fd)
    if stdin is not None:
        assert child.stdin is not None
        child.stdin.write(stdin)
        child.stdin.close()
    return child.pid


def worker_lock(home: Path) -> FileLock:
    return FileLock(home / WORKER_LOCK)


def running_worker_pid(home: Path) -> int | None:
    """The pid of the worker running on the data folder ``home``, or None.

    "Running" means the lock is held: a pid left in the file by a dead worker
    does not count. 0 means running, pid unknown (it is written just after
    the lock is taken).
    """
    if not (home / WORKER_LOCK).exists():
        return None
    probe = worker_lock(home)
    if probe.acquire():
        probe.release()
        return None
    try:
        text = (home / WORKER_LOCK).read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return 0
    return int(text) if text.isdigit() else 0


def start_map_worker(config: Config, job_id: str) -> int:
    """Start ``lcm map --resume JOB`` in its own session (``--detach``, the MCP map tools)."""
    argv = [sys.executable, "-m", "lossless", "--home", str(config.home), "map", "--resume"]
    return spawn_detached(config, [*argv, job_id, "--json"])
