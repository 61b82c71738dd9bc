"""Hostile files and arguments through the real ``lcm`` CLI (subprocesses).

One bad line is a problem line for that line only; one bad file is reported
and the other files of the run still import; a bad argument is a clear error,
never a traceback; nothing blocks (a FIFO named *.jsonl).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def lcm(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lossless", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
    )


def _record(session: str, uuid: str, text: str, parent: str | None = None) -> str:
    return json.dumps(
        {
            "type": "user",
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": session,
            "cwd": "/w",
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": text},
        }
    )


def _session(folder: Path, name: str, lines: list[str]) -> Path:
    path = folder / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    folder = tmp_path / "transcripts"
    folder.mkdir()
    deep_list = "[" * 3000 + "]" * 3000
    deep_object = '{"a":' * 2500 + "1" + "}" * 2500
    big_int = '{"type":"user","n":' + "9" * 5000 + "}"
    valid_deep: object = "leaf"
    for _ in range(900):
        valid_deep = [valid_deep]
    deep_record = json.loads(_record("s-deep900", "d1", "deep but valid"))
    deep_record["extra"] = valid_deep
    _session(
        folder,
        "hostile.jsonl",
        [
            _record("s-hostile", "h1", "before the bad lines"),
            deep_list,
            deep_object,
            big_int,
            _record("s-hostile", "h2", "after the bad lines", "h1"),
            _record("s-hostile", "h3", "the last one", "h2"),
        ],
    )
    _session(folder, "deep900.jsonl", [json.dumps(deep_record), _record("s-deep900", "d2", "x")])
    _session(folder, "good.jsonl", [_record("s-good", "g1", "fine"), _record("s-good", "g2", "ok")])
    bom = folder / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + (_record("s-bom", "b1", "bom first") + "\n").encode())
    os.mkfifo(folder / "pipe.jsonl")
    os.symlink("loop-b.jsonl", folder / "loop-a.jsonl")
    os.symlink("loop-a.jsonl", folder / "loop-b.jsonl")
    return folder


def test_hostile_lines_and_files_do_not_stop_the_run(hostile: Path) -> None:
    run = lcm("import", str(hostile), "--complete", "--json", timeout=120)
    assert "Traceback" not in run.stderr, run.stderr
    report = json.loads(run.stdout)
    by_name = {Path(f["path"]).name: f for f in report["files"]}
    hostile_file = by_name["hostile.jsonl"]
    # Three bad lines, each reported; the three good ones stored.
    assert hostile_file["messages_added"] == 3, hostile_file
    problems = " ".join(hostile_file["problems"])
    assert "nested too deeply" in problems and "4300 digits" in problems
    assert by_name["deep900.jsonl"]["messages_added"] == 2
    assert by_name["good.jsonl"]["messages_added"] == 2
    # The BOM is not a problem line.
    assert by_name["bom.jsonl"]["messages_added"] == 1 and not by_name["bom.jsonl"]["problems"]
    assert "named pipe" in by_name["pipe.jsonl"]["error"]
    loops = [f for name, f in by_name.items() if name.startswith("loop")]
    assert loops and all("loop" in (f["error"] or "") for f in loops)
    verify = lcm("verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("describe", "99999999999999999999999"), "no message"),
        (("grep", "a{99999999999}"), "invalid regular expression"),
        (("grep", "x" * 5000), "at most 2,000"),
    ],
)
def test_bad_arguments_are_clear_errors(args: tuple[str, ...], expected: str) -> None:
    lcm("remember", "something to have a store", "--project", "/w")
    run = lcm(*args, timeout=30)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    assert expected in run.stderr, run.stderr


def test_an_empty_store_file_is_not_silently_a_new_store(lcm_home: Path) -> None:
    lcm_home.mkdir(parents=True)
    db = lcm_home / "lcm.db"
    db.write_bytes(b"")
    old = db.stat().st_mtime - 3600
    os.utime(db, (old, old))
    run = lcm("status")
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert "empty (0-byte) file" in run.stderr
    assert db.stat().st_size == 0  # left as it was, for the user to look at


def _hook(payload: dict[str, object], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lossless", "hook", "Stop", "--client", "claude-code"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.mark.parametrize(
    "where",
    ["/etc/passwd", "../" * 30 + "etc/passwd", "outside.jsonl", "link.jsonl"],
)
def test_a_hook_reads_only_transcripts_in_the_clients_folders(
    tmp_path: Path, lcm_home: Path, where: str
) -> None:
    claude = tmp_path / "claude-home" / "projects" / "p"
    claude.mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    secret_line = _record("s-x", "x1", "a line that must stay where it is")
    (outside / "outside.jsonl").write_text(secret_line + "\n")
    os.symlink(outside / "outside.jsonl", claude / "link.jsonl")
    env = {k: v for k, v in os.environ.items() if k != "LCM_TRANSCRIPT_DIRS"}
    cwd = outside if where == "outside.jsonl" else claude
    payload = {"session_id": "s-x", "transcript_path": where, "cwd": str(cwd)}
    run = _hook(payload, env)
    assert run.returncode == 0  # a hook never fails its client
    for path in lcm_home.rglob("*"):
        if path.is_file() and path.suffix != ".log":
            data = path.read_bytes()
            assert b"a line that must stay" not in data and b"root:" not in data, path
    log = (lcm_home / "logs" / "hooks.log").read_text()
    assert "not a transcript" in log or "outside the folders" in log, log


def test_a_hook_reads_a_transcript_in_the_claude_folder(tmp_path: Path, lcm_home: Path) -> None:
    claude = tmp_path / "claude-home" / "projects" / "p"
    claude.mkdir(parents=True)
    transcript = claude / "s-ok.jsonl"
    transcript.write_text(_record("s-ok", "o1", "inside") + "\n" + _record("s-ok", "o2", "x", "o1"))
    env = {k: v for k, v in os.environ.items() if k != "LCM_TRANSCRIPT_DIRS"}
    payload = {"session_id": "s-ok", "transcript_path": str(transcript), "cwd": str(claude)}
    assert _hook(payload, env).returncode == 0
    assert "inside" in lcm("grep", "inside").stdout


def test_a_secret_in_an_invalid_payload_never_reaches_the_log(lcm_home: Path) -> None:
    token = "ghp_" + "Zq8Wm3Lp7Xc2Vb6Nn4Hh1Jj5Kk9Ll0Pp3Rr7"
    run = subprocess.run(
        [sys.executable, "-m", "lossless", "hook", "Stop"],
        input='{"session_id": "s", "transcript_path": 5, "note": "' + token + '"',
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0
    # The log quotes the payload, with the token replaced.
    assert "[REDACTED:github_token]" in (lcm_home / "logs" / "hooks.log").read_text()
    for path in lcm_home.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path


def test_a_duplicate_uuid_with_other_content_is_reported(tmp_path: Path) -> None:
    first = _record("s-dup", "u1", "the original text")
    second = _record("s-dup", "u1", "something else under the same id")
    same = first  # an exact repeat (a resumed session copies records) is no problem
    path = _session(tmp_path, "dup.jsonl", [first, same, second, _record("s-dup", "u2", "x")])
    run = lcm("import", str(path), "--complete", "--json")
    report = json.loads(run.stdout)["files"][0]
    assert report["messages_added"] == 2
    assert len(report["problems"]) == 1
    assert "dup.jsonl:3" in report["problems"][0] and "different content" in report["problems"][0]
