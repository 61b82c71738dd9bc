"""A new SQLite store appears whole: built under a temporary name, published by a hard link.

Why: a store file created empty at its own name was switched to WAL by every
process that opened it first (a hook, ``lcm grep`` and ``lcm status`` starting
on a new home at once). That switch reads the file, then writes its header,
and if another process began writing in between SQLite answers SQLITE_BUSY at
once, without waiting (tests/store/test_sqlite_busy_open.py). Built here
under ``<store>.new-<pid>-<start>-<random>`` in the store's own folder (mode
0600, as the store), switched to WAL, migrated, checkpointed and closed, the
file is then given the store's name with ``os.link``: atomic, and it fails
with FileExistsError if another process published first (``rename`` would
replace a store that process may already be writing). The loser drops its
build and opens the winner's store. So no process meets a store file that is
not yet in WAL mode or is half-migrated.

A creator killed mid-build leaves its temporary files; the next creation and
``lcm doctor`` remove those whose process is gone (its pid no longer runs,
or now belongs to a process started at another time), never one a live
process is building. A file system without hard links, or any failure of the
build, leaves the caller to create the store in place as before (its open is
retried while SQLite answers busy), which also reports the failure itself (a
full disk, a read-only folder) with the store's own messages.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

from lossless.errors import LosslessError
from lossless.process import alive, proc_stat

#: Between the store's name and the builder's pid in a temporary file's name.
MARK = ".new-"
_SUFFIXES = ("-wal", "-shm", "-journal")
_PARTS = re.compile(r"(\d+)-(\d+)-[0-9a-f]{8}(?:-wal|-shm|-journal)?")


def create(path: Path, build: Callable[[Path], None]) -> bool:
    """Make a whole store appear at ``path``, built by ``build`` on a new empty file.

    True once ``path`` exists (published here, or by another process first);
    False if it could not be published this way (no hard links here, a build
    that failed, a folder that cannot be written): nothing of the attempt is
    left, and the caller creates the store in place.
    """
    remove_leftovers(path)
    temporary = path.with_name(f"{path.name}{MARK}{_identity(os.getpid())}-{os.urandom(4).hex()}")
    try:
        # 0600 like the store itself (its -wal and -shm files take the
        # database file's mode); the hard link keeps the mode and owner.
        os.close(os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError:
        return False
    try:
        try:
            build(temporary)
        except (OSError, sqlite3.Error, LosslessError):
            return False
        if _has_log_content(temporary):
            # Its content would not follow it: the log is named after the file.
            return False
        try:
            os.link(temporary, path)
        except FileExistsError:
            return True
        except OSError:
            # No hard links on this file system (EPERM, ENOTSUP), or the
            # temporary file was removed by a cleaner that could not see
            # this process (another pid namespace).
            return False
        with suppress(OSError):
            _sync_folder(path.parent)
        return True
    finally:
        _remove(temporary)


class Leftover(NamedTuple):
    """A temporary file of a creation: ``gone`` once its builder ``pid`` is."""

    file: Path
    pid: int
    gone: bool


def leftovers(path: Path) -> list[Leftover]:
    """The temporary files of creations of the store ``path``."""
    found: list[Leftover] = []
    prefix = f"{path.name}{MARK}"
    with suppress(OSError), os.scandir(path.parent) as entries:
        for entry in entries:
            if not entry.name.startswith(prefix):
                continue
            parts = _PARTS.fullmatch(entry.name[len(prefix) :])
            if parts is None:
                continue  # not a name this module makes: not ours to remove
            pid = int(parts[1])
            gone = not _running(pid, int(parts[2]))
            found.append(Leftover(path.parent / entry.name, pid, gone))
    return sorted(found)


def remove_leftovers(path: Path) -> list[Path]:
    """Remove the temporary files of killed creations of the store ``path``; the removed."""
    removed: list[Path] = []
    for file, _, gone in leftovers(path):
        if not gone:
            continue
        try:
            file.unlink()
        except OSError:
            continue  # removed meanwhile by another process, or not ours to remove
        removed.append(file)
    return removed


def _identity(pid: int) -> str:
    """``<pid>-<start>``: the start time (0 where unknown) tells a reused pid apart."""
    return f"{pid}-{_start_ticks(pid) or 0}"


def _running(pid: int, start: int) -> bool:
    """Whether the process that named a temporary file ``<pid>-<start>`` still runs."""
    if pid <= 0:
        return True  # never made by this module: left alone
    stat = proc_stat(pid)
    if stat is not None:
        # A zombie builds nothing; a different start time is another process.
        return stat.state != "Z" and (start == 0 or stat.start_ticks == start)
    if os.path.isdir("/proc/self"):
        return False  # /proc is there and lists no such process
    if os.name == "nt":
        return True  # kill(pid, 0) would send CTRL_C_EVENT there: left alone
    return alive(pid)


def _start_ticks(pid: int) -> int | None:
    stat = proc_stat(pid)
    return stat.start_ticks if stat else None


def _has_log_content(file: Path) -> bool:
    try:
        return os.stat(f"{file}-wal").st_size > 0
    except FileNotFoundError:
        return False


def _remove(file: Path) -> None:
    """Remove a build's files (the published store keeps its own name's link)."""
    for name in (*(f"{file}{suffix}" for suffix in _SUFFIXES), str(file)):
        with suppress(OSError):
            os.unlink(name)


def _sync_folder(folder: Path) -> None:
    """Make the new name durable: without it, a power cut could lose the store's name."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
