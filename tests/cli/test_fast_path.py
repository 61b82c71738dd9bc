"""``lcm grep``, ``describe`` and ``status`` without click (``cli/fast_path.py``) print what
click's commands print.

Its table of options is held to the click commands'; every command line it
reads is answered byte for byte as click's command answers it (same store,
same environment); every one it should not read is left to click.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from lossless.cli import fast_path
from lossless.cli.app import cli, load_all_commands
from lossless.config import load_config
from lossless.engine.engine import Engine


@pytest.mark.parametrize("name", sorted(fast_path.OPTIONS))
def test_options_restate_the_click_command(name: str) -> None:
    load_all_commands()
    assert isinstance(cli, click.Group)
    command = cli.commands[name]
    options: dict[str, tuple[str, Any]] = {}
    arguments = []
    for param in command.params:
        if isinstance(param, click.Argument):
            arguments.append((param.name, param.required, param.nargs, param.type))
            continue
        assert isinstance(param, click.Option) and param.name is not None
        kind: Any
        if param.is_flag:
            kind = "flag"
        elif isinstance(param.type, click.Choice):
            kind = tuple(param.type.choices)
        elif isinstance(param.type, click.IntRange):
            assert (param.type.max, param.type.min_open) == (None, False)
            assert param.type.min in (0, 1)
            kind = "count" if param.type.min == 1 else "index"
        elif isinstance(param.type, click.FloatRange):
            assert (param.type.min, param.type.max, param.type.min_open) == (0, None, False)
            kind = "seconds"
        else:
            assert param.type == click.STRING, param.name
            kind = "text"
        for option in [*param.opts, *param.secondary_opts]:
            options[option] = (param.name, kind)
    argument = fast_path.ARGUMENT[name]
    assert arguments == ([] if argument is None else [(argument, True, 1, click.STRING)])
    assert options == fast_path.OPTIONS[name]
    # What click passes the command when no option is given. Made as under
    # `lcm` (its help options): click keeps a command's help option from its
    # first context, and docs/cli.md's test renders `-h, --help` after this.
    given = command.make_context(
        name,
        [] if argument is None else ["x"],
        help_option_names=cli.context_settings["help_option_names"],
    ).params
    assert given == {**({} if argument is None else {argument: "x"}), **fast_path.DEFAULTS[name]}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("fast-grep")
    with Engine.open(config=load_config(root / "lcm", env={})) as engine:
        for session, project, text in (
            ("s-1", "billing", "the billing service listens on port 8443"),
            ("s-1", "billing", "port 8443 is behind the proxy; billing retries 3 times"),
            ("s-2", "search", "the search index is rebuilt nightly; not billing"),
        ):
            engine.conversation(session, project=project).ingest(
                [{"role": "user", "content": text}]
            )
    yield root / "lcm"


# Each is answered by fast_path and compared with click's command.
READ = [
    ["grep", "billing"],
    ["grep", "billing", "--json"],
    ["grep", "port 8443", "--limit", "1"],
    ["grep", "--limit=1", "billing", "--json"],
    ["grep", "billing", "-n", "1", "--scope", "messages"],
    ["grep", "billing", "--mode", "full_text", "--json"],
    ["grep", "billing", "--project=search"],
    ["grep", "billing", "--conversation", "1", "--since", "7d"],
    ["grep", "b.ll+ing", "-c", "s-2", "--time-budget", "0.5"],
    ["grep", "billing", "--session", "s-2", "--time-budget=0", "--json"],
    ["grep", "nothing like it"],
    ["grep", "billing", "-c", "no-such-conversation"],  # an error: exit 1
    ["grep", "(unclosed"],  # a pattern that is not a regex: exit 1
    ["grep", "(unclosed", "--json"],
    ["grep", "billing", "--scope", "summaries"],  # nothing summarized: no results
    ["grep", "nothing like it", "--json"],
    ["grep", "billing", "--scope", "both", "--limit", "2", "--json"],
    ["grep", "(?i)BILLING", "-n", "1", "--mode", "regex"],
    ["grep", "BILLING"],
    ["grep", "billing port", "--mode", "full_text", "-n", "1"],
    ["grep", "billing", "--project", "no-such-project"],
    ["grep", "billing", "--since", "2000-01-01", "--limit=2"],
    ["grep", "billing", "--session", "no-such-session", "--json"],
    ["describe", "1"],
    ["describe", "2", "--json"],
    ["describe", "1", "--offset", "4", "--chars", "7"],
    ["describe", "--offset=0", "3"],
    ["describe", "1", "--chars=5", "--json"],
    ["describe", "99"],  # no such message: exit 1
    ["describe", "sum_nope"],
    ["describe", "file_nope"],
    ["describe", "1", "--offset", "999"],  # past the end: exit 1
    ["status"],
    ["status", "--json"],
    ["status", "--sizes"],
    ["status", "--json", "--sizes"],
]


def _fast(args: list[str], env: dict[str, str]) -> tuple[int | None, str, str]:
    """fast_path.run on UTF-8 streams of its own, in this process."""
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for _ in range(2))
    saved = sys.stdout, sys.stderr, dict(os.environ)
    sys.stdout, sys.stderr = out, err
    os.environ.update(env)
    try:
        code = fast_path.run(args)
    finally:
        sys.stdout, sys.stderr = saved[0], saved[1]
        os.environ.clear()
        os.environ.update(saved[2])
    texts = []
    for stream in (out, err):
        stream.flush()
        texts.append(stream.buffer.getvalue().decode("utf-8"))  # type: ignore[attr-defined]
    return code, texts[0], texts[1]


def test_prints_what_click_prints(home: Path) -> None:
    env = {"LCM_HOME": str(home), "COLUMNS": "90"}
    runner = CliRunner()
    for args in READ:
        code, out, err = _fast(args, env)
        assert code is not None, args
        by_click = runner.invoke(cli, args, env=env)
        assert (code, out, err) == (by_click.exit_code, by_click.stdout, by_click.stderr), args
    # --home names the folder as LCM_HOME does; the hits are real ones.
    code, out, _ = _fast(["--home", str(home), "grep", "8443", "--json"], {})
    assert code == 0 and len(json.loads(out)["hits"]) == 2


def test_grep_on_a_missing_store_prints_what_click_prints(tmp_path: Path) -> None:
    """A data folder that does not exist yet: each path makes its own, the same way."""
    runner = CliRunner()
    for args in (["grep", "anything"], ["grep", "anything", "--json"], ["grep", "(x"]):
        fast_home, click_home = (tmp_path / name / "lcm" for name in ("fast", "click"))
        code, out, err = _fast(args, {"LCM_HOME": str(fast_home)})
        by_click = runner.invoke(cli, args, env={"LCM_HOME": str(click_home)})
        assert code is not None, args
        assert (code, out, err) == (by_click.exit_code, by_click.stdout, by_click.stderr), args
        assert sorted(p.name for p in fast_home.iterdir()) == sorted(
            p.name for p in click_home.iterdir()
        )
        shutil.rmtree(tmp_path / "fast")
        shutil.rmtree(tmp_path / "click")


# `lcm` itself (cli.main: the fast path, inspect deferred, no click) against
# click's group run as `lcm` runs it, each in its own interpreter, byte for byte.
_BY_MAIN = "import sys; from lossless.cli import main; main(sys.argv[1:])"
_BY_CLICK = "import sys; from lossless.cli.app import cli; cli(args=sys.argv[1:], prog_name='lcm')"


@pytest.mark.parametrize(
    "args",
    [
        ["grep", "billing"],
        ["grep", "8443", "--limit", "1", "--json"],
        ["grep", "b.ll+ing", "--scope", "messages", "-n", "2"],
        ["grep", "nothing like it"],
        ["grep", "(unclosed"],
        ["grep", "billing", "-c", "no-such-conversation"],
    ],
)
def test_lcm_prints_the_bytes_its_click_command_prints(home: Path, args: list[str]) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LCM_HOME": str(home), "COLUMNS": "90"}
    by_main, by_click = (
        subprocess.run(
            [sys.executable, "-c", script, *args], capture_output=True, timeout=60, env=env
        )
        for script in (_BY_MAIN, _BY_CLICK)
    )
    assert (by_main.returncode, by_main.stdout, by_main.stderr) == (
        by_click.returncode,
        by_click.stdout,
        by_click.stderr,
    )
    assert by_main.stdout or by_main.stderr


def test_runs_without_click(home: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from lossless.cli import main; main(sys.argv[1:]); "
            "print('click' in sys.modules, file=sys.stderr)",
            "grep",
            "8443",
            "--limit=1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "LCM_HOME": str(home)},
    )
    assert "port [8443] is behind the proxy" in done.stdout
    assert done.stderr.splitlines()[-1] == "False"


@pytest.mark.parametrize(
    "args",
    [
        ["grep", "billing", "--help"],
        ["grep", "-h"],
        ["grep"],  # no pattern
        ["grep", "a", "b"],  # two
        ["grep", "billing", "-n5"],  # a short option run together with its value
        ["grep", "billing", "-n=5"],
        ["grep", "billing", "--limit", "0"],  # below its range
        ["grep", "billing", "--limit", "+5"],  # click converts it; let it
        ["grep", "billing", "--limit", "٣"],
        ["grep", "billing", "--time-budget", "1e3"],
        ["grep", "billing", "--mode", "REGEX"],
        ["grep", "billing", "--limit", "2", "--limit", "3"],  # a repeat
        ["grep", "billing", "--json=yes"],
        ["grep", "billing", "--no-such-option"],
        ["grep", "billing", "--project"],  # no value
        ["grep", "billing", "--project", "-x"],
        ["grep", "billing", "--project", ""],
        ["grep", "--", "-billing"],
        ["grep", "\x1b[31mbilling"],  # a control character
        ["--version", "grep", "billing"],
        ["describe"],
        ["describe", "1", "2"],
        ["describe", "1", "--offset", "-1"],
        ["describe", "1", "--chars", "0"],
        ["describe", "1", "--json", "--json"],
        ["status", "extra"],
        ["status", "--sizes", "--sizes"],
        ["status", "--json=1"],
        ["conversations"],
    ],
)
def test_leaves_the_rest_to_click(args: list[str]) -> None:
    assert fast_path.parse(args) is None


def test_home_click_would_refuse_is_left_to_it(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("")
    assert fast_path.parse(["--home", str(a_file), "grep", "x"]) is None
    assert fast_path.parse([f"--home={a_file}", "grep", "x"]) is None
    parsed = fast_path.parse(["--home", str(tmp_path / "new"), "grep", "x", "-n", "3"])
    assert parsed == (
        "grep",
        tmp_path / "new",
        {**fast_path.DEFAULTS["grep"], "pattern": "x", "limit": 3},
    )


def test_a_map_job_is_described_by_click(home: Path) -> None:
    assert _fast(["describe", "job_0123"], {"LCM_HOME": str(home)}) == (None, "", "")
    by_click = CliRunner().invoke(cli, ["describe", "job_0123"], env={"LCM_HOME": str(home)})
    assert by_click.exit_code == 1 and "job_0123" in by_click.stderr


def test_a_since_click_would_refuse_is_left_to_it(home: Path) -> None:
    env = {"LCM_HOME": str(home)}
    assert fast_path.parse(["grep", "x", "--since", "next tuesday"]) is not None
    assert _fast(["grep", "x", "--since", "next tuesday"], env) == (None, "", "")
    assert _fast(["grep", "x", "--since", "7d"], env)[0] == 0


def test_status_prints_a_terminal_code_exactly_both_ways(home: Path, tmp_path: Path) -> None:
    """A terminal code in what status shows (here: the data folder's name)
    reaches a pipe as it is, from the fast path and from click's command
    alike (click's echo used to strip it)."""
    odd = tmp_path / "odd\x1b[1mhome"
    shutil.copytree(home, odd)
    code, out, err = _fast(["status"], {"LCM_HOME": str(odd)})
    by_click = CliRunner().invoke(cli, ["status"], env={"LCM_HOME": str(odd)})
    assert (
        (code, out, err)
        == (by_click.exit_code, by_click.stdout, by_click.stderr)
        == (
            0,
            out,
            "",
        )
    )
    assert "odd\x1b[1mhome" in out


def test_a_stream_that_is_not_utf8_is_left_to_click(home: Path) -> None:
    saved = sys.stdout
    sys.stdout = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    try:
        assert fast_path.run(["--home", str(home), "grep", "billing"]) is None
    finally:
        sys.stdout = saved
