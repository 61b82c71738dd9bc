"""docs/postgres.md's step-by-step set-up and the move from SQLite to
PostgreSQL and back, run as written against a real PostgreSQL server."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import SUITE_ENV
from tests.pg_fixtures import own_pg_server  # noqa: F401  (a fixture)
from tests.store.postgres_server import EmbeddedPostgres

DOC = Path(__file__).resolve().parents[2] / "docs" / "postgres.md"


def _guide() -> str:
    text = DOC.read_text("utf-8")
    return text[text.index("## A new database, step by step") : text.index("## Migrations")]


def _blocks(language: str) -> list[str]:
    found = re.findall(rf"```{language}\n(.*?)```", _guide(), flags=re.S)
    return ["\n".join(line.strip() for line in block.splitlines()) for block in found]


def lcm(*args: str) -> subprocess.CompletedProcess[str]:
    # The guide's commands run as a user's would, with none of the test's
    # LCM_* settings, except the suite's own: without them each import starts
    # a worker that embeds the real transcript for minutes, outliving the run.
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LCM_")} | SUITE_ENV
    done = subprocess.run(
        [sys.executable, "-m", "lossless", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=600,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_the_guide_sets_up_a_database_and_moves_a_store_both_ways(
    own_pg_server: EmbeddedPostgres,  # noqa: F811
    tmp_path: Path,
    shared_data: Path,
) -> None:
    [sql] = _blocks("sql")
    [toml, *_] = _blocks("toml")
    [setup, move] = _blocks("sh")
    # 1. the role and the database, as a superuser (names made unique per run)
    suffix = f"{os.getpid()}"
    role, database, password = f"lcm_{suffix}", f"lcm_{suffix}", "pw-with@and:"
    sql = sql.replace("ROLE lcm", f"ROLE {role}").replace(
        "DATABASE lcm OWNER lcm", f"DATABASE {database} OWNER {role}"
    )
    sql = sql.replace("'change-me'", f"'{password}'")
    for statement in filter(None, (s.strip() for s in sql.split(";"))):
        own_pg_server.admin_execute(statement)
    try:
        # 2. config.toml, the password percent-encoded as the guide says
        url = f"postgresql://{role}:pw-with%40and%3A@127.0.0.1:{own_pg_server.port}/{database}"
        pg_home = tmp_path / "lcm-pg"
        pg_home.mkdir()
        (pg_home / "config.toml").write_text(
            toml.replace("postgresql://lcm:change-me@db.example:5432/lcm", url), "utf-8"
        )
        # 3. migrate and status, as written
        for line in setup.splitlines():
            if line.strip():
                done = lcm("--home", str(pg_home), *shlex.split(line)[1:])
                assert done.returncode == 0, (line, done.stdout, done.stderr)
        status = lcm("--home", str(pg_home), "postgres", "status").stdout
        assert "0001_initial" in status or "up to date" in status.lower(), status

        # Moving: a SQLite store with real history, to PostgreSQL and back.
        sqlite_home = tmp_path / "lcm"
        # The smaller Codex session: long enough for compaction to write summaries.
        transcript = sorted(
            (shared_data / "codex").rglob("*.jsonl"), key=lambda p: p.stat().st_size
        )[0]
        assert lcm("--home", str(sqlite_home), "import", "--complete", "-q",
                   str(transcript)).returncode == 0  # fmt: skip
        assert lcm("--home", str(sqlite_home), "compact", "--all", "-q").returncode == 0
        assert lcm("--home", str(sqlite_home), "remember", "--project", "/srv",
                   "Deploys go through scripts/blue_green.sh").returncode == 0  # fmt: skip
        homes = {"~/.lcm": sqlite_home, "~/.lcm-pg": pg_home, "~/.lcm-sqlite": tmp_path / "back"}
        for line in move.splitlines():
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            args = shlex.split(line)[1:]
            args = [str(homes.get(a, a)) for a in args]
            args = [str(tmp_path / a) if a.endswith(".jsonl") else a for a in args]
            done = lcm(*args)
            assert done.returncode == 0, (line, done.stdout, done.stderr)
        first = (tmp_path / "lcm-export.jsonl").read_text("utf-8")
        back = (tmp_path / "back.jsonl").read_text("utf-8")
        assert first == back  # "identical line for line"
        assert '"type": "summary"' in first or '"type":"summary"' in first
        again = lcm("--home", str(pg_home), "import", "--from-export",
                    str(tmp_path / "lcm-export.jsonl"), "--json")  # fmt: skip
        assert json.loads(again.stdout)["added"] == {}
        # A later transcript import into the moved store adds nothing it holds.
        later = lcm("--home", str(pg_home), "import", "--complete", "--json", str(transcript))
        assert json.loads(later.stdout)["messages_added"] == 0, later.stdout
    finally:
        own_pg_server.admin_execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        own_pg_server.admin_execute(f"DROP ROLE IF EXISTS {role}")


def test_the_guide_names_every_tls_option() -> None:
    guide = _guide()
    for word in ("postgres.ca_file", "LCM_POSTGRES_CA_FILE", "verify-full", "sslmode=require"):
        assert word in guide
