"""`lcm ui` in headless Chromium: first meaningful paint of a large conversation.

Builds (or reuses, under --work) a store holding one generated conversation
of --messages messages, compacted, plus an uncompacted copy, and the small
real transcript ``short.jsonl`` in both as the baseline. Then it starts the
real ``lcm ui`` and measures, in a fresh tab per load, the time from
navigation start to:

- the conversation page's first meaningful paint (the context-window bar and
  the first page of the assembled context on screen; ``window.__lcmPaint``),
  on a first visit (a budget not asked for before, so the assembly is not
  cached) and on a second visit (cached);
- the DAG page, the conversation list and a word search ready (``__lcmReady``).

Target (issue 15): first meaningful paint under 1 s for a 100,000-message
conversation. Run:

    .venv/bin/python benchmarks/bench_ui.py --messages 100000 --work /tmp/lcm-bench-ui
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
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


def conversations(home: Path) -> tuple[int, int, int]:
    """(large conversation id, its message count, small conversation id)."""
    rows = json.loads(_lcm(home, "conversations", "--json"))
    large = max(rows, key=lambda r: r["messages"])
    small = min(rows, key=lambda r: r["messages"])
    return large["id"], large["messages"], small["id"]


def measure(context: Any, server: UiServer, fragment: str, marker: str) -> float:
    tab = context.new_page()
    try:
        tab.goto(f"{server.url}#{fragment}")
        if marker == "paint":
            tab.wait_for_selector("body[data-painted='context']", timeout=120_000)
            return float(tab.evaluate("window.__lcmPaint"))
        tab.wait_for_selector("body[data-ready='1']", timeout=120_000)
        assert tab.locator(".error").count() == 0, tab.locator(".error").first.inner_text()
        return float(tab.evaluate("window.__lcmReady"))
    finally:
        tab.close()


def run(home: Path, label: str, repeat: int, context: Any) -> list[list[Any]]:
    large, size, small = conversations(home)
    server = UiServer(home, env=_env())
    rows: list[list[Any]] = []
    try:
        measure(context, server, "/", "ready")  # warm the server process itself
        # "again" loads the budget this visit assembled (the server keeps it).
        measure(context, server, f"/c/{large}?budget=200000", "paint")
        cases = [
            ("conversation, first visit", large, size, "paint", True),
            ("conversation, again", large, size, "paint", False),
            ("conversation, first visit (baseline)", small, None, "paint", True),
            ("DAG", large, size, "ready", False),
        ]
        for name, conversation, count, marker, fresh in cases:
            times = []
            for i in range(repeat):
                budget = 200_000 + (i + 1 if fresh else 0)
                path = f"/c/{conversation}" + ("/dag" if name == "DAG" else f"?budget={budget}")
                times.append(measure(context, server, path, marker))
            rows.append([label, name, count or "short.jsonl", median(times), percentile(times, 95)])
        for name, path in (
            ("conversation list", "/"),
            ("word search", "/search?q=error&mode=full_text"),
        ):
            times = [measure(context, server, path, "ready") for _ in range(repeat)]
            rows.append([label, name, "-", median(times), percentile(times, 95)])
    finally:
        server.stop()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/lcm-bench-ui"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")
    compacted, raw = build(args.work, args.messages)
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
            rows += run(compacted, "compacted", args.repeat, context)
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
