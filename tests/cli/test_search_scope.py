"""`lcm search` and `lcm grep` search the same scope by default (everything) and say what they searched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from lossless.cli import cli


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def two_projects(tmp_path: Path, lcm_home: Path) -> dict[str, str]:
    sessions = {}
    for project, text in (
        ("/src/alpha", "the parsers crashed"),
        ("/src/beta", "飞书 parse failed"),
    ):
        path = tmp_path / f"{project.rsplit('/', 1)[1]}.jsonl"
        path.write_text(json.dumps({"role": "user", "content": text}) + "\n", encoding="utf-8")
        code, _, err = run("import", "--kind", "generic", "--project", project, "-q", str(path))
        assert code == 0, err
    for c in json.loads(run("conversations", "--json")[1]):
        sessions[c["project"]] = str(c["id"])
    return sessions


def _ids(out: str) -> set[str]:
    return {h["conversation_id"] for h in json.loads(out)["hits"]}


def test_both_search_every_project_by_default(
    two_projects: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a folder that is no project: the default is not the cwd
    everywhere = {int(i) for i in two_projects.values()}
    code, out, _ = run("search", "parse", "--json")
    assert code == 0 and _ids(out) == everywhere
    assert json.loads(out)["scope"]["searched"] == "all projects"
    code, out, _ = run("grep", "parse", "--mode", "full_text", "--json")
    assert code == 0 and _ids(out) == everywhere
    assert json.loads(out)["scope"]["searched"] == "all projects"
    # --all-projects is still accepted: it is the default.
    code, out, _ = run("search", "parse", "--all-projects", "--json")
    assert code == 0 and _ids(out) == everywhere


@pytest.mark.parametrize("command", [["search"], ["grep", "--mode", "full_text"]])
def test_project_and_conversation_narrow_both(
    two_projects: dict[str, str], command: list[str]
) -> None:
    alpha = int(two_projects["/src/alpha"])
    code, out, _ = run(command[0], "parse", *command[1:], "--project", "/src/alpha", "--json")
    assert code == 0 and _ids(out) == {alpha}
    assert json.loads(out)["scope"]["searched"] == "project /src/alpha"
    beta = two_projects["/src/beta"]
    code, out, _ = run(command[0], "parse", *command[1:], "--conversation", beta, "--json")
    assert code == 0 and _ids(out) == {int(beta)}
    assert json.loads(out)["scope"] == {
        "searched": f"conversation {beta}",
        "project": None,
        "conversation_id": int(beta),
        "session_id": None,
    }


@pytest.mark.parametrize("command", [["search"], ["grep", "--mode", "full_text"]])
def test_the_text_output_says_what_was_searched(
    two_projects: dict[str, str], command: list[str]
) -> None:
    code, out, err = run(command[0], "飞书", *command[1:])
    assert code == 0 and "searched all projects" in err and "飞书" in out
    code, out, err = run(command[0], "飞书", *command[1:], "--project", "/src/alpha")
    assert "searched project /src/alpha" in err
    assert "failed" not in out  # beta's message is not shown


def test_search_refuses_contradicting_scopes(two_projects: dict[str, str]) -> None:
    code, out, err = run("search", "parse", "--all-projects", "--project", "/src/alpha")
    assert code == 1 and "contradict" in err and out == ""
