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
    parser.add_argument(
        "--many", type=int, default=0, help="also this many smaller conversations (a 1M store)"
    )
    parser.add_argument("--many-messages", type=int, default=100)
    parser.add_argument("--build-only", action="store_true")
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
