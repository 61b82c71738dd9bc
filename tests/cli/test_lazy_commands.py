"""``lcm`` loads only the module of the command it runs, and still lists them all.

The command table (``lossless.cli.app.COMMANDS``) is what ``lcm --help`` lists
without importing the command modules; these tests hold it to the commands
themselves, and check what a command's process actually imports.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from lossless import __version__
from lossless.cli import cli
from lossless.cli.app import COMMANDS, load_all_commands

_MODULES_AFTER = """
import json, os, sys
from lossless.cli import main
if os.environ.get("LOAD_ALL"):
    from lossless.cli.app import load_all_commands
    load_all_commands()
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout.flush()
# Modules executed: one lossless.deferred_modules holds unexecuted is not (and
# that module is not imported here if the command did not).
deferred = sys.modules.get("lossless.deferred_modules")
is_deferred = deferred.is_deferred if deferred else lambda module: False
print("\\n" + json.dumps(sorted(n for n, m in sys.modules.items() if not is_deferred(m))))
"""


def run_lcm(
    args: list[str], home: Path, *, load_all: bool = False, columns: int = 80
) -> tuple[str, list[str]]:
    """``lcm ARGS`` in a fresh interpreter (``home`` as HOME and LCM_HOME): what it
    printed, and the modules it loaded. ``load_all``: every command module
    imported first, as before lazy loading."""
    done = subprocess.run(
        [sys.executable, "-c", _MODULES_AFTER, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={
            "COLUMNS": str(columns),
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
            "LCM_HOME": str(home / "lcm"),
        }
        | ({"LOAD_ALL": "1"} if load_all else {}),
    )
    output, _, modules = done.stdout.rstrip("\n").rpartition("\n")
    return output, json.loads(modules)


def test_command_table_matches_the_commands() -> None:
    load_all_commands()
    assert isinstance(cli, click.Group)
    actual = {
        name: (
            command.callback.__module__.rsplit(".", 1)[-1] if command.callback else "",
            command.get_short_help_str(10**6),
        )
        for name, command in cli.commands.items()
    }
    missing = {name: entry for name, entry in actual.items() if COMMANDS.get(name) != entry}
    assert not missing, (
        "lossless.cli.app.COMMANDS is out of date; the entries it needs: "
        + ", ".join(f"{name!r}: {entry!r}" for name, entry in sorted(missing.items()))
    )
    assert sorted(COMMANDS) == sorted(actual), "COMMANDS names a command that no module defines"


def test_help_lists_every_command_without_loading_them(tmp_path: Path) -> None:
    output, modules = run_lcm(["--help"], tmp_path)
    loaded = [name for name in modules if name.startswith("lossless.cli.")]
    # (fast_path reads the arguments first; state is the commands' shared state)
    assert loaded == ["lossless.cli.app", "lossless.cli.fast_path", "lossless.cli.state"], loaded
    # The listing equals click's own from the fully loaded group.
    expected, modules = run_lcm(["--help"], tmp_path, load_all=True)
    assert "lossless.cli.map" in modules
    assert output == expected
    for name in COMMANDS:
        assert f"\n  {name} " in output


def test_a_command_loads_only_its_own_module(tmp_path: Path) -> None:
    output, modules = run_lcm(["grep", "anything", "--json"], tmp_path)
    assert json.loads(output)["hits"] == []
    commands = sorted(name for name in modules if name.startswith("lossless.cli."))
    # A usual grep runs without click: neither the group nor any command
    # module (cli.home, cli.output, cli.state and cli.table are shared helpers).
    assert commands == [
        "lossless.cli.fast_path",
        "lossless.cli.grep_command",
        "lossless.cli.home",
        "lossless.cli.output",
        "lossless.cli.state",
        "lossless.cli.table",
    ]
    assert not loaded("click", modules)
    # Any other command loads the group and only its own module.
    _, modules = run_lcm(["conversations", "--json"], tmp_path)
    commands = sorted(name for name in modules if name.startswith("lossless.cli."))
    assert "lossless.cli.history" in commands and loaded("click", modules)
    # click's commands run with inspect and ipaddress executed (deferred_modules.load).
    assert loaded("inspect", modules) and loaded("ast", modules) and loaded("ipaddress", modules)
    assert not {"lossless.cli.compaction", "lossless.cli.map", "lossless.cli.memory"} & set(
        commands
    )
    heavy_modules = ("lossless.summarize", "lossless.engine.compaction", "lossless.mcp_server")
    # A plain literal runs on `re`: the `regex` package is not imported either.
    for heavy in (*heavy_modules, "rich", "regex"):
        assert not loaded(heavy, modules), heavy


def loaded(package: str, modules: list[str]) -> bool:
    return any(name == package or name.startswith(package + ".") for name in modules)


def test_read_commands_import_only_what_they_use(tmp_path: Path) -> None:
    from lossless.config import load_config
    from lossless.engine.engine import Engine

    with Engine.open(config=load_config(tmp_path / "lcm", env={})) as engine:
        engine.conversation("s-1", project=str(tmp_path)).ingest(
            [{"role": "user", "content": "the billing service listens on port 8443"}]
        )
    # A table is laid out without rich; a literal is matched without regex.
    output, modules = run_lcm(["grep", "billing"], tmp_path)
    assert "port 8443" in output and "-----" in output
    assert not loaded("rich", modules) and not loaded("regex", modules)
    # Nor describe's and expand's records, nor the store's repositories grep
    # does not use (memories, map jobs, vectors, leases, import bookkeeping).
    for unused in (
        "lossless.engine.retrieval",
        "lossless.engine.expansion",
        "lossless.store.map_jobs",
        "lossless.store.sqlite.memory",
        "lossless.store.sqlite.map_jobs",
        "lossless.store.sqlite.vectors",
        "lossless.store.sqlite.leases",
        "lossless.store.sqlite.import_state",
        "lossless.embeddings",
        # expand_query's records and prompts (the engine only needs its defaults)
        "lossless.engine.expand_query",
    ):
        assert not loaded(unused, modules), unused
    # Nor inspect's code (dataclasses imports it), nor ipaddress's (urllib.parse
    # does): lossless/deferred_modules.py keeps them unexecuted; nor hashlib's
    # OpenSSL binding (a read hashes nothing but the migrations' text).
    for unused in ("inspect", "ast", "dis", "tokenize", "ipaddress", "hashlib", "_hashlib"):
        assert not loaded(unused, modules), unused
    # A pattern that can backtrack runs under the regex package's deadline.
    _, modules = run_lcm(["grep", "bil+ing", "--json"], tmp_path)
    assert loaded("regex", modules)
    assert not loaded("inspect", modules) and not loaded("hashlib", modules)
    # status reads counters: no summarizer, injection scan or secret detector is loaded.
    output, modules = run_lcm(["status"], tmp_path)
    assert "messages:      1" in output
    for heavy in ("lossless.summarize.extractive", "lossless.injection", "lossless.redact", "rich"):
        assert not loaded(heavy, modules), heavy
    # nor click (cli/fast_path.py), nor any command module
    assert not loaded("click", modules) and not loaded("lossless.cli.history", modules)
    for unused in ("inspect", "ast", "ipaddress", "hashlib", "_hashlib"):
        assert not loaded(unused, modules), unused
    _, modules = run_lcm(["status", "--sizes", "--json"], tmp_path)
    assert not loaded("inspect", modules) and not loaded("hashlib", modules)
    _, modules = run_lcm(["describe", "1"], tmp_path, columns=300)
    assert not loaded("rich", modules) and not loaded("lossless.summarize", modules)
    assert not loaded("click", modules) and not loaded("lossless.cli.history", modules)
    for unused in ("inspect", "ast", "ipaddress", "hashlib", "_hashlib"):
        assert not loaded(unused, modules), unused
    # Its lines fit the terminal: nothing to wrap, so no textwrap either.
    assert not loaded("textwrap", modules)


def test_version_without_click(tmp_path: Path) -> None:
    output, modules = run_lcm(["--version"], tmp_path)
    assert output == f"lcm, version {__version__}\n"
    assert "click" not in modules and "importlib.metadata" not in modules
    assert "dataclasses" not in modules and "inspect" not in modules
    # click's own option (after other arguments) prints the same.
    assert CliRunner().invoke(cli, ["--version"]).output == output


_COLLECTIONS_DURING = """
import gc, json, sys
import lossless.cli as cli_module
before = gc.get_threshold()
during_startup = []
gc.callbacks.append(
    lambda phase, info: phase == "start"
    and during_startup.append(cli_module._gc_thresholds is not None)
)
try:
    cli_module.main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout.flush()
print("\\n" + json.dumps({
    "startup": during_startup.count(True),
    "after": during_startup.count(False),
    "thresholds": [before, gc.get_threshold()],
    "frozen": gc.get_freeze_count(),
}))
"""


def test_start_up_runs_without_the_cyclic_collector(tmp_path: Path) -> None:
    """The collector never runs while a command starts (its modules, the engine's),
    and is back as it was for the command's own work, start-up's objects frozen."""
    for args in (["status"], ["grep", "anything"], ["config", "show"]):
        done = subprocess.run(
            [sys.executable, "-c", _COLLECTIONS_DURING, *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LCM_HOME": str(tmp_path / "lcm")},
        )
        report = json.loads(done.stdout.rstrip("\n").rpartition("\n")[2])
        assert report["startup"] == 0, (args, report)
        before, after = report["thresholds"]
        assert after == before, (args, report)
        # Tens of thousands of objects: modules, classes, functions.
        assert report["frozen"] > 10_000, (args, report)
