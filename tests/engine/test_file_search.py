"""Content moved into large files stays findable: grep (regex, full text), search, describe.

A Claude Code transcript whose tool output and pasted file block are far above
``large_file_threshold`` is imported on both backends; a needle deep inside
each body is found by ``lcm grep`` in both modes and by ``lcm search``; each
hit names the file and the offset, and ``lcm describe file_… --offset N``
shows the needle there.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.pg_fixtures import own_pg_server  # noqa: F401  (fixture)
from tests.store.postgres_server import EmbeddedPostgres

from lossless.cli import cli
from lossless.config import load_config
from lossless.engine import search as recall_search
from lossless.engine.engine import Engine
from lossless.store.contract import Store

NEEDLE_OUTPUT = "quokkaflux_77a1"
NEEDLE_FILE = "zebrinvortex"


def filler(lines: int, tag: str) -> str:
    return "\n".join(f"{tag} line {i}: status nominal, value {i * 7 % 1000}" for i in range(lines))


def transcript(path: Path) -> Path:
    output = filler(6000, "log") + f"\nERROR {NEEDLE_OUTPUT} at worker 12\n" + filler(3000, "tail")
    pasted = (
        filler(4000, "doc")
        + f"\nThe {NEEDLE_FILE} module owns retries. 服务静默重启了。\n"
        + filler(10, "end")
    )
    records = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": "files-session",
            "cwd": "/work/proj",
            "timestamp": "2026-02-12T10:00:00.000Z",
            "message": {"role": "user", "content": f'<file path="notes.md">{pasted}</file>'},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "sessionId": "files-session",
            "cwd": "/work/proj",
            "timestamp": "2026-02-12T10:00:01.000Z",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {"command": "cat build.log"},
                    }
                ],
            },
        },
        {
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "sessionId": "files-session",
            "cwd": "/work/proj",
            "timestamp": "2026-02-12T10:00:02.000Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": output}],
            },
        },
        {
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "u2",
            "sessionId": "files-session",
            "cwd": "/work/proj",
            "timestamp": "2026-02-12T10:00:03.000Z",
            "message": {
                "id": "msg_2",
                "role": "assistant",
                "content": [{"type": "text", "text": "The build log is long."}],
            },
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def imported(tmp_path: Path, store: Store | None = None) -> Engine:
    config = load_config(tmp_path / "home", env={}, overrides={"large_file_threshold": 2000})
    eng = Engine.open(config=config, store=store)
    result = eng.import_file(transcript(tmp_path / "files-session.jsonl"), final=True)
    assert result.ok and result.messages_added == 4, result
    assert len(eng.store.files.list_all()) == 2
    return eng


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    store = None
    url = None
    server: EmbeddedPostgres | None = None
    if request.param == "postgresql":
        from lossless.store.postgres import PostgresStore

        server = request.getfixturevalue("own_pg_server")
        url = server.create_database()
        store = PostgresStore(url)
    eng = imported(tmp_path, store)
    try:
        yield eng
    finally:
        eng.close()
        if server is not None and url is not None:
            server.drop_database(url)


def check_hit_points_at(engine: Engine, file_id: str | None, offset: int | None, needle: str):  # type: ignore[no-untyped-def]
    assert file_id is not None and offset is not None
    found = engine.describe(file_id)
    content = getattr(found, "content", None)
    assert content is not None
    assert content[offset : offset + len(needle)].lower() == needle.lower()


@pytest.mark.parametrize("mode", ["regex", "full_text"])
@pytest.mark.parametrize("needle", [NEEDLE_OUTPUT, NEEDLE_FILE])
def test_grep_finds_a_needle_inside_a_large_file(engine: Engine, mode: str, needle: str) -> None:
    hits = engine.grep(needle, mode=mode)  # type: ignore[arg-type]
    assert len(hits) == 1, hits
    hit = hits[0]
    assert hit.kind == "message" and hit.file_id and hit.file_id in hit.snippet
    assert needle in hit.snippet
    check_hit_points_at(engine, hit.file_id, hit.file_offset, needle)
    # The message the hit names holds the file's reference.
    message = engine.store.messages.get(int(hit.id))
    assert message is not None and hit.file_id in message.content


def test_grep_scope_and_filters_apply_to_files(engine: Engine) -> None:
    assert not engine.grep(NEEDLE_OUTPUT, scope="summaries")
    assert not engine.grep(NEEDLE_OUTPUT, project="/elsewhere")
    assert engine.grep(NEEDLE_OUTPUT, project="/work/proj")
    assert not engine.grep(NEEDLE_OUTPUT, since="2030-01-01T00:00:00.000Z")


def test_search_finds_large_file_content(engine: Engine) -> None:
    hits = recall_search.search_all(
        engine.store, f"where is {NEEDLE_OUTPUT}", files_home=engine.config.home
    )
    assert hits and hits[0].file_id is not None
    check_hit_points_at(engine, hits[0].file_id, hits[0].file_offset, NEEDLE_OUTPUT)


def test_cli_grep_and_describe_offset_show_the_needle(tmp_path: Path) -> None:
    engine = imported(tmp_path)
    hit = engine.grep(NEEDLE_FILE)[0]
    engine.close()
    assert hit.file_id is not None and hit.file_offset is not None
    runner = CliRunner()
    home = str(tmp_path / "home")
    out = runner.invoke(
        cli, ["--home", home, "grep", NEEDLE_FILE, "--mode", "full_text"], catch_exceptions=False
    )
    assert out.exit_code == 0 and hit.file_id in out.output
    out = runner.invoke(
        cli,
        [
            "--home",
            home,
            "describe",
            hit.file_id,
            "--offset",
            str(hit.file_offset),
            "--chars",
            "60",
        ],
        catch_exceptions=False,
    )
    assert out.exit_code == 0, out.output
    body = out.output.split("[characters ", 1)[1]
    assert body.splitlines()[1].startswith(f"{NEEDLE_FILE} module owns retries")
    assert "next: lcm describe" in body
    out = runner.invoke(cli, ["--home", home, "describe", hit.file_id, "--offset", "999999999"])
    assert out.exit_code != 0 and "past the end" in out.output


def test_a_backtracking_pattern_over_a_large_file_stops_at_the_time_budget(engine: Engine) -> None:
    hits = engine.grep(r"(?s)(.*a){4}Q", time_budget_s=0.5)
    assert not hits.complete


def test_cjk_and_word_prefixes_inside_a_large_file(engine: Engine) -> None:
    for query in ("静默", "zebrinvort"):
        hits = engine.grep(query, mode="full_text")
        assert hits and hits[0].file_id, query
        check_hit_points_at(engine, hits[0].file_id, hits[0].file_offset, query)
