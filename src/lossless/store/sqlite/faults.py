"""A store file that cannot be written: a read-only home, a full disk, a failing disk.

SQLite reports these as ``sqlite3.OperationalError`` with a bare message
("attempt to write a readonly database", "database or disk is full"); the
store turns them into ``StoreError``s naming the file, the cause and what
still works, so that no command ends in a traceback. A read-only store is
opened read-only from the start (read commands work; no migration, no WAL
switch), and a write is refused before it begins.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from lossless.errors import StoreError

#: errno values of a file system that refuses writes for lack of room.
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


class ReadOnlyStoreError(StoreError):
    """A command that writes met a store that cannot be written."""


class StoreFullError(StoreError):
    """The disk (or quota, or file size limit) holding the store is full."""


def read_only_reason(path: Path) -> str | None:
    """Why the existing database at ``path`` cannot be written, or None if it can."""
    folder = path.parent
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return f"{folder} is on a read-only file system"
    except OSError:
        pass
    if not os.access(folder, os.W_OK):
        return f"the folder {folder} is not writable"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{path} is not writable"
    return None


def disk_full(folder: Path) -> bool:
    """True when the file system holding ``folder`` has no room left (for this user)."""
    try:
        info = os.statvfs(folder)
    except OSError:
        return False
    return info.f_bavail * info.f_frsize < (1 << 20)


def read_only_uri(path: Path, *, immutable: bool = False) -> str:
    """The URI opening ``path`` read-only.

    Reading a WAL database takes its ``-shm`` file, which SQLite cannot create
    in a read-only folder; there nobody can write the database either, so it
    is opened immutable (no locks, no shared memory). Unless a write-ahead log
    was left behind with content: that content is part of the store, and
    immutable would ignore it.
    """
    uri = f"file:{quote(str(path))}?mode=ro"
    wal = Path(f"{path}-wal")
    # access(2) says no on a read-only file system, for root too (EROFS).
    if (immutable or not os.access(path.parent, os.W_OK)) and (
        not wal.exists() or wal.stat().st_size == 0
    ):
        uri += "&immutable=1"
    return uri


def refuse_write(path: Path, reason: str) -> ReadOnlyStoreError:
    return ReadOnlyStoreError(
        f"cannot write to the store {path}: {reason}. Nothing was changed; read commands "
        "(status, grep, search, describe, expand, verify) still work. Make it writable, or "
        "point LCM_HOME at a writable folder"
    )


def translate(exc: BaseException, path: Path) -> StoreError | None:
    """The clear error for a write that failed for lack of room or permission, or None."""
    if isinstance(exc, OSError) and exc.errno in _FULL:
        return full_disk(path, exc.strerror or str(exc))
    if isinstance(exc, OSError) and exc.errno == errno.EROFS:
        return refuse_write(path, "it is on a read-only file system")
    if not isinstance(exc, sqlite3.OperationalError | sqlite3.DatabaseError):
        return None
    message = str(exc)
    if "disk is full" in message or "disk full" in message:
        return full_disk(path, message)
    if "readonly database" in message or "read-only" in message:
        return refuse_write(path, read_only_reason(path) or message)
    if "disk I/O error" in message:
        return StoreError(
            f"the store {path} could not be written: {message} (a full or failing disk, or "
            "a file size limit). The write was rolled back: nothing stored before it was lost"
        )
    return None


def full_disk(path: Path, cause: str | None = None) -> StoreFullError:
    why = (
        "its disk is full"
        if cause is None
        else f"{cause} (no space left on its disk, a quota, or a file size limit)"
    )
    return StoreFullError(
        f"the store {path} could not be written: {why}. Nothing stored before was lost "
        "(the write was rolled back). Free some space and run the command again; it takes "
        "up where it stopped"
    )
