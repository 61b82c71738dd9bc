"""Appending to ``$LCM_HOME/logs/hooks.log``: redacted, rotated, any process.

Hooks write one line per run (``lossless.hooks.log``); the worker adds a line
when the summarizer starts or stops failing (``lossless.summarize.health``).
Both land in the file users and ``lcm doctor`` read.
"""

from __future__ import annotations

import os
from pathlib import Path

LOG_FILE = "hooks.log"
LOG_ROTATE_BYTES = 5 * 1024 * 1024


def append_line(log_dir: Path, text: str) -> None:
    """Append one line, its secrets redacted; the file rotates past LOG_ROTATE_BYTES."""
    # A failing hook logs its payload's problem, which may quote the payload:
    # secrets never reach a log either (built-in detectors; the user's
    # patterns need the configuration, which may be what failed).
    from lossless.redact import redact_text

    text = redact_text(text).text
    log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = log_dir / LOG_FILE
    try:
        if path.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(path, path.with_suffix(".log.1"))
    except OSError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8", errors="replace") as fh:
        fh.write(text + "\n")
