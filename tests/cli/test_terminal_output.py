"""Human output fits an 80-column terminal for real history, is coloured only
on a terminal without NO_COLOR, and is plain text in a pipe.

Every command runs as a real subprocess over a store holding the real
transcripts of ../shared/data, with COLUMNS=80.
"""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lossless.cli.table import cut_middle

ANSI = re.compile(r"\x1b\[[0-9;]*m")
WIDTH = 80
DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def run(home: Path, *args: str, columns: int | None = WIDTH, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    if columns is not None:
        environ["COLUMNS"] = str(columns)
    environ.update(env)
    done = subprocess.run(
        [sys.executable, "-m", "lossless", "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    data = DATA
    if not data.is_dir():
        pytest.skip(f"real transcripts not found at {data} (../shared/data)")
    # A home at a short path of its own: some lines name a file in it whole
    # (a path is never cut), and pytest's folders are longer under xdist.
    scratch = Path(tempfile.mkdtemp(prefix="lcm-term-"))
    where = scratch / "home"
    try:
        imported = run(
            where, "import", "--complete", "-q", str(data / "claude-code"), str(data / "codex")
        )
        assert "claude-code" in imported
        run(where, "remember", "--project", "/srv/app", "Deploys go through scripts/blue_green.sh")
        yield where
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


COMMANDS: list[tuple[str, ...]] = [
    ("conversations",),
    ("conversations", "--client", "codex"),
    ("messages", "1", "--limit", "40"),
    ("grep", "error", "--limit", "30"),
    ("grep", "def [a-z_]+", "--limit", "30"),
    ("grep", "--mode", "full_text", "phoenix server", "--limit", "30"),
    ("search", "phoenix server start", "--limit", "20"),
    ("status",),
    ("doctor",),
    ("compact", "--all", "--dry-run"),
    ("compact", "--all", "-q"),
    ("conversations",),
    ("dag", "1"),
    ("memories", "--project", "/srv/app"),
    ("sensitive", "list"),
    ("config", "show"),
    ("verify",),
    ("import", "--complete", "-q", "{data}"),
]


def test_every_table_fits_80_columns(home: Path) -> None:
    """Tables and status lines; not the stored text that `lcm context`,
    `describe` and `messages --full` print verbatim."""
    data = DATA
    too_wide: list[str] = []
    for command in COMMANDS:
        args = tuple(a.replace("{data}", str(data / "claude-code")) for a in command)
        out = run(home, *args)
        assert out.strip(), f"lcm {' '.join(args)} printed nothing"
        too_wide += [
            f"lcm {' '.join(args)}: {len(line)} columns: {line!r}"
            for line in out.splitlines()
            if len(line) > WIDTH
        ]
    assert not too_wide, "\n".join(too_wide[:20])


def test_paths_and_ids_lose_their_middle_so_sub_agents_stay_apart(home: Path) -> None:
    folder = DATA / "claude-code" / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569"
    out = run(home, "import", "--complete", str(folder / "subagents"))
    cells = [line.split()[0] for line in out.splitlines() if ".jsonl" in line]
    assert len(cells) == 2 and cells[0] != cells[1], out
    assert all("…" in cell for cell in cells)  # the path was too long for its column
    assert {cell[-9:] for cell in cells} == {"8e3.jsonl", "845.jsonl"}
    assert cut_middle("/a/very/long/path/agent-a2898e3.jsonl", 20).endswith("8e3.jsonl")
    assert len(cut_middle("x" * 100, 20)) == 20


def test_piped_output_is_plain_and_uncut_without_columns(home: Path) -> None:
    folder = DATA / "claude-code" / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569"
    out = run(home, "import", "--complete", str(folder / "subagents"), columns=None)
    assert not ANSI.search(out)
    # A script reading a pipe gets whole values.
    assert str((folder / "subagents" / "agent-a2898e3.jsonl").resolve()) in out
    assert "…" not in out


def _on_a_terminal(home: Path, *args: str, **env: str) -> str:
    """Run lcm with its stdout on a pseudo-terminal and return what it printed."""
    leader, follower = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")}
    environ.update(env, COLUMNS=str(WIDTH), TERM="xterm-256color")
    environ.pop("FORCE_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "lossless", "--home", str(home), *args],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env=environ,
    )
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closes when the child exits
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_colour_on_a_terminal_and_none_with_no_color(home: Path) -> None:
    coloured = _on_a_terminal(home, "doctor")
    assert ANSI.search(coloured), coloured[:500]
    assert ANSI.search(_on_a_terminal(home, "conversations"))
    plain = _on_a_terminal(home, "doctor", NO_COLOR="1")
    assert not ANSI.search(plain), plain[:500]
    assert ANSI.sub("", coloured).split() == plain.split()
    assert not ANSI.search(_on_a_terminal(home, "conversations", NO_COLOR="1"))


def test_json_output_is_untouched_by_width(home: Path) -> None:
    import json

    narrow = json.loads(run(home, "conversations", "--json", columns=40))
    wide = json.loads(run(home, "conversations", "--json", columns=None))
    assert narrow == wide
    assert all(len(c["session_id"]) >= 36 for c in narrow if c["client"] == "codex")
