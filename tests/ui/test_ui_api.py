"""The UI's data is the engine's: the same context as `lcm context`, the same
hits as `lcm grep` / `lcm search`, the DAG paged as `lcm expand` walks it."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tests.ui.ui_server import UiServer, lcm


def get(server: UiServer, path: str) -> Any:
    with urllib.request.urlopen(server.url + path, timeout=60) as response:
        return json.loads(response.read())


def cli_json(home: Path, *args: str) -> Any:
    done = lcm(home, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def whole_context(server: UiServer, conversation_id: int, query: str) -> dict[str, Any]:
    """The context endpoint's answer with every page's messages joined."""
    first = get(server, f"api/conversations/{conversation_id}/context?{query}&limit=200")
    messages = list(first["messages"])
    while len(messages) < first["total_messages"]:
        more = get(
            server,
            f"api/conversations/{conversation_id}/context?{query}&limit=200&offset={len(messages)}",
        )
        assert more["messages"]
        messages.extend(more["messages"])
    return {**first, "messages": messages}


def _compacted(server: UiServer) -> dict[str, Any]:
    rows = get(server, "api/conversations?sort=messages&limit=200")["rows"]
    return next(r for r in rows if r["compaction"] == "compacted" and r["max_depth"] >= 1)


@pytest.mark.parametrize("budget", [None, 20000, 3000])
@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
def test_context_is_exactly_what_lcm_context_builds(
    ui_server: UiServer, real_store: Path, budget: int | None, fmt: str
) -> None:
    rows = get(ui_server, "api/conversations?sort=messages&limit=200")["rows"]
    # The largest, the deepest DAG, and a sub-agent that was never compacted.
    chosen = {rows[0]["id"], _compacted(ui_server)["id"]}
    chosen |= {c["id"] for r in rows for c in r["children"][:1]}
    for conversation_id in sorted(chosen):
        row = {"id": conversation_id}
        query = f"format={fmt}" + (f"&budget={budget}" if budget else "")
        page = whole_context(ui_server, row["id"], query)
        args = ["context", str(row["id"]), "--format", fmt] + (
            ["--budget", str(budget)] if budget else []
        )
        expected = cli_json(real_store, *args)
        assert page["messages"] == expected["request"]["messages"]
        assert page["breakdown"] == expected["breakdown"]
        assert page["system"] == expected["request"].get("system")
        # The bar's segments are the breakdown, split by kind, plus the free rest.
        tokens = sum(s["tokens"] for s in page["segments"] if s["kind"] != "free")
        assert tokens == expected["breakdown"]["total"]
        free = next(s for s in page["segments"] if s["kind"] == "free")["tokens"]
        assert free == max(0, page["budget"] - expected["breakdown"]["total"])
        summary_tokens = sum(s["tokens"] for s in page["segments"] if s["kind"] == "summary")
        assert summary_tokens == expected["breakdown"]["summaries"]


def test_context_messages_page_through_the_whole_assembly(ui_server: UiServer) -> None:
    row = _compacted(ui_server)
    whole = whole_context(ui_server, row["id"], "format=anthropic")
    pieces: list[Any] = []
    offset = 0
    while True:
        page = get(ui_server, f"api/conversations/{row['id']}/context?limit=7&offset={offset}")
        pieces.extend(page["messages"])
        offset += 7
        if offset >= page["total_messages"]:
            break
    assert pieces == whole["messages"]


def test_conversation_list_pages_sorts_and_nests_sub_agents(ui_server: UiServer) -> None:
    everything = get(ui_server, "api/conversations?limit=200")
    assert everything["total_with_subagents"] == 10  # 9 transcripts + the map job's results
    parents = [r for r in everything["rows"] if r["children"]]
    assert parents, "the spotter session's sub-agents are listed under it"
    for parent in parents:
        assert all(c["parent_id"] == parent["id"] for c in parent["children"])
    by_messages = get(ui_server, "api/conversations?sort=messages&order=desc&limit=200")["rows"]
    counts = [r["messages"] for r in by_messages]
    assert counts == sorted(counts, reverse=True)
    first = get(ui_server, "api/conversations?sort=created&order=asc&limit=2&offset=0")["rows"]
    second = get(ui_server, "api/conversations?sort=created&order=asc&limit=2&offset=2")["rows"]
    assert len(first) == len(second) == 2
    assert first[-1]["created_at"] <= second[0]["created_at"]
    codex = get(ui_server, "api/conversations?client=codex&limit=200")
    assert codex["total"] >= 1 and all(r["client"] == "codex" for r in codex["rows"])
    assert get(ui_server, "api/conversations?q=no-such-session-anywhere")["rows"] == []


def test_dag_children_and_source_messages_are_paged(ui_server: UiServer, real_store: Path) -> None:
    row = _compacted(ui_server)
    dag = get(ui_server, f"api/conversations/{row['id']}/dag")
    root = next(r for r in dag["roots"] if r["kind"] == "condensed")
    children = get(ui_server, f"api/summaries/{root['id']}/children?limit=3")
    expected_ids = cli_json(real_store, "describe", root["id"])["source_summary_ids"]
    assert children["total"] == len(expected_ids) == root["child_count"]
    assert [c["id"] for c in children["items"]] == expected_ids[:3]
    leaf = max(
        (get(ui_server, f"api/summaries/{i}") for i in expected_ids), key=lambda s: s["child_count"]
    )
    seen: list[int] = []
    offset = 0
    while offset < leaf["child_count"]:
        page = get(ui_server, f"api/summaries/{leaf['id']}/children?offset={offset}&limit=10")
        assert page["kind"] == "message"
        seen.extend(m["id"] for m in page["items"])
        offset += 10
    # A message longer than a page continues on the next one under the same id.
    whole = [m for i, m in enumerate(seen) if i == 0 or seen[i - 1] != m]
    assert whole == cli_json(real_store, "describe", leaf["id"])["source_message_ids"]
    # From a source message back up to the root in the context.
    message = get(ui_server, f"api/messages/{seen[-1]}")
    assert message["covering_summary_id"] == leaf["id"]
    assert message["summary_path"] == [leaf["id"], root["id"]]


@pytest.mark.parametrize("mode", ["regex", "full_text"])
def test_grep_hits_are_lcm_grep_hits(ui_server: UiServer, real_store: Path, mode: str) -> None:
    found = get(ui_server, f"api/search?q=mix+test&mode={mode}&limit=20")
    expected = cli_json(real_store, "grep", "mix test", "--mode", mode, "-n", "20")
    assert [h["id"] for h in found["hits"]] == [h["id"] for h in expected["hits"]]
    assert found["hits"], "the real transcripts run `mix test`"
    for hit in found["hits"]:
        marked = [hit["text"][a:b].casefold() for a, b in hit["highlights"]]
        assert marked and all(w.startswith(("mix", "test")) or "mix test" in w for w in marked)


def test_search_ranks_memories_and_history_as_lcm_search(
    ui_server: UiServer, real_store: Path
) -> None:
    found = get(ui_server, "api/search?q=deploys+blue_green&mode=search&limit=20")
    expected = cli_json(
        real_store, "search", "deploys blue_green", "--all-projects", "--limit", "20"
    )
    assert [h["id"] for h in found["hits"]] == [h["id"] for h in expected["hits"]]
    assert found["hits"][0]["kind"] == "memory"


def test_memories_files_jobs_and_health(ui_server: UiServer) -> None:
    memories = get(ui_server, "api/memories")
    assert memories["total"] == 1 and memories["items"][0]["tags"] == ["deploy"]
    files = get(ui_server, "api/files")
    assert files["conversations"] == 10 and files["next_cursor"] is None
    jobs = get(ui_server, "api/jobs")
    assert jobs["map"]["available"] is True
    [job] = jobs["map"]["jobs"]
    assert job["status"] == "done" and job["items"]["ok"] == 3 and job["prompt"] == "Label the item"
    health = get(ui_server, "api/health?doctor=1")
    figures = get(ui_server, "api/health/figures")
    assert figures["messages"] > 1000 and figures["message_tokens"] > figures["messages"]
    assert figures["conversations"] == 10
    assert {c["name"] for c in health["doctor"]} >= {"open", "integrity"}
    assert get(ui_server, "api/store")["backend"] == "sqlite"


def test_list_figures_match_the_context_items(ui_server: UiServer, real_store: Path) -> None:
    """The list reads counts without listing every context item; they must
    agree with the items themselves."""
    from lossless.engine.engine import Engine

    rows = get(ui_server, "api/conversations?limit=200")["rows"]
    flat = [*rows, *(c for r in rows for c in r["children"])]
    with Engine.open(real_store) as engine:
        for row in flat:
            items = engine.store.context.list(row["id"])
            summaries = {s.id: s for s in engine.store.summaries.list(row["id"])}
            raw = [i for i in items if i.message_id is not None]
            assert row["context_items"] == len(items)
            assert row["raw_in_context"] == len(raw)
            assert row["context_tokens"] == sum(i.token_count for i in items)
            assert row["history_tokens"] == sum(i.token_count for i in raw) + sum(
                summaries[i.summary_id].source_token_count for i in items if i.summary_id
            )
            assert row["messages"] == engine.store.messages.count(row["id"])


def test_dag_of_a_conversation_never_compacted(ui_server: UiServer, real_store: Path) -> None:
    from lossless.engine.engine import Engine

    rows = get(ui_server, "api/conversations?limit=200")["rows"]
    raw = next(c for r in rows for c in [r, *r["children"]] if c["compaction"] == "raw")
    dag = get(ui_server, f"api/conversations/{raw['id']}/dag")
    with Engine.open(real_store) as engine:
        items = engine.store.context.list(raw["id"])
    assert dag["roots"] == [] and dag["summary_count"] == 0
    assert dag["context_items"] == dag["raw_in_context"] == len(items) == raw["messages"]
    assert dag["context_tokens"] == sum(i.token_count for i in items)


def test_source_messages_page_as_lcm_expand_pages(ui_server: UiServer, real_store: Path) -> None:
    row = _compacted(ui_server)
    dag = get(ui_server, f"api/conversations/{row['id']}/dag")
    leaves = get(ui_server, f"api/summaries/{dag['roots'][0]['id']}/children?limit=200")["items"]
    leaf = max(leaves, key=lambda n: n["child_count"])
    cursor = None
    seen: list[int] = []
    while True:
        query = f"&cursor={urllib.parse.quote(cursor)}" if cursor else ""
        page = get(ui_server, f"api/summaries/{leaf['id']}/expand?tokens=3000{query}")
        args = ["expand", leaf["id"], "--tokens", "3000"] + (["--cursor", cursor] if cursor else [])
        expected = cli_json(real_store, *args)
        assert [str(i["id"]) for i in page["items"]] == [n["id"] for n in expected["nodes"]]
        assert page["cursor"] == expected["cursor"]
        seen.extend(i["id"] for i in page["items"])
        cursor = page["cursor"]
        if not cursor:
            break
    # A message longer than a page continues on the next one under the same id.
    whole = [m for i, m in enumerate(seen) if i == 0 or seen[i - 1] != m]
    assert whole == cli_json(real_store, "describe", leaf["id"])["source_message_ids"]


def test_highlighting_a_backtracking_pattern_is_cut_off_not_hung() -> None:
    from tests.cpu_clock import spent_here

    from lossless.ui.finding import highlight

    # The matcher's deadline counts CPU time (wall time stretches with load);
    # uncut, this match would run for years.
    with spent_here() as spent:
        shown = highlight("[" + "a" * 60 + "!]", r"(a|aa)+$", "regex")
    assert spent.cpu_s < 5, spent
    # Not matched in time: the snippet is shown as the store gave it, unhighlighted.
    assert shown == {"text": "[" + "a" * 60 + "!]", "highlights": []}
