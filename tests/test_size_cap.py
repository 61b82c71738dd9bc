"""storage.size_cap_mb: warned about from 90% of the cap on, nothing refused."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from tests.test_hooks import (  # _stop_workers: the workers hooks start are stopped
    SPOTTER,
    _stop_workers,  # noqa: F401
    assert_quiet,
    claude_payload,
    fire,
    hooks_log,
)

from lossless.cli import cli
from lossless.config import load_config
from lossless.doctor import check_store_and_worker
from lossless.engine.engine import Engine
from lossless.size_cap import size_cap_warning, warn_once


def test_warning_starts_at_90_percent() -> None:
    assert size_cap_warning(10**9, 0) is None  # no cap
    assert size_cap_warning(899_999, 1) is None
    close = size_cap_warning(900_000, 1)
    assert close is not None and "90%" in close and "close to the cap" in close
    reached = size_cap_warning(2_000_000, 1)
    assert reached is not None and "the cap is reached" in reached and "lcm gc" in reached


def test_warned_once_per_threshold(tmp_path: Path) -> None:
    db, logs = tmp_path / "lcm.db", tmp_path / "logs"
    db.write_bytes(b"x" * 500_000)
    assert warn_once(db, logs, 1) is None
    db.write_bytes(b"x" * 950_000)
    assert warn_once(db, logs, 1) is not None
    assert warn_once(db, logs, 1) is None  # already said
    Path(f"{db}-wal").write_bytes(b"x" * 100_000)  # the log counts: over the cap now
    assert "the cap is reached" in (warn_once(db, logs, 1) or "")
    assert warn_once(db, logs, 1) is None
    Path(f"{db}-wal").unlink()
    db.write_bytes(b"x" * 100_000)  # after lcm gc
    assert warn_once(db, logs, 1) is None
    db.write_bytes(b"x" * 950_000)  # grown again: said again
    assert warn_once(db, logs, 1) is not None


def _configure(home: Path, cap_mb: int) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"[storage]\nsize_cap_mb = {cap_mb}\n")


def test_status_and_doctor_warn_near_the_cap(tmp_path: Path, lcm_home: Path) -> None:
    transcript = tmp_path / "big.jsonl"
    transcript.write_text(
        "".join(
            json.dumps({"role": "user", "content": f"message {i}: " + "lorem ipsum " * 500}) + "\n"
            for i in range(300)
        )
    )
    with Engine.open(lcm_home) as engine:
        engine.import_file(transcript, "generic", final=True)
        assert engine.store.info()["bytes_on_disk"] > 1_000_000
    _configure(lcm_home, 1)
    runner = CliRunner()
    shown = runner.invoke(cli, ["--home", str(lcm_home), "status"], catch_exceptions=False)
    assert "of a 1 MB cap" in shown.output and "warning:" in shown.output
    data = json.loads(runner.invoke(cli, ["--home", str(lcm_home), "status", "--json"]).output)
    assert data["size_cap"]["mb"] == 1 and "lcm gc" in data["size_cap"]["warning"]
    (check,) = [c for c in check_store_and_worker(load_config(lcm_home)) if c.name == "size cap"]
    assert check.status == "warn"
    _configure(lcm_home, 100_000)
    shown = runner.invoke(cli, ["--home", str(lcm_home), "status"], catch_exceptions=False)
    assert "warning:" not in shown.output
    (check,) = [c for c in check_store_and_worker(load_config(lcm_home)) if c.name == "size cap"]
    assert check.status == "ok"


def test_a_hook_logs_the_warning_once(shared_data: Path, tmp_path: Path, lcm_home: Path) -> None:
    source = shared_data / SPOTTER / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    live = tmp_path / "live" / source.name
    live.parent.mkdir()
    live.write_bytes(source.read_bytes())
    _configure(lcm_home, 1)
    for event in ("PostToolUse", "Stop"):
        assert_quiet(fire(event, claude_payload(event, live, "t"), client="claude-code"))
    log = hooks_log(lcm_home)
    assert log.count("size cap: the store takes") == 1, log
    assert " ok " in log.splitlines()[-1]
