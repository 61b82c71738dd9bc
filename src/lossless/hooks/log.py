"""The hook log, ``$LCM_HOME/logs/hooks.log``: one line per hook, failures with a traceback.

A hook prints nothing but its answer, so this file is where users and
``lcm doctor`` see what hooks did.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lossless.config import Config


def log_event(
    config: Config | None,
    event: str,
    payload: dict[str, Any] | None,
    status: str,
    seconds: float,
    detail: str,
) -> None:
    if config is None:
        raise RuntimeError("no configuration to find the log folder")
    session = payload.get("session_id") if isinstance(payload, dict) else None
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    line = (
        f"{stamp}Z {event} session={session if isinstance(session, str) else '-'} "
        f"pid={os.getpid()} {status} {seconds * 1000:.0f}ms {detail}".rstrip()
    )
    _append(config.log_dir, line)


def _append(log_dir: Path, text: str) -> None:
    from lossless.logfile import append_line

    append_line(log_dir, text)


def log_failure(
    config: Config | None, home: Path | None, event: str, detail: str, seconds: float
) -> None:
    """Log a failure even when the configuration itself is what failed."""
    try:
        if config is not None:
            log_dir = config.log_dir
        elif home is not None:
            log_dir = Path(home).expanduser() / "logs"
        else:
            # load_config failed (a broken config.toml): find the home the way
            # it would have, so the error still lands where the user looks.
            from lossless.config import default_home

            log_dir = default_home(os.environ) / "logs"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        _append(
            log_dir,
            f"{stamp}Z {event} pid={os.getpid()} error {seconds * 1000:.0f}ms {detail}".rstrip(),
        )
    except BaseException:
        # Nowhere left to report; staying silent is the hook's contract.
        pass
