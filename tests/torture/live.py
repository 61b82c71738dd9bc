"""What the live-store torture tests share: a small compaction config, ``lcm`` argv and env."""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: Small chunks, so that a few hundred transcript lines compact in a few passes.
SMALL_COMPACTION = {
    "LCM_LEAF_CHUNK_TOKENS": "1500",
    "LCM_LEAF_TARGET_TOKENS": "300",
    "LCM_FRESH_TAIL_COUNT": "6",
    "LCM_CONTEXT_BUDGET_TOKENS": "20000",
}


def lcm_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "lossless", *args]


#: A worker a hook starts exits a second after its work, not a minute: waiting
#: for it (``running_worker_pid``) then takes seconds.
PROMPT_WORKER = {"LCM_WORKER_IDLE_S": "1"}


def lcm_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment (a PostgreSQL backend included), ``home`` as LCM_HOME."""
    return {**os.environ, **SMALL_COMPACTION, **PROMPT_WORKER, "LCM_HOME": str(home), **extra}
