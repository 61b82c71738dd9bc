"""`lcm ui` in headless Chromium: first meaningful paint of a large conversation, and every page.

Builds (or reuses, under --work) a store holding one generated conversation
of --messages messages, compacted, plus an uncompacted copy, and the small
real transcript ``short.jsonl`` in both as the baseline. With --many N the
store also holds N generated conversations of --many-messages messages each,
the real transcripts (sub-agents included) and 1,000 memories: the
1,000,000-message store of issue 15 is ``--messages 500000 --many 5000``.
Then it starts the real ``lcm ui`` and measures, in a fresh tab per load, the
time from navigation start to:

- the conversation page's first meaningful paint (the context-window bar and
  the first page of the assembled context on screen; ``window.__lcmPaint``),
  on a first visit (a budget not asked for before, so the assembly is not
  cached) and on a second visit (cached);
- every other page ready (``__lcmReady``): the DAG (and opened down to the
  oldest leaf, level by level), a message, the conversation list (sorted,
  filtered), word, regex and ``lcm search`` searches, memories, large files,
  jobs, health (painted, and with the store's counts in), and the list again
  while a slow request (the store's counts) keeps a reader busy.

Target (issue 15): first meaningful paint under 1 s for a 100,000-message
conversation. Run:

    .venv/bin/python benchmarks/bench_ui.py --messages 100000 --work /tmp/lcm-bench-ui
    .venv/bin/python benchmarks/bench_ui.py --messages 500000 --many 5000 --work /tmp/lcm-ui-1m
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from common import DATA, REPO, median, percentile, print_machine, print_table

sys.path.insert(0, str(REPO))
from tests.ui.ui_server import CHROMIUM, CHROMIUM_FLAGS, LCM, UiServer


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("LCM_")}


def _lcm(home: Path, *args: str) -> str:
    done = subprocess.run(
        [*LCM, "--home", str(home), *args], capture_output=True, text=True, env=_env(), check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"lcm {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def build(work: Path, messages: int) -> tuple[Path, Path]:
    """The compacted and the raw store (each reused when already built)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_import import write_corpus

    corpus = work / "corpus"
    if not corpus.exists():
        print(f"writing {messages:,} generated messages ...", flush=True)
        write_corpus(corpus, messages, files=1)
    short = DATA / "claude-code" / "spotter" / "short.jsonl"
    homes = (work / "compacted", work / "raw")
    for home in homes:
        if (home / "lcm.db").exists():
            continue
        print(f"importing into {home} ...", flush=True)
        _lcm(home, "import", str(corpus), str(short), "-q", "--complete")
        if home.name == "compacted":
            print("compacting (a few minutes for 100,000 messages) ...", flush=True)
            _lcm(home, "compact", "--all", "-q")
    return homes


def write_many(directory: Path, conversations: int, per_conversation: int) -> None:
    """``conversations`` generated conversations of ``per_conversation`` messages,
    one file each, spread over 50 projects (a long-lived store of many sessions)."""
    from bench_import import CorpusGenerator

    directory.mkdir(parents=True, exist_ok=True)
    generator = CorpusGenerator(11)
    for index in range(conversations):
        header = {
            "session_id": f"ui-many-{index:06d}",
            "project": f"/work/project-{index % 50:02d}",
        }
        lines = [json.dumps(header)]
        lines += [json.dumps(m, ensure_ascii=False) for m in generator.messages(per_conversation)]
        (directory / f"many-{index:06d}.jsonl").write_text("\n".join(lines) + "\n", "utf-8")


def build_scale(work: Path, messages: int, many: int, per_many: int) -> tuple[Path, Path]:
    """A store of one ``messages``-message conversation beside ``many`` smaller ones
    (and the real transcripts, sub-agents included), raw and compacted; 1,000
    memories. Each is reused when already built."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_import import write_corpus

    big, spread = work / "corpus-big", work / "corpus-many"
    if not big.exists():
        print(f"writing one conversation of {messages:,} generated messages ...", flush=True)
        write_corpus(big, messages, files=1)
    if not spread.exists():
        print(f"writing {many:,} conversations of {per_many:,} messages ...", flush=True)
        write_many(spread, many, per_many)
    raw, compacted = work / "raw", work / "compacted"
    if not (raw / "lcm.db").exists():
        print(f"importing into {raw} ...", flush=True)
        _lcm(raw, "import", str(big), str(spread), str(DATA / "claude-code"), "-q", "--complete")
        _lcm(raw, "import", str(DATA / "codex"), "-q", "--complete")
        from lossless import Engine
        from lossless.engine.memory import remember

        with Engine.open(raw) as engine, engine.store.transaction() as tx:
            for n in range(1000):
                remember(
                    tx,
                    f"Decision {n}: deploys of service {n % 37} go through blue_green_{n}.sh",
                    project=f"/work/project-{n % 50:02d}",
                    tags=["deploy", f"svc-{n % 37}"],
                )
    if not (compacted / "lcm.db").exists():
        print(f"copying {raw} and compacting it (long at this size) ...", flush=True)
        compacted.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["sqlite3", str(raw / "lcm.db"), f".backup {compacted / 'lcm.db'}"], check=True
        )
        _lcm(compacted, "compact", "--all", "-q")
    return compacted, raw


def conversations(home: Path) -> tuple[int, int, int]:
    """(large conversation id, its message count, small conversation id)."""
    rows = json.loads(_lcm(home, "conversations", "--json"))
    large = max(rows, key=lambda r: r["messages"])
    small = min((r for r in rows if r["messages"] > 0), key=lambda r: r["messages"])
    return large["id"], large["messages"], small["id"]


def landmarks(home: Path, conversation: int) -> tuple[int, str | None]:
    """The large conversation's first message and the leaf summary covering it
    (the DAG page opened at its deepest, oldest node)."""
    from lossless import Engine

    with Engine.open(home) as engine:
        [first] = engine.store.messages.list(conversation, limit=1)
        covering = engine.store.summaries.covering([first.id]).get(first.id)
        return first.id, covering


def measure(context: Any, server: UiServer, fragment: str, marker: str) -> float:
    tab = context.new_page()
    try:
        tab.goto(f"{server.url}#{fragment}")
        if marker in ("paint", "health-paint"):
            page = "health" if marker == "health-paint" else "context"
            tab.wait_for_selector(f"body[data-painted='{page}']", timeout=120_000)
            return float(tab.evaluate("window.__lcmPaint"))
        tab.wait_for_selector("body[data-ready='1']", timeout=120_000)
        assert tab.locator(".error").count() == 0, tab.locator(".error").first.inner_text()
        return float(tab.evaluate("window.__lcmReady"))
    finally:
        tab.close()


class Slow:
    """A slow request (the store's counts: every message row) kept running in a
    thread while another page loads: nothing the server does may wait for it."""

    def __init__(self, server: UiServer) -> None:
        self.url = f"{server.url}api/health/figures"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.completed = 0

    def _loop(self) -> None:
        while not self.stop.is_set():
            with urllib.request.urlopen(self.url, timeout=600) as answer:
                answer.read()
            self.completed += 1

    def __enter__(self) -> Slow:
        self.thread.start()
        time.sleep(0.3)  # the request is on a reader before the page loads
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=600)


def run(home: Path, label: str, repeat: int, context: Any) -> list[list[Any]]:
    large, size, small = conversations(home)
    first_message, leaf = landmarks(home, large)
    server = UiServer(home, env=_env())
    rows: list[list[Any]] = []

    def timed(name: str, path: str, marker: str, count: Any = "-", *, times: int = repeat) -> None:
        found = [measure(context, server, path, marker) for _ in range(times)]
        rows.append([label, name, count, median(found), percentile(found, 95)])

    try:
        measure(context, server, "/", "ready")  # warm the server process itself
        # "again" loads the budget this visit assembled (the server keeps it).
        measure(context, server, f"/c/{large}?budget=200000", "paint")
        for name, conversation, count, fresh in (
            ("conversation, first visit", large, size, True),
            ("conversation, again", large, size, False),
            ("conversation, first visit (baseline)", small, None, True),
        ):
            found = []
            for i in range(repeat):
                budget = 200_000 + (i + 1 if fresh else 0)
                found.append(
                    measure(context, server, f"/c/{conversation}?budget={budget}", "paint")
                )
            rows.append([label, name, count or "smallest", median(found), percentile(found, 95)])
        timed("DAG", f"/c/{large}/dag", "ready", size)
        if leaf:
            timed("DAG, opened at the oldest leaf", f"/c/{large}/dag?focus={leaf}", "ready", size)
        timed("message (the oldest)", f"/m/{first_message}", "ready", size)
        timed("conversation list", "/", "ready")
        timed("conversation list, by messages", "/?sort=messages", "ready")
        timed("conversation list, filtered", "/?q=many-0049", "ready")
        timed("word search", "/search?q=error&mode=full_text", "ready")
        timed("search (lcm search)", "/search?q=deploy+error", "ready")
        timed("regex search", "/search?q=timeout%5Cs%2B%5Cd%2B&mode=regex", "ready")
        timed("memories", "/memories", "ready")
        timed("large files", "/files", "ready")
        timed("jobs", "/jobs", "ready")
        timed("health, painted (counts still coming)", "/health", "health-paint")
        timed("health, store counts in", "/health", "ready")
        with Slow(server) as slow:
            timed("conversation list, while a slow request runs", "/", "ready")
        if not slow.completed:
            print("(the slow request had not finished when the list loaded)")
    finally:
        server.stop()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/lcm-bench-ui"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--many", type=int, default=0, help="also this many smaller conversations (a 1M store)"
    )
    parser.add_argument("--many-messages", type=int, default=100)
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument(
        "--stores", choices=("both", "compacted", "raw"), default="both", help="which to measure"
    )
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")
    if args.many:
        compacted, raw = build_scale(args.work, args.messages, args.many, args.many_messages)
    else:
        compacted, raw = build(args.work, args.messages)
    if args.build_only:
        return 0
    print_machine()
    rows: list[list[Any]] = []
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(args.work / "chromium-profile"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 900},
        )
        try:
            if args.stores in ("both", "compacted"):
                rows += run(compacted, "compacted", args.repeat, context)
            if args.stores in ("both", "raw"):
                rows += run(raw, "not compacted", args.repeat, context)
        finally:
            context.close()
    print_table(
        ["store", "page", "messages", "median ms", "p95 ms"],
        rows,
        title=f"ms from navigation start, {args.repeat} loads each, a fresh tab per load",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
