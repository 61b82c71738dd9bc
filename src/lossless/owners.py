"""Who holds a claim: host, pid and process start time, so a dead holder is seen at once.

Used by map job claims and compaction leases. A claim's lease would expire by
itself, but a user who resumes work right after a crash should not wait for
that: an owner on this host whose process is gone (or whose pid now belongs
to a younger process: the start time tells them apart) holds nothing.
Owners on other hosts are left to their leases.
"""

from __future__ import annotations

import os
import socket
import uuid
from functools import cache

from lossless.process import proc_stat


def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), or None."""
    stat = proc_stat(pid)
    return str(stat.start_ticks) if stat else None


@cache
def this_owner() -> str:
    """This process's owner name: ``host:pid:start`` plus a nonce for uniqueness."""
    return new_owner()


def new_owner() -> str:
    """A fresh owner name for this process (two holders in one process differ by nonce)."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_ticks(pid) or '?'}:{uuid.uuid4().hex[:8]}"


def describe(owner: str) -> str:
    """``owner`` for a person: "process 123 on host-a" (the raw name if not ours)."""
    parts = owner.split(":")
    if len(parts) >= 3 and parts[1].isdigit():
        return f"process {parts[1]} on {parts[0]}"
    return repr(owner)


def is_dead_here(owner: str) -> bool:
    """True when ``owner`` names a process on this host that no longer runs."""
    parts = owner.split(":")
    if len(parts) < 3 or parts[0] != socket.gethostname():
        return False
    try:
        pid = int(parts[1])
    except ValueError:
        return False
    if pid == os.getpid():
        return parts[2] != (_start_ticks(pid) or "?")
    started = _start_ticks(pid)
    if started is None:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False
    return parts[2] not in ("?", started)
