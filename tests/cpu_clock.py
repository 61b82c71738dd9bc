"""CPU time, the clock a time budget can be checked against on a loaded machine.

A regex grep's budget is enforced by the ``regex`` package's match timeout,
which counts the process's CPU time (``clock()``), not wall time: on a shared
two-core machine at load 20 a 0.5 s budget took 17 s of wall time while the
process used no more than the budget in CPU. A test of a budget therefore
bounds the CPU the work used (what the budget guarantees), and keeps a wall
limit only to catch a hang, set far above anything load can cause and far
below what the unbudgeted work would take.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User plus system CPU seconds that the running process ``pid`` has used so far."""
    # Fields after the command name (which may hold spaces and parentheses):
    # state is the 1st, utime the 12th, stime the 13th (proc(5): fields 14, 15).
    fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * _TICK_S


def children_cpu_s() -> float:
    """CPU seconds used by this process's children that have been waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Spent:
    """What a measured block used: wall seconds and CPU seconds."""

    wall_s: float = 0.0
    cpu_s: float = 0.0

    def __str__(self) -> str:
        return f"{self.cpu_s:.2f} s CPU in {self.wall_s:.1f} s wall"


@contextmanager
def spent_here() -> Iterator[Spent]:
    """Wall and CPU time (every thread of this process) spent in the block."""
    spent = Spent()
    wall, cpu = time.monotonic(), time.process_time()
    try:
        yield spent
    finally:
        spent.wall_s = time.monotonic() - wall
        spent.cpu_s = time.process_time() - cpu


@contextmanager
def spent_by_children() -> Iterator[Spent]:
    """Wall time of the block and CPU used by the child processes it ran to completion."""
    spent = Spent()
    wall, cpu = time.monotonic(), children_cpu_s()
    try:
        yield spent
    finally:
        spent.wall_s = time.monotonic() - wall
        spent.cpu_s = children_cpu_s() - cpu
