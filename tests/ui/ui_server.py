"""Starting ``lcm ui`` as a real subprocess, a store to show, and how Chromium runs here.

Shared by the UI tests and ``benchmarks/bench_ui.py``.

The store is built from the real transcripts in ``../shared/data`` with the
real commands (``lcm import``, ``lcm compact --all``, ``lcm remember``).
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

LCM = [sys.executable, "-m", "lossless"]
CHROMIUM = Path("/usr/bin/chromium")
# This machine runs Chromium as root, without a GPU or network to reach.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
_URL = re.compile(r"(http://\S+/)\s*$")


def lcm(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LCM, "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


def build_real_store(home: Path, data: Path, env: dict[str, str] | None = None) -> None:
    """Import every real transcript, compact everything, add one memory and one map job."""
    items = home / "map-items.jsonl"
    items.write_text("".join(f'{{"n": {n}}}\n' for n in range(3)), encoding="utf-8")
    for args in (
        ("import", str(data / "claude-code"), str(data / "codex"), "-q", "--complete"),
        ("compact", "--all", "-q"),
        ("remember", "Deploys go through scripts/blue_green.sh", "--tag", "deploy"),
        # The command provider answers offline: the job is real, the model a shell.
        (
            "map",
            "--input",
            str(items),
            "--prompt",
            "Label the item",
            "--provider",
            "command",
            "--command",
            """echo '{"label": "even"}'""",
            "--json",
        ),
    ):
        done = lcm(home, *args, env=env)
        assert done.returncode == 0, done.stderr


class UiServer:
    """``lcm --home HOME ui``; ``url`` is the address it printed (token included)."""

    def __init__(self, home: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [*LCM, "--home", str(home), "ui", *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env if env is not None else dict(os.environ),
        )
        self.lines: list[str] = []
        found: queue.Queue[str | None] = queue.Queue()

        def read() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                self.lines.append(line)
                match = _URL.search(line)
                if match:
                    found.put(match.group(1))
            found.put(None)

        threading.Thread(target=read, daemon=True).start()
        try:
            url = found.get(timeout=60)
        except queue.Empty:
            url = None
        if url is None:
            self.stop()
            stderr = self.process.stderr.read() if self.process.stderr else ""
            raise RuntimeError(f"lcm ui printed no URL: {''.join(self.lines)}{stderr}")
        self.url = url
        parts = urlsplit(url)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.port = parts.port or 0
        self.token = parts.path.strip("/")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
