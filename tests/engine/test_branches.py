"""Rewinds and branches: the context follows ``parentUuid`` to the branch the client is on.

Claude Code transcripts are trees (``parentUuid``). After a rewind the new
messages continue from an earlier record; the abandoned ones must stay stored
and searchable but leave the active context; ``lcm verify`` stays whole. The
shapes are the client's own: assistant responses split over several records
sharing ``message.id``, progress and ``turn_duration`` lines between messages
(the parent chain runs through them), parallel tool results pointing at the
call each answers. On both backends (SQLite file, real embedded PostgreSQL).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.pg_fixtures import own_pg_server  # noqa: F401  (fixture)
from tests.store.postgres_server import EmbeddedPostgres

from lossless.config import load_config
from lossless.engine.branches import abandoned_seqs
from lossless.engine.engine import Engine
from lossless.engine.verify import verify

SPOTTER = "claude-code/spotter"


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    config = load_config(tmp_path / "home", env={}, overrides={"fresh_tail_count": 64})
    if request.param == "sqlite":
        eng = Engine.open(config=config)
        yield eng
        eng.close()
        return
    from lossless.store.postgres import PostgresStore

    server: EmbeddedPostgres = request.getfixturevalue("own_pg_server")
    url = server.create_database()
    eng = Engine.open(config=config, store=PostgresStore(url))
    try:
        yield eng
    finally:
        eng.close()
        server.drop_database(url)


class Transcript:
    """Writes Claude Code records the way the client does, one chain of parents."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[dict[str, Any]] = []
        self.n = 0
        self.tip: str | None = None

    def _uuid(self) -> str:
        self.n += 1
        return f"00000000-0000-4000-8000-{self.n:012d}"

    def _add(self, record: dict[str, Any], parent: str | None) -> str:
        uuid = self._uuid()
        base = {
            "parentUuid": parent,
            "isSidechain": False,
            "sessionId": "branchy-session",
            "cwd": "/work/proj",
            "timestamp": f"2026-02-12T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z",
            "uuid": uuid,
        }
        self.lines.append({**base, **record})
        self.tip = uuid
        return uuid

    def prompt(self, text: str, parent: str | None = "tip") -> str:
        return self._add(
            {"type": "user", "message": {"role": "user", "content": text}},
            self.tip if parent == "tip" else parent,
        )

    def tool_turn(self, word: str) -> str:
        """Thinking + tool call (one response over two records), progress, result,
        answer, turn_duration: the chain passes through the non-message lines."""
        mid = f"msg_{self.n}"
        self._add(
            {
                "type": "assistant",
                "message": {
                    "id": mid,
                    "role": "assistant",
                    "content": [{"type": "thinking", "thinking": f"I should look for {word}"}],
                },
            },
            self.tip,
        )
        call = self._add(
            {
                "type": "assistant",
                "message": {
                    "id": mid,
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": f"toolu_{self.n}",
                            "name": "Bash",
                            "input": {"command": f"grep -r {word} ."},
                        }
                    ],
                },
            },
            self.tip,
        )
        tool_id = f"toolu_{self.n}"
        self._add({"type": "progress", "data": {"type": "bash_progress"}}, call)
        result = self._add(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": tool_id,
                            "content": f"found {word} in src/{word}.py",
                        }
                    ],
                },
            },
            call,
        )
        self.tip = result
        self._add(
            {
                "type": "assistant",
                "message": {
                    "id": f"msg_{self.n}",
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"The {word} is in src."}],
                },
            },
            self.tip,
        )
        return self._add({"type": "system", "subtype": "turn_duration", "durationMs": 5}, self.tip)

    def write(self, lines: list[dict[str, Any]] | None = None) -> Path:
        body = "".join(json.dumps(r) + "\n" for r in (self.lines if lines is None else lines))
        self.path.write_text(body, "utf-8")
        return self.path


def context_text(engine: Engine, cid: int) -> str:
    ids = [i.message_id for i in engine.store.context.list(cid) if i.message_id is not None]
    return "\n".join(m.content for m in engine.store.messages.get_many(ids))


def test_rewind_appended_to_the_transcript_leaves_the_old_branch_out(
    engine: Engine, tmp_path: Path
) -> None:
    t = Transcript(tmp_path / "branchy-session.jsonl")
    t.prompt("find the alpha module")
    kept = t.tool_turn("alpha")
    t.prompt("now rename beta everywhere")
    t.tool_turn("betaabandoned")
    first = engine.import_file(t.write(), final=True)
    assert first.rewinds == []
    # The user rewinds to just after the first turn and asks something else.
    t.prompt("instead, document gamma", parent=kept)
    t.tool_turn("gamma")
    second = engine.import_file(t.write(), final=True)
    cid = second.conversation_id
    assert cid is not None
    assert len(second.rewinds) == 1 and "abandoned branch" in second.rewinds[0]
    text = context_text(engine, cid)
    assert "alpha" in text and "gamma" in text
    assert "rename beta" not in text and "betaabandoned" not in text
    # Still stored and searchable.
    assert engine.grep("betaabandoned", mode="full_text")
    conversation = engine.store.conversations.get(cid)
    assert conversation is not None and abandoned_seqs(conversation.metadata)
    assert verify(engine.store).ok, verify(engine.store).problems
    assembled = engine.assemble(cid, 100_000)
    assert "rename beta" not in json.dumps(assembled.messages)
    # Compaction after the rewind keeps the invariant.
    engine.compact(cid)
    assert verify(engine.store).ok, verify(engine.store).problems


def test_truncated_transcript_continued_on_a_new_branch(engine: Engine, tmp_path: Path) -> None:
    t = Transcript(tmp_path / "branchy-session.jsonl")
    t.prompt("find the alpha module")
    kept = t.tool_turn("alpha")
    cut = len(t.lines)
    t.prompt("delete the omega tests")
    t.tool_turn("omegaabandoned")
    engine.import_file(t.write(), final=True)
    # The file is cut back and continued (a restored or rewound transcript).
    t.lines = t.lines[:cut]
    t.tip = kept
    t.prompt("write the gamma docs")
    t.tool_turn("gamma")
    again = engine.import_file(t.write(), final=True)
    assert again.rewinds, again
    cid = again.conversation_id
    assert cid is not None
    text = context_text(engine, cid)
    assert "omega" not in text and "gamma docs" in text and "alpha" in text
    assert engine.grep("omegaabandoned", mode="full_text")
    assert verify(engine.store).ok, verify(engine.store).problems


def test_one_import_of_a_file_with_a_fork_follows_the_newest_branch(
    engine: Engine, tmp_path: Path
) -> None:
    t = Transcript(tmp_path / "branchy-session.jsonl")
    t.prompt("first question")
    fork = t.tool_turn("alpha")
    t.prompt("abandoned question")
    t.tool_turn("zeta")
    t.prompt("second try", parent=fork)
    result = engine.import_file(t.write(), final=True)
    assert len(result.rewinds) == 1
    assert result.conversation_id is not None
    text = context_text(engine, result.conversation_id)
    assert "abandoned question" not in text and "second try" in text
    assert verify(engine.store).ok


def test_parallel_tool_results_in_any_order_are_not_a_rewind(
    engine: Engine, tmp_path: Path
) -> None:
    t = Transcript(tmp_path / "branchy-session.jsonl")
    t.prompt("run both checks")
    mid = "msg_parallel"
    first = t._add(
        {
            "type": "assistant",
            "message": {
                "id": mid,
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_a", "name": "Bash", "input": {"command": "a"}}
                ],
            },
        },
        t.tip,
    )
    second = t._add(
        {
            "type": "assistant",
            "message": {
                "id": mid,
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"command": "b"}}
                ],
            },
        },
        first,
    )
    result_a = t._add(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "a ok"}],
            },
        },
        first,
    )
    t._add(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_b", "content": "b ok"}],
            },
        },
        second,
    )
    # The reply follows the *first* result, not the line just before it.
    t._add(
        {
            "type": "assistant",
            "message": {
                "id": "msg_reply",
                "role": "assistant",
                "content": [{"type": "text", "text": "both fine"}],
            },
        },
        result_a,
    )
    result = engine.import_file(t.write(), final=True)
    assert result.rewinds == []
    assert result.conversation_id is not None
    assert "b ok" in context_text(engine, result.conversation_id)


@pytest.mark.parametrize(
    "relative",
    [
        f"{SPOTTER}/short.jsonl",
        f"{SPOTTER}/tool_heavy.jsonl",
        f"{SPOTTER}/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
        f"{SPOTTER}/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
        f"{SPOTTER}/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
        f"{SPOTTER}/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl",
    ],
)
def test_real_transcripts_have_no_false_rewinds(
    engine: Engine, shared_data: Path, relative: str
) -> None:
    result = engine.import_file(shared_data / relative, final=True)
    assert result.ok and result.conversation_id is not None
    assert result.rewinds == []
    stored = engine.store.messages.count(result.conversation_id)
    assert len(engine.store.context.list(result.conversation_id)) == stored


class Rollout:
    """Writes Codex rollout lines: user turns (prompt + its user_message event),
    answers, and ``thread_rolled_back`` events as Codex records a backtrack."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.n = 0
        self.lines: list[dict[str, Any]] = [
            self._line(
                "session_meta",
                {
                    "id": "019e0000-0000-7000-8000-00000000beef",
                    "timestamp": "2026-05-11T08:00:00.000Z",
                    "cwd": "/work/proj",
                    "originator": "codex_exec",
                },
            )
        ]

    def _line(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        return {
            "timestamp": f"2026-05-11T08:{self.n // 60:02d}:{self.n % 60:02d}.000Z",
            "type": kind,
            "payload": payload,
        }

    def turn(self, prompt: str, answer: str) -> None:
        self.lines += [
            self._line("turn_context", {"turn_id": f"turn-{self.n}", "cwd": "/work/proj"}),
            self._line(
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": prompt}],
                },
            ),
            self._line("event_msg", {"type": "user_message", "message": prompt, "images": []}),
            self._line(
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": answer}],
                },
            ),
            self._line("event_msg", {"type": "task_complete"}),
        ]

    def roll_back(self, turns: int) -> None:
        self.lines.append(
            self._line("event_msg", {"type": "thread_rolled_back", "num_turns": turns})
        )

    def write(self) -> Path:
        self.path.write_text("".join(json.dumps(r) + "\n" for r in self.lines), "utf-8")
        return self.path


def test_codex_rollback_takes_the_discarded_turns_out(engine: Engine, tmp_path: Path) -> None:
    r = Rollout(tmp_path / "rollout-2026-05-11T08-00-00-019e0000-0000-7000-8000-00000000beef.jsonl")
    r.turn("first question alpha", "answer alpha")
    r.turn("second question betaabandoned", "answer beta")
    r.turn("third question gammaabandoned", "answer gamma")
    engine.import_file(r.write(), final=True)
    r.roll_back(2)
    r.turn("replacement question delta", "answer delta")
    result = engine.import_file(r.write(), final=True)
    assert result.conversation_id is not None and len(result.rewinds) == 1, result
    cid = result.conversation_id
    text = context_text(engine, cid)
    assert "alpha" in text and "delta" in text
    assert "betaabandoned" not in text and "gammaabandoned" not in text
    assert "answer beta" not in text
    assert engine.grep("gammaabandoned", mode="full_text")
    assert verify(engine.store).ok, verify(engine.store).problems
    # A second rollback of one turn discards the replacement, not a turn
    # already rolled back.
    r.roll_back(1)
    r.turn("fourth question epsilon", "answer epsilon")
    again = engine.import_file(r.write(), final=True)
    assert len(again.rewinds) == 1, again
    text = context_text(engine, cid)
    assert "delta" not in text and "alpha" in text and "epsilon" in text
    assert verify(engine.store).ok, verify(engine.store).problems


def test_codex_rollback_in_the_same_import(engine: Engine, tmp_path: Path) -> None:
    r = Rollout(tmp_path / "rollout-2026-05-11T08-00-00-019e0000-0000-7000-8000-00000000beef.jsonl")
    r.turn("keep this question", "kept answer")
    r.turn("drop this question", "dropped answer")
    r.roll_back(1)
    result = engine.import_file(r.write(), final=True)
    assert result.conversation_id is not None and len(result.rewinds) == 1
    text = context_text(engine, result.conversation_id)
    assert "kept answer" in text and "dropped answer" not in text
    assert verify(engine.store).ok


@pytest.mark.parametrize(
    "name",
    [
        "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
        "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
    ],
)
def test_real_codex_rollouts_roll_back_their_last_turn(
    engine: Engine, shared_data: Path, tmp_path: Path, name: str
) -> None:
    """Each real rollout with a rollback of one turn appended: the last prompt and
    everything after it leave the context; the rest stays."""
    source = shared_data / "codex/codemie-code" / name
    copy = tmp_path / name
    body = source.read_text("utf-8")
    rollback = {
        "timestamp": "2026-05-11T23:59:59.000Z",
        "type": "event_msg",
        "payload": {"type": "thread_rolled_back", "num_turns": 1},
    }
    copy.write_text(body + json.dumps(rollback) + "\n", "utf-8")
    result = engine.import_file(copy, final=True)
    assert result.ok and result.conversation_id is not None
    assert len(result.rewinds) == 1, result
    cid = result.conversation_id
    messages = list(engine.store.messages.iter_all(cid))
    prompts = [m for m in messages if m.role == "user" and not m.content.startswith(("#", "<"))]
    in_context = {i.message_id for i in engine.store.context.list(cid)}
    last = prompts[-1]
    assert last.id not in in_context
    assert all(m.id not in in_context for m in messages if m.seq >= last.seq)
    assert all(m.id in in_context for m in messages if m.seq < last.seq)
    assert verify(engine.store).ok, verify(engine.store).problems


def test_a_forked_codex_thread_records_what_it_was_forked_from(
    engine: Engine, tmp_path: Path
) -> None:
    r = Rollout(tmp_path / "rollout-2026-05-11T08-00-00-019e0000-0000-7000-8000-00000000f0c4.jsonl")
    r.lines[0]["payload"]["id"] = "019e0000-0000-7000-8000-00000000f0c4"
    r.lines[0]["payload"]["forked_from_id"] = "019e0000-0000-7000-8000-00000000beef"
    # A fork's rollout repeats the parent's session_meta after its own: the first is its own.
    r.lines.append(
        r._line("session_meta", {"id": "019e0000-0000-7000-8000-00000000beef", "cwd": "/work/proj"})
    )
    r.turn("forked question", "forked answer")
    result = engine.import_file(r.write(), final=True)
    assert result.conversation_id is not None
    conversation = engine.store.conversations.get(result.conversation_id)
    assert conversation is not None
    assert conversation.session_id == "019e0000-0000-7000-8000-00000000f0c4"
    assert conversation.metadata["forked_from_id"] == "019e0000-0000-7000-8000-00000000beef"
