"""The hook server: one per home, serving hooks one at a time on a Unix socket.

``python -m lossless.hook_server --home H`` (what a hook that ran inline
starts, detached) or ``lcm hook-server run`` (in the foreground). It:

1. takes ``run/hook-server.lock`` (exclusive, dropped by the kernel when the
   process dies), or exits at once: one server per home;
2. imports the hook path (the modules a hook would import), then binds
   ``run/hook-server.sock`` (0600 in a 0700 folder) and writes
   ``run/hook-server.json`` for ``lcm hook-server status``;
3. serves requests one at a time (see ``wire`` for the conversation): each
   runs ``lossless.hooks.main`` exactly as an inline hook does, with the
   client's environment, current directory and umask in place and its
   stdin, stdout and stderr captured. The configuration is loaded and the
   store opened for each hook, as inline, so a changed ``config.toml``, a
   replaced store or a new migration is seen at once. A request's failure is
   that request's answer (a traceback on its stderr, exit 1, as inline);
   the server goes on;
4. exits when no request came for ``hooks.server_idle_s``, when the
   installed code changed (``identity``: it declines the request so the
   client runs the new code inline and starts a new server), when its socket
   file or its home is gone, when ``hooks.server`` is turned off, on
   ``lcm hook-server stop`` and on SIGTERM/SIGINT/SIGHUP (after the request
   it is serving).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from lossless.hook_server import wire
from lossless.hook_server.identity import CodeIdentity
from lossless.process import FileLock

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.hook_server.invocation import HookArgs
    from lossless.store.sqlite.keeper import WalKeeper

# How often an idle server looks at its socket, home, code and config.
WAKE_S = 1.0
# A client that connected sends its hello at once and, after ``ready``, its
# stdin: a slower one is dropped (it will have run inline).
HELLO_WAIT_S = 2.0
REQUEST_WAIT_S = 30.0

# A server started by a hook waits (at most this long) for that hook to return
# before it warms up, so that the hook's last milliseconds do not share the
# CPU with the server's imports.
AFTER_WAIT_S = 2.0

# What a hook imports, loaded before the socket listens so that the first
# request finds them (any module missing here is imported by the first hook
# that needs it, once).
WARM_MODULES = (
    "lossless.config",
    "lossless.config_file",
    "lossless.hooks",
    "lossless.hooks.dispatch",
    "lossless.engine.engine",
    "lossless.engine.ingest",
    "lossless.engine.recall",
    "lossless.engine.compaction_requests",
    "lossless.store.sqlite.store",
    "lossless.store.sqlite.keeper",
    "lossless.sources.claude_code",
    "lossless.sources.codex",
    "lossless.redact.redactor",
    "lossless.logfile",
    "lossless.worker",
    "lossless.size_cap",
    "lossless.hook_server.invocation",
    "lossless.hook_server.control",
)


class Stop(Exception):
    """Raised by a signal handler while the server waits for a connection."""


class HookServer:
    def __init__(
        self, home: Path, *, idle_s: float | None = None, after: int | None = None
    ) -> None:
        self.home = home
        self.after = after
        self.run_dir = Path(wire.run_dir(str(home)))
        self.socket_path = wire.socket_path(str(home))
        self.idle_s_override = idle_s
        self.idle_s: float = idle_s if idle_s is not None else 1800.0
        self.lock = FileLock(self.run_dir / wire.LOCK_NAME)
        self.listener: socket.socket | None = None
        self.socket_id: tuple[int, int] | None = None
        self.identity: CodeIdentity | None = None
        self.base_env = dict(os.environ)
        self.config_stamp: tuple[int, int, int] | None = None
        self.enabled = True
        self.file_enabled = True
        self.requests = 0
        self.started_at = time.time()
        self.last_request = time.monotonic()
        self.busy = False
        # The store's idle connection (``lossless.store.idle_keeper``).
        self.keeper: WalKeeper | None = None
        self.stopping = ""
        self.package = ""
        self.executable = os.fsencode(sys.executable)
        self.version = b""

    # ------------------------------------------------------------------ lifecycle

    def run(self) -> int:
        """Serve until a reason to exit; 0 (1 if the home cannot have a server)."""
        if not self._private_run_dir():
            return 1
        if not self.lock.acquire():
            return 0  # another server has this home
        try:
            self._wait_for_starter()
            self._warm_up()
            self._refresh_config(force=True)
            if not self.enabled:
                self._log("hooks.server is off: not starting")
                return 0
            self._listen()
            self._install_signals()
            self._log(f"started: pid {os.getpid()}, exits after {self.idle_s:.0f} s idle")
            import gc

            # The modules loaded so far live as long as the server: keep the
            # cyclic collector off them.
            gc.collect()
            gc.freeze()
            self._loop()
            self._log(f"exit: {self.stopping} ({self.requests} hook(s) served)")
            return 0
        finally:
            self._close()
            self.lock.release()

    def _private_run_dir(self) -> bool:
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            st = self.run_dir.stat()
            if st.st_uid != os.getuid():
                self._log(f"{self.run_dir} belongs to another user: not starting")
                return False
            if st.st_mode & 0o077:
                os.chmod(self.run_dir, 0o700)
        except OSError as exc:
            print(f"lcm hook-server: {exc}", file=sys.stderr)
            return False
        return True

    def _wait_for_starter(self) -> None:
        """Wait until the hook that started this server has exited (it is the parent)."""
        if self.after is None or os.getppid() != self.after:
            return
        deadline = time.monotonic() + AFTER_WAIT_S
        while os.getppid() == self.after and time.monotonic() < deadline:
            time.sleep(0.002)

    def _warm_up(self) -> None:
        import importlib

        from lossless import __version__, dataclass_cache, regex_cache

        regex_cache.install()
        dataclass_cache.install()
        for name in WARM_MODULES:
            importlib.import_module(name)
        regex_cache.keep()
        dataclass_cache.keep()
        self.identity = CodeIdentity()
        self.package = self.identity.root
        self.version = __version__.encode()

    def _listen(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)  # left by a server that was killed
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            wire.bind(listener, self.socket_path)
        finally:
            os.umask(old)
        os.chmod(self.socket_path, 0o600)
        listener.listen(64)
        listener.settimeout(WAKE_S)
        st = os.stat(self.socket_path)
        self.listener = listener
        self.socket_id = (st.st_dev, st.st_ino)
        self._write_info()

    def _write_info(self) -> None:
        info = {
            "pid": os.getpid(),
            "started_at": self.started_at,
            "idle_timeout_s": int(self.idle_s),
            "version": self.version.decode(),
            "executable": sys.executable,
            "package": self.package,
            "socket": self.socket_path,
        }
        path = self.run_dir / wire.INFO_NAME
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(info), "utf-8")
        os.replace(temporary, path)

    def _close(self) -> None:
        """Give the home back: socket and info file removed if still ours."""
        if self.keeper is not None:
            self.keeper.close()
            self.keeper = None
        if self.listener is None:
            return
        self.listener.close()
        self.listener = None
        if self._socket_is_ours():
            with contextlib.suppress(OSError):
                os.unlink(self.socket_path)
        info = self.run_dir / wire.INFO_NAME
        with contextlib.suppress(OSError, ValueError):
            if json.loads(info.read_text("utf-8")).get("pid") == os.getpid():
                info.unlink()

    def _socket_is_ours(self) -> bool:
        try:
            st = os.stat(self.socket_path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.socket_id

    def _install_signals(self) -> None:
        def stop(signum: int, frame: object) -> None:
            self.stopping = f"signal {signal.Signals(signum).name}"
            if not self.busy:
                raise Stop()

        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, stop)

    # ------------------------------------------------------------------ loop

    def _loop(self) -> None:
        with contextlib.suppress(Stop):
            self._serve_until_stopped()

    def _serve_until_stopped(self) -> None:
        assert self.listener is not None
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                self._housekeeping()
                continue
            except OSError as exc:
                self.stopping = f"socket error: {exc}"
                return
            self.busy = True
            try:
                with conn:
                    self._converse(conn)
            except Exception as exc:  # one bad connection never ends the server
                self._log(f"connection failed: {type(exc).__name__}: {exc}")
            finally:
                self.busy = False
            _reap_children()
            if self.keeper is not None:
                self.keeper.refresh()  # the first hook creates the store
            if not self.stopping and self.identity is not None and self.identity.any_change():
                self.stopping = "the installed code changed"

    def _housekeeping(self) -> None:
        _reap_children()
        if self.keeper is not None:
            self.keeper.refresh()
        if not self.home.is_dir():
            self.stopping = "its home is gone"
        elif not self._socket_is_ours():
            self.stopping = "its socket file is gone or replaced"
        elif self.identity is not None and self.identity.any_change():
            self.stopping = "the installed code changed"
        elif time.monotonic() - self.last_request >= self.idle_s:
            self.stopping = f"idle for {self.idle_s:.0f} s"
        else:
            self._refresh_config()
            if not self.enabled:
                self.stopping = "hooks.server turned off"

    def _refresh_config(self, *, force: bool = False) -> None:
        """Re-read ``hooks.server`` and its idle timeout when config.toml changed.

        ``enabled`` is the setting as the environment the server was started
        with sees it; ``file_enabled`` leaves out ``LCM_HOOKS_SERVER``, which
        each client's own environment decides (a client whose variable turns
        it off never asks).
        """
        from lossless.config import CONFIG_FILE, load_config
        from lossless.hook_server.client import SERVER_ENV

        try:
            st = os.stat(self.home / CONFIG_FILE)
            stamp: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = None
        if not force and stamp == self.config_stamp:
            return
        self.config_stamp = stamp
        config: Config = load_config(self.home, env=self.base_env, lenient=True)
        self.enabled = config.hooks_server
        self._keep(config)
        without = {k: v for k, v in self.base_env.items() if k != SERVER_ENV}
        self.file_enabled = load_config(self.home, env=without, lenient=True).hooks_server
        if self.idle_s_override is None:
            self.idle_s = float(max(1, config.hooks_server_idle_s))
        if self.listener is not None:
            self._write_info()

    def _keep(self, config: Config) -> None:
        """Hold the store the configuration names open while idle (see ``idle_keeper``)."""
        from lossless.store import idle_keeper

        wanted = idle_keeper(config)
        if self.keeper is not None and (wanted is None or wanted.path != self.keeper.path):
            self.keeper.close()
            self.keeper = None
        if self.keeper is None:
            self.keeper = wanted
        if self.keeper is not None:
            self.keeper.refresh()

    # ------------------------------------------------------------------ one connection

    def _converse(self, conn: socket.socket) -> None:
        conn.settimeout(HELLO_WAIT_S)
        if hasattr(socket, "SO_PEERCRED"):
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():
                return
        reader = wire.Reader(conn)
        if reader.read(256) != wire.PROTOCOL:
            conn.sendall(wire.frame(b"decline protocol"))
            return
        kind = reader.read(64)
        if kind == b"ping":
            conn.sendall(wire.frame(json.dumps(self._status()).encode()))
            return
        if kind == b"stop":
            self.stopping = "asked to stop"
            conn.sendall(wire.frame(b"bye"))
            return
        if kind != b"hook":
            conn.sendall(wire.frame(b"decline unknown request"))
            return
        hello = [reader.read() for _ in range(7)]
        self._serve_hook(conn, reader, hello)

    def _status(self) -> dict[str, object]:
        return {
            "pid": os.getpid(),
            "started_at": self.started_at,
            "idle_timeout_s": int(self.idle_s),
            "requests": self.requests,
            "version": self.version.decode(),
        }

    def _decline(self, conn: socket.socket, reason: str) -> None:
        conn.sendall(wire.frame(f"decline {reason}".encode()))

    def _serve_hook(self, conn: socket.socket, reader: wire.Reader, hello: list[bytes]) -> None:
        version, package, executable, argv, cwd, environ, umask = hello
        if self.identity is not None and self.identity.quick_change():
            # Leave before answering, so the server the client starts for
            # the next hook can take the home at once.
            self.stopping = "the installed code changed"
            self._close()
            self.lock.release()
            self._decline(conn, "stale code")
            return
        if (version, os.fsdecode(package), executable) != (
            self.version,
            self.package,
            self.executable,
        ):
            self._decline(conn, "foreign install")
            return
        self._refresh_config()
        env = wire.decode_env(environ)
        from lossless.hook_server.client import SERVER_ENV

        if SERVER_ENV not in env and not self.file_enabled:
            self.stopping = "hooks.server turned off"
            self._decline(conn, "off")
            return
        args = [os.fsdecode(a) for a in argv.split(b"\0")] if argv else []
        from lossless.hook_server.invocation import hook_args

        parsed = hook_args(list(args))
        if parsed is None or parsed[4]:
            self._decline(conn, "not a hook")
            return
        self.last_request = time.monotonic()
        with _as_client(
            self.home, wire.decode_env(environ), os.fsdecode(cwd), int(umask)
        ) as entered:
            if not entered:
                self._decline(conn, "cannot enter the client's directory")
                return
            if not self._same_home(parsed[0]):
                self._decline(conn, "another home")
                return
            try:
                conn.sendall(wire.frame(b"ready"))
            except OSError:
                return  # the client stopped waiting: it runs inline
            conn.settimeout(REQUEST_WAIT_S)
            try:
                stdin = reader.read()
            except (OSError, wire.Closed):
                return  # the client gave up before committing: it runs inline
            code, out, err = _run(parsed, stdin)
        self.requests += 1
        with contextlib.suppress(OSError):
            conn.sendall(
                wire.frames(
                    b"done",
                    str(code).encode(),
                    out.encode("utf-8", wire.ERRORS),
                    err.encode("utf-8", wire.ERRORS),
                )
            )
        self.last_request = time.monotonic()

    def _same_home(self, home: str | None) -> bool:
        """Whether the hook's home is this server's (run in the client's environment and cwd)."""
        from lossless.hook_server.client import home_of

        try:
            return os.path.samefile(home_of(home, os.environ), self.home)
        except OSError:
            return False

    def _log(self, text: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        print(f"{stamp}Z hook server {os.getpid()}: {text}", file=sys.stderr, flush=True)


class _as_client:
    """The client's environment, directory and umask for one hook; the server's after."""

    def __init__(self, home: Path, env: dict[str, str], cwd: str, umask: int) -> None:
        self.home, self.env, self.cwd, self.umask = home, env, cwd, umask
        self.saved_env: dict[str, str] = {}
        self.saved_umask = 0

    def __enter__(self) -> bool:
        try:
            os.chdir(self.cwd)
        except OSError:
            return False
        self.saved_env = dict(os.environ)
        _replace_environ(self.env)
        self.saved_umask = os.umask(self.umask)
        return True

    def __exit__(self, *exc: object) -> None:
        os.umask(self.saved_umask)
        if self.saved_env:
            _replace_environ(self.saved_env)
        with contextlib.suppress(OSError):
            os.chdir(self.home)


def _replace_environ(env: dict[str, str]) -> None:
    for key in [k for k in os.environ if k not in env]:
        del os.environ[key]
    for key, value in env.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def _run(parsed: HookArgs, stdin: bytes) -> tuple[int, str, str]:
    """Run one hook as ``lcm hook`` inline would; (exit code, stdout, stderr)."""
    from lossless.hook_server.invocation import run_hook

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = run_hook(parsed, stdin=stdin, stdout=out, note="hook server")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            err.write(f"{exc.code}\n")
    except BaseException:
        # What an exception escaping inline would print, and its exit code.
        err.write(traceback.format_exc())
        code = 1
    finally:
        sys.stdout, sys.stderr = saved
    return code, out.getvalue(), err.getvalue()


def _reap_children() -> None:
    """Collect the exit status of workers and imports this server started."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(argv: list[str]) -> int:
    """``python -m lossless.hook_server --home H [--idle-s N] [--after PID]``."""
    home: str | None = None
    idle_s: float | None = None
    after: int | None = None
    rest = list(argv)
    while rest:
        option = rest.pop(0)
        if option == "--home" and rest:
            home = rest.pop(0)
        elif option == "--idle-s" and rest:
            idle_s = float(rest.pop(0))
        elif option == "--after" and rest and rest[0].isdigit():
            after = int(rest.pop(0))
        else:
            usage = "usage: python -m lossless.hook_server [--home H] [--idle-s N] [--after PID]"
            print(f"{usage}: unexpected {option!r}", file=sys.stderr)
            return 2
    from lossless.config import default_home

    where = Path(home).expanduser() if home else default_home(os.environ)
    where = Path(os.path.abspath(where))
    if where.is_dir():
        # Never keep a client's (or the spawning hook's) directory busy.
        os.chdir(where)
    return HookServer(where, idle_s=idle_s, after=after).run()
