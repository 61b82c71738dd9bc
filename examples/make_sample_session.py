"""Write ``sample-session.jsonl``: a small Claude Code-format session for the quickstart.

The content is invented (a team fixing a flaky database migration); the record
shapes follow Claude Code's transcript format: user/assistant records with
uuid/parentUuid chains, tool_use blocks answered by tool_result blocks.
Run: python examples/make_sample_session.py
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

SESSION = "5a3c0f4e-7d21-4b8e-9f60-2c1d8e4b7a90"
CWD = "/home/dev/projects/inventory"
START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)

TURNS: list[tuple[str, str, str, str]] = [
    # (user prompt, tool command, tool output, assistant conclusion)
    (
        "The nightly migration job failed again. Can you look at logs/migrate.log?",
        "tail -n 20 logs/migrate.log",
        '2026-11-01T23:10:04Z ERROR migrate: relation "stock_levels" already exists\n'
        'Traceback (most recent call last):\n  File "migrate.py", line 88, in apply\n'
        'psycopg.errors.DuplicateTable: relation "stock_levels" already exists',
        "Migration 0042_stock_levels ran twice: the job retried after a timeout and the first run had "
        "already committed. The runner does not record applied migrations atomically.",
    ),
    (
        "Where is the runner code?",
        "grep -n 'def apply' -r src/inventory/db",
        "src/inventory/db/migrate.py:88:def apply(conn, migration):",
        "The runner is src/inventory/db/migrate.py; apply() executes the SQL and then inserts into "
        "schema_version in a second transaction.",
    ),
    (
        "Fix it so the SQL and the ledger row commit together.",
        "sed -n 80,110p src/inventory/db/migrate.py",
        "def apply(conn, migration):\n    with conn.transaction():\n        conn.execute(migration.sql)\n"
        "    with conn.transaction():\n        conn.execute(INSERT_VERSION, (migration.version,))",
        "Decision: wrap both statements in one transaction and take pg_advisory_xact_lock(4242) first, "
        "so concurrent runners serialize. Edited src/inventory/db/migrate.py accordingly.",
    ),
    (
        "Run the migration tests.",
        "pytest tests/db/test_migrate.py -q",
        "....F\nFAILED tests/db/test_migrate.py::test_concurrent_runs - AssertionError: 2 != 1\n"
        "1 failed, 4 passed in 3.21s",
        "test_concurrent_runs still fails: the second runner re-reads the ledger before the lock. "
        "Moving the ledger read after pg_advisory_xact_lock.",
    ),
    (
        "Try again.",
        "pytest tests/db/test_migrate.py -q",
        ".....\n5 passed in 3.05s",
        "All 5 migration tests pass. The fix: lock, read ledger, apply, record, commit: one transaction.",
    ),
    (
        "Does staging have the duplicate table?",
        "psql $STAGING_URL -c '\\dt stock_levels*'",
        " public | stock_levels | table | inventory\n(1 row)",
        "Staging has exactly one stock_levels table; no cleanup needed there.",
    ),
    (
        "Add a note to the runbook about the retry behaviour.",
        "git diff --stat",
        " docs/runbook.md               | 12 ++++++++++++\n src/inventory/db/migrate.py   | 19 ++++++++++---------",
        "Runbook updated: retries are safe now because apply() is idempotent under the advisory lock.",
    ),
    (
        "What else calls apply()?",
        "grep -rn 'apply(' src/inventory --include=*.py",
        "src/inventory/cli.py:41:    migrate.apply(conn, m)\nsrc/inventory/db/seed.py:17:    apply(conn, SEED)",
        "Two callers: cli.py:41 and db/seed.py:17. The seed path passes a synthetic migration with "
        "version 0; it needs a real version number or it will be recorded as 0 every time.",
    ),
    (
        "Give the seed migration version 9000.",
        "pytest -q",
        "........................\n24 passed in 8.77s",
        "Seed migration is now version 9000; the full suite passes (24 tests).",
    ),
    (
        "Open a PR.",
        "gh pr create --title 'Make migrations atomic under an advisory lock' --body-file /tmp/pr.md",
        "https://git.example.com/inventory/pull/318",
        "Opened PR #318: 'Make migrations atomic under an advisory lock'.",
    ),
]


def main() -> None:
    lines: list[str] = []
    parent: str | None = None
    moment = START
    counter = 0

    def record(kind: str, message: dict[str, object]) -> None:
        nonlocal parent, moment, counter
        counter += 1
        uuid = f"00000000-0000-4000-8000-{counter:012d}"
        moment += timedelta(seconds=37)
        lines.append(
            json.dumps(
                {
                    "parentUuid": parent,
                    "isSidechain": False,
                    "userType": "external",
                    "cwd": CWD,
                    "sessionId": SESSION,
                    "version": "2.1.40",
                    "gitBranch": "main",
                    "type": kind,
                    "message": message,
                    "uuid": uuid,
                    "timestamp": moment.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                }
            )
        )
        parent = uuid

    for round_no in range(3):
        for i, (prompt, command, output, conclusion) in enumerate(TURNS):
            tool_id = f"toolu_{round_no}{i:02d}"
            suffix = "" if round_no == 0 else f" (follow-up {round_no})"
            record("user", {"role": "user", "content": prompt + suffix})
            record(
                "assistant",
                {
                    "id": f"msg_{round_no}{i:02d}",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": tool_id,
                            "name": "Bash",
                            "input": {"command": command},
                        }
                    ],
                },
            )
            record(
                "user",
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": output}],
                },
            )
            record(
                "assistant",
                {
                    "id": f"msg_{round_no}{i:02d}b",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": conclusion}],
                },
            )
    out = Path(__file__).with_name("sample-session.jsonl")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out} ({len(lines)} records)")


if __name__ == "__main__":
    main()
