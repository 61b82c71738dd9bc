"""`lcm compact`, `lcm context` and `lcm dag` against a real temporary LCM_HOME."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.engine.compaction_helpers import (
    Clock,
    agent_turn,
    check_anthropic,
    check_openai,
    expand_items,
    ingest,
    new_conversation,
)

import lossless.cli.compaction  # noqa: F401  (registers the commands on `cli`)
from lossless.cli import cli
from lossless.config import load_config
from lossless.store.sqlite.store import SQLiteStore

SETTINGS = {
    "LCM_FRESH_TAIL_COUNT": "4",
    "LCM_LEAF_CHUNK_TOKENS": "400",
    "LCM_LEAF_TARGET_TOKENS": "60",
    "LCM_LEAF_MIN_FANOUT": "3",
    "LCM_CONDENSED_MIN_FANOUT": "2",
}


@pytest.fixture
def home(lcm_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in SETTINGS.items():
        monkeypatch.setenv(name, value)
    store = SQLiteStore(load_config(lcm_home, env={}).db_path)
    clock = Clock()
    for session in ("sess-alpha", "sess-beta"):
        cid = new_conversation(store, session)
        for turn in range(10):
            ingest(store, cid, agent_turn(clock, turn, 2))
    store.close()
    return lcm_home


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False, env=dict(os.environ))
    return result.exit_code, result.stdout, result.stderr


def stored(home: Path) -> SQLiteStore:
    return SQLiteStore(load_config(home, env={}).db_path)


def test_help_teaches(home: Path) -> None:
    for command in ("compact", "context", "dag"):
        code, out, _ = run(command, "--help")
        assert code == 0 and "Usage:" in out and "Examples:" in out
    _, out, _ = run("compact", "--help")
    assert "protected tail" in out and "--until" in out and "--dry-run" in out


def test_dry_run_changes_nothing(home: Path) -> None:
    code, out, _ = run("compact", "sess-alpha", "--dry-run", "--json")
    assert code == 0
    plan = json.loads(out)["conversations"][0]
    assert plan["session_id"] == "sess-alpha" and plan["leaf_chunks"] >= 2
    store = stored(home)
    assert store.summaries.list(plan["conversation_id"]) == []
    code, out, _ = run("compact", "--all", "--dry-run")
    assert code == 0 and "sess-beta" in out and "2 of 2 conversation(s)" in out


def test_compact_one_then_all(home: Path) -> None:
    code, out, err = run("compact", "sess-alpha")
    assert code == 0, err
    assert "Compacting" in err  # the progress bar goes to stderr
    assert "sess-alpha" in out and "summaries created" in out and "sess-beta" not in out
    store = stored(home)
    alpha = store.conversations.find_by_session("sess-alpha")
    beta = store.conversations.find_by_session("sess-beta")
    assert alpha is not None and beta is not None
    assert store.summaries.list(alpha.id) and not store.summaries.list(beta.id)

    code, out, _ = run("compact", "--all", "--json")
    assert code == 0
    results = {r["session_id"]: r for r in json.loads(out)["conversations"]}
    assert results["sess-alpha"]["summaries_created"] == []
    assert results["sess-alpha"]["noop"]
    assert results["sess-beta"]["summaries_created"]
    assert results["sess-beta"]["tokens_after"] < results["sess-beta"]["tokens_before"]
    assert expand_items(store, beta.id) == [m.id for m in store.messages.list(beta.id)]


def test_compact_until(home: Path) -> None:
    code, out, err = run("compact", "sess-beta", "--until", "1", "--json", "-q")
    assert code == 0
    result = json.loads(out)["conversations"][0]
    assert result["target"] == 1 and result["reached_target"] is False
    assert "protected tail" in result["noop"]
    code, out, err = run("compact", "sess-alpha", "--until", "1")
    assert code == 0 and "still above 1 tokens" in err


def test_context_prints_one_valid_document_per_format(home: Path) -> None:
    run("compact", "--all", "-q")
    code, out, _ = run("context", "sess-alpha", "--budget", "1500", "--json")
    assert code == 0
    doc = json.loads(out)
    check_anthropic(doc["request"])
    assert doc["format"] == "anthropic" and doc["breakdown"]["budget"] == 1500
    assert doc["breakdown"]["total"] <= 1500 or doc["breakdown"]["over_budget"]
    assert any(i.startswith("sum_") for i in doc["included"])

    code, out, _ = run(
        "context", "sess-alpha", "--format", "openai", "--json", "--system", "Be brief."
    )
    assert code == 0
    doc = json.loads(out)
    check_openai(doc["request"]["messages"])
    assert doc["request"]["messages"][0] == {"role": "system", "content": "Be brief."}

    code, out, _ = run("context", "sess-alpha", "--budget", "1500")
    assert code == 0 and "── user ──" in out and "<summary id=" in out
    assert "of 1,500 tokens" in out


def test_context_keeps_the_budget_and_says_when_the_tail_alone_exceeds_it(home: Path) -> None:
    run("compact", "--all", "-q")
    _, out, _ = run("context", "sess-alpha", "--json")
    tail = json.loads(out)["breakdown"]["fresh_tail"]
    for budget in range(tail + 60, tail + 2000, 150):
        code, out, _ = run("context", "sess-alpha", "--budget", str(budget), "--json")
        b = json.loads(out)["breakdown"]
        assert code == 0 and b["total"] <= budget and not b["tail_over_budget"]
        # The newest prompt opened a turn longer than the tail: repeated ahead of it.
        assert b["prompt_shown"] in ("repeated", "clipped") and b["prompt_message_id"]
    code, out, err = run("context", "sess-alpha", "--budget", "20")
    assert code == 0
    assert "the fresh tail alone" in err and "over the 20-token budget" in err
    code, out, err = run("context", "sess-alpha", "--budget", "4000")
    assert "the fresh tail alone" not in err
    assert "is repeated ahead of the fresh tail" in out


def test_dag_readable_and_json(home: Path) -> None:
    run("compact", "sess-alpha", "-q")
    code, out, _ = run("dag", "sess-alpha", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["session_id"] == "sess-alpha" and doc["roots"]
    store = stored(home)
    conv = store.conversations.find_by_session("sess-alpha")
    assert conv is not None
    in_context = [i.summary_id for i in store.context.list(conv.id) if i.summary_id]
    assert [r["id"] for r in doc["roots"]] == in_context

    def leaves(node: dict[str, object]) -> int:
        children = node["children"]
        assert isinstance(children, list)
        return int(node["message_count"]) if not children else sum(leaves(c) for c in children)  # type: ignore[call-overload]

    covered = sum(leaves(r) for r in doc["roots"])
    assert covered + doc["raw_messages_in_context"] == doc["message_count"]

    code, out, _ = run("dag", "sess-alpha")
    assert code == 0
    assert all(sid in out for sid in in_context)
    assert "leaf d0" in out and "messages" in out


def test_errors_go_to_stderr_with_nonzero_exit(home: Path) -> None:
    for args in (("context", "no-such-session", "--json"), ("dag", "nope"), ("compact", "nope")):
        code, out, err = run(*args)
        assert code != 0 and out == "" and "no conversation" in err
    code, out, err = run("compact")
    assert code == 2 and "CONV" in err
    code, out, err = run("compact", "sess-alpha", "--all")
    assert code == 2 and "not both" in err


def test_compact_of_a_leased_conversation_is_not_a_success(home: Path) -> None:
    store = stored(home)
    alpha = store.conversations.find_by_session("sess-alpha")
    assert alpha is not None
    held = store.leases.acquire(alpha.id, "another-host:4242:abcd", 60)
    assert held is not None
    try:
        code, out, err = run("compact", "sess-alpha", "--wait", "0", "--json")
        assert code == 3, (code, err)
        assert json.loads(out)["conversations"][0]["noop"].startswith("busy")
        # Who holds it, and since when.
        assert "process 4242 on another-host holds" in err and " since 20" in err
        assert store.summaries.list(alpha.id) == []
    finally:
        store.leases.release(held)
    code, _, err = run("compact", "sess-alpha", "--wait", "0")
    assert code == 0, err
    store.close()


def test_expand_pages_with_cursors_and_opens_around_a_message(home: Path) -> None:
    run("compact", "sess-alpha", "-q")
    store = stored(home)
    conv = store.conversations.find_by_session("sess-alpha")
    assert conv is not None
    top = next(i.summary_id for i in store.context.list(conv.id) if i.summary_id)
    covered = expand_summary_ids(store, top)
    store.close()
    target = covered[len(covered) * 2 // 3]
    code, out, err = run("expand", top, "--around", str(target), "--tokens", "120", "--json")
    assert code == 0
    page = json.loads(out)
    assert page["nodes"][0]["id"] == str(target) and page["before_cursor"]
    ids = [n["id"] for n in page["nodes"] if n["kind"] == "message" and not n["offset"]]
    cursor = page["cursor"]
    while cursor:
        code, out, _ = run("expand", top, "--cursor", cursor, "--tokens", "120", "--json")
        more = json.loads(out)
        ids += [n["id"] for n in more["nodes"] if n["kind"] == "message" and not n["offset"]]
        cursor = more["cursor"]
    assert ids == [str(m) for m in covered[covered.index(target) :]]
    # Readable output says how to continue.
    code, out, err = run("expand", top, "--depth", "all", "--tokens", "100")
    assert code == 0 and "--cursor" in err and "showing all" in out
    code, _, err = run("expand", top, "--depth", "zero")
    assert code != 0 and "not a number of levels" in err


def expand_summary_ids(store: SQLiteStore, summary_id: str) -> list[int]:
    children = store.summaries.source_summary_ids(summary_id)
    if children:
        return [m for c in children for m in expand_summary_ids(store, c)]
    return store.summaries.source_message_ids(summary_id)
