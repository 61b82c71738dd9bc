"""`lcm export` and `lcm import --from-export` through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from lossless.cli import cli

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample-session.jsonl"


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_export_then_import_into_another_home(tmp_path: Path) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    assert run("--home", str(source), "import", "--complete", "-q", str(SAMPLE))[0] == 0
    code, _, _ = run("--home", str(source), "remember", "Ship on Fridays only", "--project", "/p")
    assert code == 0

    code, stdout_export, err = run("--home", str(source), "export")
    assert code == 0 and "exported" in err
    lines = [json.loads(line) for line in stdout_export.splitlines()]
    assert lines[0] == {"format": "lossless-export", "version": 1}
    assert lines[-1]["type"] == "end" and lines[-1]["counts"]["memory"] == 1

    file = tmp_path / "backup.jsonl"
    assert run("--home", str(source), "export", "-o", str(file), "-q")[0] == 0
    assert file.read_text("utf-8") == stdout_export

    code, out, _ = run("--home", str(target), "import", "--from-export", str(file), "--json")
    assert code == 0, out
    report = json.loads(out)
    added = report["added"]
    assert added["message"] == lines[-1]["counts"]["message"] and added["memory"] == 1
    # A small import builds its substring index before returning.
    assert (report["substring_index_backlog"], report["worker_pid"]) == (0, None)
    code, again, _ = run("--home", str(target), "import", "--from-export", "-", stdin=stdout_export)
    assert code == 0 and "already stored" in again
    assert run("--home", str(target), "export")[1] == stdout_export

    only = run("--home", str(source), "export", "--project", "/p")[1]
    assert [json.loads(line)["type"] for line in only.splitlines()[1:]] == ["memory", "end"]


def test_import_refuses_bad_streams_with_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "lossless-export", "version": 99}\n', "utf-8")
    code, _, err = run("import", "--from-export", str(bad))
    assert code == 1 and f"{bad}:1: export version 99 is not supported" in err
    code, _, err = run("import", "--from-export", str(bad), str(SAMPLE))
    assert code == 1 and "--from-export takes no PATH" in err
    code, _, err = run("import", "--from-export", str(tmp_path / "missing.jsonl"))
    assert code == 1 and "no such export file" in err
