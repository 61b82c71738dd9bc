"""``lcm postgres migrate`` and ``lcm postgres status`` against a real server."""

from __future__ import annotations

import json
import socket

from click.testing import CliRunner
from tests.store.postgres_server import require_psycopg

import lossless.cli.postgres  # noqa: F401  (registers the ``postgres`` group)
from lossless.cli.app import cli


def lcm(*args: str, url: str | None = None) -> tuple[int, str, str]:
    env = {"LCM_POSTGRES_URL": url} if url else {}
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_migrate_then_status(pg_url: str) -> None:
    code, out, _ = lcm("postgres", "status", url=pg_url)
    assert code == 1 and "behind" in out and "0001_initial" in out

    code, out, _ = lcm("postgres", "migrate", url=pg_url)
    assert code == 0 and "applied 0001_initial" in out

    code, out, _ = lcm("postgres", "migrate", "--url", pg_url)
    assert code == 0 and "already up to date" in out

    code, out, _ = lcm("postgres", "status", "--json", url=pg_url)
    report = json.loads(out)
    assert code == 0 and report["state"] == "current" and report["pending"] == []
    assert report["server_version"] >= 160000


def test_unreachable_server_is_one_clear_line() -> None:
    require_psycopg()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, _, err = lcm("postgres", "migrate", url=f"postgresql://u:s3cr3t-pw@127.0.0.1:{port}/x")
    assert code == 1
    assert err.startswith("lcm: error: cannot connect to PostgreSQL at 127.0.0.1:")
    assert "s3cr3t-pw" not in err


def test_missing_url_is_a_config_error() -> None:
    code, _, err = lcm("postgres", "status")
    assert code == 1 and "LCM_POSTGRES_URL" in err
