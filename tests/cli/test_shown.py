"""Stored text through a pipe is exact; on a terminal its control codes are inert.

Real ``lcm`` processes: stdout a pipe, or a pseudo-terminal (``pty``) that
the test reads as a terminal emulator would receive it.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lossless.cli.shown import inert
from lossless.config import load_config
from lossless.engine.engine import Engine

LCM = [sys.executable, "-m", "lossless"]
# OSC 52 (writes the clipboard), a colour, a bare carriage return, a bidi override.
HOSTILE = "before \x1b]52;c;ZXZpbA==\x07 after \x1b[31mred\x1b[0m\rfake line \u202eevil end"


def test_inert_shows_every_control_but_newline_and_tab() -> None:
    assert inert("plain\ttext\nnext line, café 漢字") == "plain\ttext\nnext line, café 漢字"
    assert inert(HOSTILE) == (
        "before \\x1b]52;c;ZXZpbA==\\x07 after \\x1b[31mred\\x1b[0m\\rfake line \\u202eevil end"
    )
    assert inert("\x00\x7f\x9b\x0b\x0c\u2066") == "\\x00\\x7f\\x9b\\v\\f\\u2066"
    assert inert(inert(HOSTILE)) == inert(HOSTILE)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("shown") / "lcm"
    with Engine.open(config=load_config(root, env={})) as engine:
        engine.conversation("s-1", project="demo").ingest([{"role": "user", "content": HOSTILE}])
    yield root


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "LCM_HOME": str(home), "COLUMNS": "300", "NO_COLOR": ""}


def _piped(home: Path, *args: str) -> bytes:
    return subprocess.run(
        [*LCM, *args], env=_env(home), capture_output=True, timeout=60, check=True
    ).stdout


def _on_terminal(home: Path, *args: str) -> bytes:
    """What a terminal receives from ``lcm ARGS`` run on it."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [*LCM, *args], env=_env(home), stdout=follower, stderr=follower, stdin=subprocess.DEVNULL
    )
    os.close(follower)
    received = b""
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the other side closed: EIO on Linux
                break
            if not chunk:
                break
            received += chunk
    finally:
        os.close(leader)
        assert proc.wait(timeout=60) == 0, received
    return received


def test_a_pipe_gets_the_stored_text_byte_for_byte(home: Path) -> None:
    stored = HOSTILE.encode("utf-8")
    assert _piped(home, "describe", "1").endswith(b"\n\n" + stored + b"\n")
    assert stored + b"\n" in _piped(home, "messages", "s-1", "--full")


@pytest.mark.parametrize(
    "args",
    [
        ("describe", "1"),
        ("messages", "s-1", "--full"),
        ("messages", "s-1"),
        ("grep", "red"),
        ("context", "s-1"),
    ],
)
def test_a_terminal_gets_no_control_code_from_stored_text(home: Path, args: tuple[str]) -> None:
    received = _on_terminal(home, *args).decode("utf-8")
    for raw in ("\x1b]", "\x07", "\x1b[31m", "\u202e", "\rfake"):
        assert raw not in received, (args, raw)
    assert "\\x1b]52;c;ZXZpbA==\\x07" in received
    assert "\\u202eevil" in received
