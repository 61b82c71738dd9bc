"""Owner names of claims and leases: a dead process on this host is seen, a reused pid too."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from lossless import owners


def test_a_running_process_is_alive_and_a_finished_one_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        ticks = owners._start_ticks(child.pid)
        assert ticks is not None
        name = f"{socket.gethostname()}:{child.pid}:{ticks}:nonce"
        assert not owners.is_dead_here(name)
    finally:
        child.kill()
        child.wait()
    assert owners.is_dead_here(name)


def test_a_reused_pid_is_not_mistaken_for_the_holder() -> None:
    # A live pid (our parent) whose start time is not the one recorded: the
    # holder that recorded it is gone, the pid now belongs to someone else.
    parent = os.getppid()
    ticks = owners._start_ticks(parent)
    assert ticks is not None
    assert owners.is_dead_here(f"{socket.gethostname()}:{parent}:{int(ticks) + 1}:nonce")
    assert not owners.is_dead_here(f"{socket.gethostname()}:{parent}:{ticks}:nonce")


def test_this_process_and_other_hosts_are_never_dead() -> None:
    assert not owners.is_dead_here(owners.this_owner())
    assert not owners.is_dead_here(owners.new_owner())  # another holder in this process
    assert not owners.is_dead_here("some-other-host:1:1:nonce")
    assert not owners.is_dead_here("someone-else")
    assert owners.new_owner() != owners.new_owner()
    assert owners.describe("h:42:7:x") == "process 42 on h"
