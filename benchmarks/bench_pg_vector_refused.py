"""What opening a current PostgreSQL store costs where pgvector is offered but the role may not create it.

Migration 0011 leaves semantic search's tables out where the role may not
create pgvector (it is not a trusted extension: only a superuser may). Two
real roles, neither a superuser, open the store, against a real embedded
PostgreSQL 18 on this machine: ``owner`` (owns the database and schema
``lcm``, as docs/postgres.md sets it up) and ``app`` (read/write rights
only). For each: the statements one open sends and the server's time in
them (``log_min_duration_statement = 0``, the median over 15 opens; the
migration lock and the DDL counted apart), then
the open + close timed with logging off, in wall and CPU time of this
process. ``--src`` picks the lossless source to measure, so the code before a
change can be measured back to back with the code after it.

    setsid bash -c 'echo -15 > /proc/$$/autogroup; exec .venv/bin/python benchmarks/bench_pg_vector_refused.py --runs 30'
    setsid bash -c 'echo -15 > /proc/$$/autogroup; exec .venv/bin/python benchmarks/bench_pg_vector_refused.py --runs 30 --src /path/to/other/checkout/src'
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import common

sys.path.insert(0, str(common.REPO))

PASSWORD = "bench-secret"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--src", default=str(common.REPO / "src"), help="lossless source to use")
    args = parser.parse_args()
    sys.path.insert(0, args.src)
    common.print_machine()
    import psycopg

    import lossless
    from lossless.store.postgres.store import PostgresStore

    print(f"lossless from {Path(lossless.__file__).parent}")
    server = common.start_embedded_postgres()
    rows: list[list[object]] = []
    try:
        server.admin_execute(f"CREATE ROLE owner LOGIN PASSWORD '{PASSWORD}'")
        server.admin_execute(f"CREATE ROLE app LOGIN PASSWORD '{PASSWORD}'")
        server.admin_execute("CREATE DATABASE lcm OWNER owner")
        urls = {
            role: re.sub(r"//[^@]+@", f"//{role}:{PASSWORD}@", server.url("lcm"))
            for role in ("owner", "app")
        }
        PostgresStore(urls["owner"]).close()  # migrated by its owner: 0011 skipped its tables
        with psycopg.connect(urls["owner"], autocommit=True) as conn:
            conn.execute("GRANT USAGE ON SCHEMA lcm TO app")
            conn.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA lcm TO app")
            conn.execute("GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA lcm TO app")
        for role, url in urls.items():
            logged = _statements_of_opens(server, url, PostgresStore, 15)
            statements = logged[0][0]
            server_ms = common.median([sum(durations) for _, durations in logged])
            lock = sum("pg_advisory_xact_lock" in s for s in statements)
            ddl = sum("$migration$" in s or s.startswith("--") for s in statements)
            walls, cpus = [], []
            for _ in range(args.runs):
                wall, cpu = time.perf_counter(), time.process_time()
                store = PostgresStore(url, connect_timeout_s=2)
                store.close()
                walls.append((time.perf_counter() - wall) * 1000)
                cpus.append((time.process_time() - cpu) * 1000)
            vector = PostgresStore(url).capabilities.vector_search
            rows.append(
                [
                    role,
                    len(statements),
                    lock,
                    ddl,
                    server_ms,
                    common.median(walls),
                    common.percentile(walls, 95),
                    common.median(cpus),
                    str(vector),
                ]
            )
    finally:
        server.destroy()
    common.print_table(
        [
            "role",
            "statements",
            "migration lock",
            "DDL blocks",
            "server ms",
            "open+close wall p50 ms",
            "p95",
            "CPU p50 ms",
            "vector_search",
        ],
        rows,
        title=f"open of a current store, pgvector not creatable, {args.runs} runs "
        f"(load {os.getloadavg()[0]:.1f})",
    )


def _statements_of_opens(
    server: object, url: str, store_class: type, opens: int
) -> list[tuple[list[str], list[float]]]:
    """For each of ``opens`` opens + closes: the statements the server ran for it and
    the server's milliseconds in each step (parse, bind and execute apart), told
    apart by the backend's pid (the pool's connections ran none)."""
    admin = server.admin_execute  # type: ignore[attr-defined]
    log: Path = server.log  # type: ignore[attr-defined]
    admin("ALTER SYSTEM SET log_min_duration_statement = 0")
    admin("SELECT pg_reload_conf()")
    time.sleep(0.5)  # the reload reaches the postmaster's children asynchronously
    start = log.stat().st_size
    for _ in range(opens):
        store_class(url, connect_timeout_s=2).close()
    time.sleep(0.5)  # the logging collector writes after the statement returns
    admin("ALTER SYSTEM RESET log_min_duration_statement")
    admin("SELECT pg_reload_conf()")
    with log.open("rb") as handle:
        handle.seek(start)
        text = handle.read().decode(errors="replace")
    by_pid: dict[str, tuple[list[str], list[float]]] = {}
    pattern = r"\[(\d+)\] LOG:  duration: ([0-9.]+) ms  (\w+)[^:]*: (.*)"
    for pid, ms, step, sql in re.findall(pattern, text):
        if "pg_reload_conf" in sql or "log_min_duration_statement" in sql:
            continue
        statements, durations = by_pid.setdefault(pid, ([], []))
        durations.append(float(ms))
        if step in ("statement", "execute"):
            statements.append(sql.strip())
    assert len(by_pid) == opens, f"{len(by_pid)} sessions ran statements for {opens} opens"
    return list(by_pid.values())


if __name__ == "__main__":
    main()
