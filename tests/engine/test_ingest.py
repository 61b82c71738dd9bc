"""Importing transcripts into a real SQLite store: counts, idempotency, increments, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lossless.engine.engine import Engine
from lossless.models import NewMessage
from lossless.sources import parser_for

SPOTTER = "claude-code/spotter"
CODEX = "codex/codemie-code"

# Ground truth from ../shared/data/README.md (independent of our parsers).
REAL_FILES: dict[str, tuple[str, int, int]] = {
    # relative path: (kind, lines, tool calls)
    f"{SPOTTER}/short.jsonl": ("claude-code", 15, 2),
    f"{SPOTTER}/tool_heavy.jsonl": ("claude-code", 39, 6),
    f"{SPOTTER}/4d5611e5-241a-462a-8d15-5122611a9569.jsonl": ("claude-code", 1512, 150),
    f"{SPOTTER}/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl": (
        "claude-code",
        144,
        33,
    ),
    f"{SPOTTER}/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl": ("claude-code", 1881, 197),
    f"{SPOTTER}/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": ("claude-code", 2385, 242),
    f"{CODEX}/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl": (
        "codex",
        386,
        105,
    ),
    f"{CODEX}/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl": (
        "codex",
        99,
        38,
    ),
}


@pytest.fixture
def engine(lcm_home: Path) -> Engine:
    eng = Engine.open(lcm_home)
    yield eng  # type: ignore[misc]
    eng.close()


def parsed_messages(path: Path) -> list[NewMessage]:
    from lossless.sources import detect_kind

    kind = detect_kind(path)
    assert kind is not None
    events, _ = parser_for(kind).parse(path)
    return [e for e in events if isinstance(e, NewMessage)]


@pytest.mark.parametrize("relative", sorted(REAL_FILES))
def test_real_transcript_imports_completely(
    engine: Engine, shared_data: Path, relative: str
) -> None:
    kind, lines, tool_calls = REAL_FILES[relative]
    path = shared_data / relative
    result = engine.import_file(path, final=True)
    assert result.error is None and result.problems == []
    assert result.kind == kind
    store = engine.store
    cid = result.conversation_id
    assert cid is not None
    messages = store.messages.list(cid)
    expected = parsed_messages(path)
    assert len(messages) == len(expected) == result.messages_added
    # Byte-exact round trip of every message's content, in order.
    for stored, original in zip(messages, expected, strict=True):
        assert stored.content.encode("utf-8") == original.content.encode("utf-8")
        assert stored.role == original.role
    parts = store.messages.parts([m.id for m in messages])
    all_parts = [p for ps in parts.values() for p in ps]
    tool_uses = [p for p in all_parts if p.kind == "tool_use"]
    tool_results = [p for p in all_parts if p.kind == "tool_result"]
    assert len(tool_uses) == tool_calls
    # Codex web_search_call items are tool calls with no output record (README).
    web_searches = sum(1 for p in tool_uses if p.tool_name == "web_search")
    assert len(tool_results) == tool_calls - web_searches
    assert {p.tool_call_id for p in tool_results} <= {p.tool_call_id for p in tool_uses}
    # Every line of the file is kept as a native record (nothing dropped).
    records = store.messages.native_records(cid)
    assert len(records) == lines
    raw_lines = path.read_bytes().decode("utf-8").splitlines()
    assert sorted(r.raw for r in records) == sorted(raw_lines)
    assert store.quarantine.count() == 0
    # The context starts as every message, in order.
    assert [i.message_id for i in store.context.list(cid)] == [m.id for m in messages]


def test_reimport_adds_nothing(engine: Engine, shared_data: Path) -> None:
    path = shared_data / SPOTTER / "tool_heavy.jsonl"
    first = engine.import_file(path, final=True)
    before = engine.store.stats()
    again = engine.import_file(path, final=True)
    assert again.messages_added == 0 and again.records_added == 0
    assert engine.store.stats() == before
    assert first.conversation_id == again.conversation_id


def test_reimport_of_rewritten_file_duplicates_nothing(
    engine: Engine, shared_data: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "session.jsonl"
    shutil.copy(shared_data / SPOTTER / "tool_heavy.jsonl", copy)
    engine.import_file(copy, final=True)
    before = engine.store.stats()
    # Rewrite the file (same records, different bytes early on): the cursor's
    # anchor no longer matches, so it is read again from the start.
    lines = copy.read_text("utf-8").splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if '"type":"user"' in line)
    lines[index] = json.dumps(json.loads(lines[index]), separators=(", ", ": ")) + "\n"
    copy.write_text("".join(lines), "utf-8")
    result = engine.import_file(copy, final=True)
    assert result.resumed_from == 0
    assert result.messages_added == 0
    assert engine.store.stats().messages == before.messages


def test_appended_transcript_adds_only_new_records(
    engine: Engine, shared_data: Path, tmp_path: Path, lcm_home: Path
) -> None:
    source = shared_data / SPOTTER / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    data = source.read_bytes()
    growing = tmp_path / "live" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    growing.parent.mkdir()
    # Cut points deliberately fall mid-line, as they do while Claude Code writes.
    cuts = [
        len(data) // 5,
        len(data) // 3 + 17,
        len(data) // 2 + 3,
        (4 * len(data)) // 5,
        len(data),
    ]
    written = 0
    for cut in cuts:
        with growing.open("ab") as fh:
            fh.write(data[written:cut])
        written = cut
        engine.import_file(growing, final=cut == len(data))
    live_conv = engine.store.conversations.find_by_session("4d5611e5-241a-462a-8d15-5122611a9569")
    assert live_conv is not None
    live = [(m.seq, m.role, m.content) for m in engine.store.messages.list(live_conv.id)]

    with Engine.open(lcm_home.parent / "bulk-home") as bulk:
        result = bulk.import_file(source, final=True)
        assert result.conversation_id is not None
        whole = [
            (m.seq, m.role, m.content) for m in bulk.store.messages.list(result.conversation_id)
        ]
        bulk_records = len(bulk.store.messages.native_records(result.conversation_id))
    assert live == whole
    assert len(engine.store.messages.native_records(live_conv.id)) == bulk_records
    assert engine.store.quarantine.count() == 0


def test_subagent_is_linked_to_parent(engine: Engine, shared_data: Path) -> None:
    parent = engine.import_file(
        shared_data / SPOTTER / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl", final=True
    )
    child = engine.import_file(
        shared_data
        / SPOTTER
        / "4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl",
        final=True,
    )
    assert child.conversation_id is not None
    conv = engine.store.conversations.get(child.conversation_id)
    assert conv is not None and conv.parent_id == parent.conversation_id


def _good(i: int, role: str = "user") -> str:
    return json.dumps({"role": role, "content": f"message number {i}"})


def test_bad_lines_are_quarantined_and_the_rest_imported(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    huge = json.dumps({"role": "assistant", "content": "y" * (10 * 1024 * 1024)})
    lines = [
        _good(0).encode(),
        b'{"role": "user", "content": "unterminated',  # malformed JSON
        b"\x89PNG\r\x1a\x00\x00binary garbage\xff\xfe",  # binary + NUL
        _good(1, "assistant").encode(),
        json.dumps({"role": "user", "content": 42}).encode(),  # wrong type
        json.dumps({"role": "user", "content": "nul \u0000 inside"}).encode(),  # escaped NUL
        huge.encode(),  # a valid 10 MB line
        b"{" + b"x" * (10 * 1024 * 1024) + b"\n",  # an invalid 10 MB line
        _good(2).encode(),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n" + b'{"role": "user", "conte')  # truncated tail
    result = engine.import_file(path, kind="generic", final=False)
    cid = result.conversation_id
    assert cid is not None
    contents = [m.content for m in engine.store.messages.list(cid)]
    assert "message number 0" in contents and "message number 2" in contents
    assert "message number 1" in contents
    assert any(len(c) == 10 * 1024 * 1024 for c in contents)
    assert not any("\x00" in c for c in contents)
    # Every problem names the file and its line.
    assert result.problems, "bad lines must be reported"
    for problem in result.problems:
        assert str(path) in problem
    reported_lines = {int(p.split(f"{path}:")[1].split(":")[0]) for p in result.problems}
    assert {2, 3, 6, 8} <= reported_lines
    kept = engine.store.quarantine.list(source_path=str(path))
    assert any(k.raw.startswith(b"\x89PNG") for k in kept)
    assert any(b"\\u0000" in k.raw for k in kept)
    # The truncated last line is not a problem: it is left for the next import.
    assert result.pending_tail and result.held_back_bytes > 0
    with path.open("ab") as fh:
        fh.write(b'nt": "finished later"}\n')
    again = engine.import_file(path, kind="generic", final=True)
    assert again.messages_added == 1
    assert engine.store.messages.last(cid).content == "finished later"  # type: ignore[union-attr]


def test_failed_import_changes_nothing_stored(engine: Engine, tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(_good(0) + "\n" + _good(1, "assistant") + "\n", "utf-8")
    engine.import_file(good, kind="generic", final=True)
    before = [(m.id, m.content) for m in engine.store.messages.list(1)]
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\x00\x01\x02 not json at all\n\xff\xfe\xfd\n")
    result = engine.import_file(garbage, kind="generic", final=True)
    assert result.messages_added == 0 and len(result.problems) == 2
    assert [(m.id, m.content) for m in engine.store.messages.list(1)] == before


def test_missing_file_is_reported_not_raised(engine: Engine, tmp_path: Path) -> None:
    result = engine.import_file(tmp_path / "nope.jsonl", kind="generic")
    assert result.error is not None and "nope.jsonl" in result.error


def test_engine_ingest_api(engine: Engine) -> None:
    chat = engine.conversation("api-session", project="demo")
    ids = chat.ingest(
        [
            {"role": "user", "content": "hello there"},
            {"role": "assistant", "content": [{"type": "text", "text": "hi!"}]},
        ]
    )
    assert len(ids) == 2
    hits = chat.grep("hello")
    assert [h.id for h in hits] == [str(ids[0])]
    from lossless.errors import InputError

    with pytest.raises(InputError):
        chat.ingest([{"content": "no role"}])
    with pytest.raises(InputError):
        chat.ingest([{"role": "user", "content": "bad \x00 nul"}])
    assert engine.store.messages.count(chat.id) == 2


def test_lone_surrogate_is_quarantined_not_crashing(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text(
        _good(0)
        + "\n"
        + '{"role": "user", "content": "half a pair \\ud800 here"}\n'
        + _good(1)
        + "\n",
        "utf-8",
    )
    result = engine.import_file(path, kind="generic", final=True)
    assert result.messages_added == 2
    assert len(result.problems) == 1 and "surrogate" in result.problems[0]
    assert f"{path}:2" in result.problems[0]
    assert engine.store.quarantine.count() == 1


def test_generic_files_are_keyed_by_more_than_their_name(engine: Engine, tmp_path: Path) -> None:
    """a/talk.json and b/talk.json are two conversations; the same file again is the same one."""
    paths = []
    for folder, words in (("a", ["alpha one", "alpha two"]), ("b", ["beta one", "beta two"])):
        path = tmp_path / folder / "talk.json"
        path.parent.mkdir()
        path.write_text(json.dumps([{"role": "user", "content": w} for w in words]))
        paths.append(path)
    first = [engine.import_file(p, "generic", final=True) for p in paths]
    assert first[0].conversation_id != first[1].conversation_id
    for result, prefix in zip(first, ("alpha", "beta"), strict=True):
        assert result.conversation_id is not None
        stored = engine.store.messages.list(result.conversation_id)
        assert [m.content.split()[0] for m in stored] == [prefix, prefix]
    # The same file again (also as JSONL, read afresh) lands in the same conversation.
    again = engine.import_file(paths[0], "generic", final=True)
    assert again.conversation_id == first[0].conversation_id and again.messages_added == 0
    lines = tmp_path / "a" / "chat.jsonl"
    lines.write_text('{"role": "user", "content": "x"}\n')
    one = engine.import_file(lines, "generic", final=True)
    # The cursor is not what keys it: a fresh store derives the same session.
    with Engine.open(tmp_path / "other-home") as other:
        assert other.import_file(lines, "generic", final=True).session_id == one.session_id


def test_a_line_edited_after_import_is_a_problem_line_with_its_number(
    engine: Engine, tmp_path: Path
) -> None:
    source = Path(__file__).resolve().parents[2] / "examples" / "sample-session.jsonl"
    path = tmp_path / "session.jsonl"
    shutil.copy(source, path)
    first = engine.import_file(path, final=True)
    assert first.messages_added > 0 and not first.problems
    lines = path.read_text("utf-8").splitlines(keepends=True)
    target = next(
        i
        for i, line in enumerate(lines)
        if i > len(lines) // 2 and json.loads(line).get("type") == "user" and '"content": "' in line
    )
    edited = lines[target].replace('"content": "', '"content": "EDITED ', 1)
    assert edited != lines[target]
    lines[target] = edited
    path.write_text("".join(lines), "utf-8")
    again = engine.import_file(path, final=True)
    assert again.messages_added == 0
    assert any(f"session.jsonl:{target + 1}: this line changed" in p for p in again.problems), (
        again.problems
    )
    # The stored history is untouched.
    assert first.conversation_id is not None
    stored = engine.store.messages.list(first.conversation_id)
    assert not any("EDITED" in m.content for m in stored)
    # An unchanged re-read reports nothing.
    shutil.copy(source, path)
    assert not engine.import_file(path, final=True).problems


@pytest.mark.parametrize(
    "text",
    [
        "plain ascii",
        "",
        "caf\u00e9 \u4e2d\u6587 clean",
        "ascii \x00 nul",
        "caf\u00e9 \x00 nul",
        "caf\u00e9 \ud800 lone",
        "\ud83d\ude00 two halves, unpaired in a str",
        "nul \x00 before \udfff a surrogate",
        "a surrogate \udc00 before a nul \x00",
    ],
)
def test_unstorable_text_found_as_the_regex_finds_it(text: str) -> None:
    """The fast path (NUL search, UTF-8 encode) decides only "storable"; what it
    refuses is named as the regex alone named it (the first of NUL or surrogate)."""
    from lossless.engine.ingest import _UNSTORABLE, _unstorable

    found = _UNSTORABLE.search(text)
    expected = (
        None
        if found is None
        else "U+0000 (NUL)"
        if found.group() == "\x00"
        else "a lone UTF-16 surrogate (invalid Unicode)"
    )
    assert _unstorable(text) == expected
