"""``lcm doctor``: is lossless installed, working, and keeping up? Each problem with its fix.

Checks, in the order a user would fix things:

- **lcm**: this installation runs (the command hooks and MCP entries use).
- **claude-code / codex**: per scope, the hooks are all there and their
  commands point at an ``lcm`` that runs; the MCP entry exists and runs; the
  MCP SDK is installed; Codex hooks are not switched off.
- **store**: it opens (which verifies the migration ledger), its counts read,
  nothing is stuck in quarantine unnoticed.
- **worker**: compaction requests are being served (no old pending request
  without a running worker), no compaction error is waiting.
- **summarizer**: the configured provider can be built (SDK present, command
  on PATH) and answers one tiny real call within ``PROBE_TIMEOUT_S``; a
  failure names its cause (a bad key, a dead server, a command that exits 1).
- **outbox** (PostgreSQL): what hooks captured offline and why, and whether
  its delivery is stuck.
- **hooks log**: recent hook failures, and hooks that captured offline after
  a store error on a live server.
- **hook server**: whether the resident hook server runs (pid, idle timeout)
  or is turned off.

A check is ``ok``, ``info``, ``warn`` or ``problem``; only problems make the
command exit non-zero.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.integrations.files import Scope

Status = Literal["ok", "info", "warn", "problem"]
# A request older than this with no worker running means hooks fail to start it.
STALE_REQUEST_S = 15 * 60
RECENT_LOG_S = 24 * 3600
# The summarizer test call: long enough for a slow model's first token, short
# enough that a dead endpoint does not hold `lcm doctor`.
PROBE_TIMEOUT_S = 20.0


@dataclass(slots=True)
class Check:
    area: str
    name: str
    status: Status
    detail: str
    fix: str | None = None


class _Probe:
    """Runs ``<command> --version`` once per distinct command prefix."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._seen: dict[tuple[str, ...], str | None] = {}

    def error(self, prefix: Sequence[str]) -> str | None:
        """None when the command runs; otherwise what went wrong."""
        key = tuple(prefix)
        if key in self._seen:
            return self._seen[key]
        exe = Path(prefix[0]) if prefix else None
        problem: str | None = None
        if exe is None:
            problem = "empty command"
        elif not exe.is_absolute() and shutil.which(str(exe)) is None:
            problem = f"{exe} is not on PATH"
        elif exe.is_absolute() and not exe.is_file():
            problem = f"{exe} does not exist"
        elif self.enabled:
            try:
                done = subprocess.run(
                    [*prefix, "--version"], capture_output=True, text=True, timeout=30
                )
            except OSError as exc:
                problem = f"{exe} cannot run: {exc}"
            except subprocess.TimeoutExpired:
                problem = f"{exe} --version did not finish in 30s"
            else:
                if done.returncode != 0 or "lcm" not in done.stdout:
                    tail = (done.stderr or done.stdout).strip()[-200:]
                    problem = f"{' '.join(prefix)} --version failed ({done.returncode}): {tail}"
        self._seen[key] = problem
        return problem

    def mcp_error(self, entry: Mapping[str, Any]) -> str | None:
        if not self.enabled:
            return None
        argv = [str(entry["command"]), *[str(a) for a in entry.get("args") or []]]
        key = ("mcp", *argv)
        if key not in self._seen:
            self._seen[key] = mcp_handshake_error(argv)
        return self._seen[key]


def _lcm_prefix(command: str) -> list[str]:
    """The part of an installed command before the lcm subcommand (keeps ``--home``)."""
    from lossless.integrations.commands import lcm_subcommand, split_command

    argv = split_command(command)
    found = lcm_subcommand(argv)
    return argv[: found[0]] if found else argv[:1]


def mcp_handshake_error(argv: Sequence[str], timeout_s: float = 20.0) -> str | None:
    """Start an MCP server command, do the initialize handshake and call ``lcm_status``.

    None when it answers both; otherwise what went wrong. The tool call is
    what proves the server works: ``lcm mcp`` answers ``initialize`` before
    it loads the SDK and opens the store (so clients see it at once), and a
    store that cannot open fails only after that. Raw JSON-RPC on purpose: it
    checks the installed command, whatever SDK (or none) this process has.
    """
    import json
    import queue
    import threading

    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "lcm-doctor", "version": "1"},
        },
    }
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    except OSError as exc:
        return f"{argv[0]} cannot run: {exc}"
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    try:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return f"{' '.join(argv)} did not answer the MCP handshake within {timeout_s:g}s"
            if line is None:
                break
            try:
                reply = json.loads(line)
            except ValueError:
                continue
            if isinstance(reply, dict) and reply.get("id") == 1:
                result = reply.get("result")
                if not (isinstance(result, dict) and "serverInfo" in result):
                    return f"MCP handshake refused: {str(reply.get('error'))[:200]}"
                for message in (
                    {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "tools/call",
                        "params": {"name": "lcm_status", "arguments": {}},
                    },
                ):
                    proc.stdin.write(json.dumps(message) + "\n")
                proc.stdin.flush()
            elif isinstance(reply, dict) and reply.get("id") == 2:
                result = reply.get("result")
                if isinstance(result, dict) and not result.get("isError"):
                    return None
                detail = reply.get("error") or (result or {}).get("content")
                return f"the MCP server's lcm_status call failed: {str(detail)[:200]}"
    except OSError:
        pass
    finally:
        # The answer is all we need; the SDK's orderly shutdown takes seconds.
        proc.kill()
        _, err = proc.communicate()
    lines_of_err = [line for line in (err or "").strip().splitlines() if line.strip()]
    tail = lines_of_err[-1] if lines_of_err else "no output"
    return f"{' '.join(argv)} is not an MCP server that starts: {tail[:300]}"


def _mcp_prefix(entry: Mapping[str, Any]) -> list[str]:
    from lossless.integrations.commands import join_command

    argv = [str(entry["command"]), *[str(a) for a in entry.get("args") or []]]
    return _lcm_prefix(join_command(argv))


def _home_of(prefix: Sequence[str]) -> str | None:
    if "--home" in prefix:
        index = list(prefix).index("--home")
        if index + 1 < len(prefix):
            return prefix[index + 1]
    return None


def _check_commands(
    area: str,
    scope: str,
    commands: Iterable[str],
    probe: _Probe,
    config: Config,
    fix: str,
) -> list[Check]:
    checks: list[Check] = []
    prefixes = {tuple(_lcm_prefix(c)) for c in commands}
    for prefix in sorted(prefixes):
        error = probe.error(prefix)
        if error:
            checks.append(
                Check(area, f"{scope}: hook command", "problem", error, f"run `{fix}` again")
            )
            continue
        home = _home_of(prefix)
        if home is not None and Path(home).expanduser() != config.home:
            checks.append(
                Check(
                    area,
                    f"{scope}: data folder",
                    "warn",
                    f"hooks store into {home}, but this lcm uses {config.home}",
                    f"run `{fix}` with the data folder you want (LCM_HOME or --home)",
                )
            )
    if prefixes and not checks:
        shown = " ".join(sorted(prefixes)[0])
        checks.append(Check(area, f"{scope}: hook command", "ok", f"{shown} runs"))
    return checks


def _mcp_sdk_error() -> str | None:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


@dataclass(frozen=True, slots=True)
class _ClientInstall:
    """What the client-install check needs to know of one scope, whichever client."""

    scope: Scope
    present: bool
    hooks_file: Path
    mcp_file: Path
    mcp_table: str
    hooks: dict[str, list[str]]
    missing_events: list[str]
    mcp: Mapping[str, Any] | None
    error: str | None
    extra: list[Check]


def _claude_install(config: Config, scope: Scope, project: Path | None) -> _ClientInstall:
    from lossless.integrations import claude_code

    found = claude_code.inspect(config, scope, project)
    return _ClientInstall(
        scope,
        found.present,
        found.settings,
        found.mcp_file,
        "'lcm'",
        found.hooks,
        found.missing_events,
        found.mcp,
        found.error,
        [],
    )


def _codex_install(config: Config, scope: Scope, project: Path | None) -> _ClientInstall:
    from lossless.integrations import codex

    found = codex.inspect(config, scope, project)
    flag = " --scope project" if scope == "project" else ""
    extra: list[Check] = []
    if found.hooks_disabled:
        extra.append(
            Check(
                "codex",
                f"{scope}: hooks enabled",
                "problem",
                f"{found.config} switches hooks off ([features] hooks = false)",
                f"remove that line from {found.config}, or set it to true",
            )
        )
    if found.untrusted:
        kinds = sorted({p.status for p in found.untrusted})
        events = ", ".join(p.event for p in found.untrusted)
        extra.append(
            Check(
                "codex",
                f"{scope}: hook trust",
                "problem",
                f"Codex skips {len(found.untrusted)} lossless hook(s) as "
                f"{' or '.join(kinds)} ({events}): no trust recorded for their current "
                f"command in {codex.paths(config, scope, project).trust_config}",
                f"lcm install codex{flag}",
            )
        )
    elif found.hooks:
        extra.append(
            Check("codex", f"{scope}: hook trust", "ok", f"all {len(found.hooks)} hooks trusted")
        )
    return _ClientInstall(
        scope,
        found.present,
        found.hooks_file,
        found.config,
        "[mcp_servers.lcm]",
        found.hooks,
        found.missing_events,
        found.mcp,
        found.error,
        extra,
    )


def _scopes_to_check(
    config: Config, client: str, scopes: Sequence[tuple[Scope, Path | None]]
) -> list[tuple[Scope, Path | None]]:
    """The scopes whose files differ: run from $HOME, the project scope's files are the
    user scope's own (``~/.claude/settings.json``, ``~/.codex``) and are checked once."""
    from lossless.integrations import claude_code, codex

    def hooks_file(scope: Scope, project: Path | None) -> Path:
        if client == "claude-code":
            return claude_code.paths(config, scope, project).settings
        return codex.paths(config, scope, project).hooks

    seen: set[Path] = set()
    kept: list[tuple[Scope, Path | None]] = []
    for scope, project in scopes:
        path = hooks_file(scope, project).expanduser().resolve()
        if path in seen:
            continue
        seen.add(path)
        kept.append((scope, project))
    return kept


def check_client(
    client: str,
    config: Config,
    scopes: Sequence[tuple[Scope, Path | None]],
    probe: _Probe,
) -> list[Check]:
    """One client's install, per scope: hooks, their commands, the MCP entry, client extras."""
    inspect = _claude_install if client == "claude-code" else _codex_install
    client_home = config.claude_dir if client == "claude-code" else config.codex_dir
    label = "Claude Code" if client == "claude-code" else "Codex"
    checks: list[Check] = []
    present = False
    for scope, project in _scopes_to_check(config, client, scopes):
        found = inspect(config, scope, project)
        flag = " --scope project" if scope == "project" else ""
        fix = f"lcm install {client}{flag}"
        if found.error:
            checks.append(Check(client, f"{scope}: settings", "problem", found.error, None))
            continue
        if not found.present:
            continue
        present = True
        if found.missing_events:
            checks.append(
                Check(
                    client,
                    f"{scope}: hooks",
                    "problem",
                    f"{found.hooks_file} lacks lossless hooks for "
                    f"{', '.join(found.missing_events)}",
                    fix,
                )
            )
        else:
            checks.append(
                Check(
                    client,
                    f"{scope}: hooks",
                    "ok",
                    f"{len(found.hooks)} events in {found.hooks_file}",
                )
            )
        checks.extend(found.extra)
        commands = [c for cmds in found.hooks.values() for c in cmds]
        checks.extend(_check_commands(client, scope, commands, probe, config, fix))
        if found.mcp is None:
            checks.append(
                Check(
                    client,
                    f"{scope}: MCP server",
                    "problem",
                    f"no {found.mcp_table} in {found.mcp_file}",
                    fix,
                )
            )
        else:
            error = probe.error(_mcp_prefix(found.mcp)) or probe.mcp_error(found.mcp)
            checks.append(
                Check(
                    client,
                    f"{scope}: MCP server",
                    "problem" if error else "ok",
                    error or f"{found.mcp_table} in {found.mcp_file}",
                    fix if error else None,
                )
            )
    if present:
        sdk = _mcp_sdk_error()
        if sdk:
            checks.append(
                Check(
                    client,
                    "MCP SDK",
                    "problem",
                    f"the MCP server cannot start: {sdk}",
                    mcp_extra_fix(),
                )
            )
    elif client_home.is_dir():
        checks.append(
            Check(
                client,
                "install",
                "warn",
                f"{label} is here ({client_home}) but lossless is not installed: "
                "sessions are only stored by `lcm import`",
                f"lcm install {client}",
            )
        )
    else:
        checks.append(Check(client, "install", "info", f"{label} not found; not installed"))
    return checks


def mcp_extra_fix() -> str:
    """How to add the ``mcp`` extra to the environment this lcm runs from."""
    from lossless.integrations.environment import mcp_extra_instructions

    return mcp_extra_instructions()


def check_store_and_worker(config: Config) -> list[Check]:
    checks = _check_store_and_worker(config)
    if config.storage_backend == "sqlite":
        checks.extend(check_creation_leftovers(config.db_path))
    return checks


def check_creation_leftovers(db_path: Path) -> list[Check]:
    """Removes the temporary files of SQLite store creations that were killed
    (store.sqlite.creation): the next creation removes them too, but once a
    store exists nothing is created any more."""
    from lossless.store.sqlite import creation

    removed = creation.remove_leftovers(db_path)
    building = [
        f"{left.file.name} (process {left.pid})"
        for left in creation.leftovers(db_path)
        if not left.gone
    ]
    checks: list[Check] = []
    if removed:
        checks.append(
            Check(
                "store",
                "leftovers",
                "ok",
                f"removed {len(removed)} file(s) left by a store creation that was killed: "
                + ", ".join(file.name for file in removed),
            )
        )
    if building:
        checks.append(
            Check(
                "store",
                "leftovers",
                "info",
                "a store being built by a running process (it takes the store's name "
                "when whole, or is dropped if another was first): " + ", ".join(building),
            )
        )
    return checks


def _check_store_and_worker(config: Config) -> list[Check]:
    from lossless.engine.engine import Engine
    from lossless.errors import LosslessError
    from lossless.worker import DONE_AT, LAST_ERROR, REQUESTED_AT, is_pending, running_worker_pid

    checks: list[Check] = []
    if config.storage_backend == "sqlite" and not config.db_path.exists():
        return [
            Check(
                "store",
                "open",
                "info",
                f"no store yet at {config.db_path}: the first hook or `lcm import` creates it",
            )
        ]
    try:
        engine = Engine.open(config=config)
    except LosslessError as exc:
        return [
            Check(
                "store",
                "open",
                "problem",
                str(exc),
                "see the message; a database migrated by a newer lossless needs that version",
            )
        ]
    with engine:
        store = engine.store
        try:
            info = store.info()
            stats = store.stats()
            conversations = store.conversations.list()
        except LosslessError as exc:
            return [Check("store", "read", "problem", str(exc), None)]
        where = info.get("path") or info.get("backend")
        checks.append(
            Check(
                "store",
                "open",
                "ok",
                f"{info.get('backend')} at {where}: {stats.conversations} conversations, "
                f"{stats.messages} messages, {stats.summaries} summaries",
            )
        )
        cap_mb = config.storage_size_cap_mb
        if cap_mb > 0:
            from lossless.size_cap import size_cap_warning

            size = int(info.get("bytes_on_disk", 0))
            warning = size_cap_warning(size, cap_mb)
            checks.append(
                Check(
                    "store",
                    "size cap",
                    "warn" if warning else "ok",
                    warning or f"{size / 1e6:,.0f} MB of a {cap_mb:,} MB cap",
                    "run `lcm gc`, or raise storage.size_cap_mb" if warning else None,
                )
            )
        migrations = info.get("migrations") or []
        checks.append(
            Check("store", "migrations", "ok", f"{len(migrations)} applied, ledger verified")
        )
        off = store.capabilities.vector_search_off
        if config.semantic_enabled and store.capabilities.vector_search is None and off:
            # The store's open found why (pgvector missing, or a privilege) and
            # the administrator's SQL that turns it on; search stays lexical.
            checks.append(
                Check(
                    "store",
                    "semantic search",
                    "warn",
                    f"off on this store: {off}",
                    "search stays full-text until then; `lcm config set semantic.enabled "
                    "false` if that is meant",
                )
            )
        damage = store.integrity_check()
        checks.append(
            Check(
                "store",
                "integrity",
                "problem" if damage else "ok",
                "; ".join(damage[:3]) if damage else "files and full-text indexes are consistent",
                "restore from a backup or `lcm export` what still reads and re-import it; "
                "`lcm verify` shows which conversations are affected"
                if damage
                else None,
            )
        )
        if stats.quarantined:
            checks.append(
                Check(
                    "store",
                    "quarantine",
                    "warn",
                    f"{stats.quarantined} transcript line(s) could not be imported and are "
                    "kept in quarantine",
                    "look at them with `lcm import --json` output or the quarantine table",
                )
            )
        pending = [c for c in conversations if is_pending(c)]
        worker_pid = running_worker_pid(config.home)
        now = time.time()
        stale = [
            c for c in pending if now - float(c.metadata.get(REQUESTED_AT) or now) > STALE_REQUEST_S
        ]
        if worker_pid is not None:
            checks.append(
                Check(
                    "worker",
                    "running",
                    "ok",
                    f"pid {worker_pid or '?'}; {len(pending)} conversation(s) waiting",
                )
            )
        elif stale:
            checks.append(
                Check(
                    "worker",
                    "backlog",
                    "problem",
                    f"{len(stale)} compaction request(s) waiting over {STALE_REQUEST_S // 60} "
                    "minutes and no worker running",
                    "run `lcm worker --once` (and check logs/worker.log for why it stopped)",
                )
            )
        else:
            checks.append(
                Check(
                    "worker",
                    "idle",
                    "ok",
                    f"not running; {len(pending)} recent request(s) waiting"
                    if pending
                    else "not running; nothing waiting",
                )
            )
        backlog = store.search.index_backlog()
        if backlog and worker_pid is None:
            checks.append(
                Check(
                    "worker",
                    "substring index",
                    "warn",
                    f"{backlog} message(s) are not in the substring index yet and no worker "
                    "is building it (regex grep reads them one by one meanwhile)",
                    "run `lcm worker --once`",
                )
            )
        elif backlog:
            checks.append(
                Check("worker", "substring index", "ok", f"{backlog} message(s) left to index")
            )
        failed = [c for c in conversations if c.metadata.get(LAST_ERROR)]
        if failed:
            last = max(failed, key=lambda c: float(c.metadata.get(DONE_AT) or 0))
            checks.append(
                Check(
                    "worker",
                    "compaction errors",
                    "problem",
                    f"{len(failed)} conversation(s) failed to compact; latest "
                    f"({last.session_id}): {last.metadata[LAST_ERROR]}",
                    "fix the summarizer settings (`lcm config show`), then "
                    f"`lcm compact {last.id}` or let the next session end retry",
                )
            )
    return checks


def check_config(config: Config) -> list[Check]:
    """Each problem of config.toml / LCM_* (left out while the rest applies)."""
    if not config.problems:
        return [Check("config", "settings", "ok", "config.toml and LCM_* variables read")]
    return [
        Check(
            "config",
            "settings",
            "problem",
            f"{problem.describe()} (left out; the valid settings are in use)",
            "fix that line, or `lcm config unset NAME` / `lcm config set NAME VALUE`",
        )
        for problem in config.problems
    ]


def check_summarizer(config: Config, *, probe: bool = True) -> list[Check]:
    """The provider can be built and, unless ``probe`` is False, answers a real call."""
    import shlex

    from lossless.summarize.configured import summarizer_from_config

    provider = config.summarizer_provider
    origin = config.origins.get("summarizer.provider", "default")
    if provider == "command":
        argv = shlex.split(config.summarizer_command)
        if argv and shutil.which(argv[0]) is None and not Path(argv[0]).is_file():
            return [
                Check(
                    "summarizer",
                    provider,
                    "problem",
                    f"summarizer.command runs {argv[0]!r}, which is not on PATH",
                    "install it or set summarizer.command in $LCM_HOME/config.toml",
                )
            ]
    try:
        built = summarizer_from_config(config)
    except Exception as exc:
        return [
            Check(
                "summarizer",
                provider,
                "problem",
                f"cannot build the {provider!r} summarizer ({origin}): {exc}",
                "fix summarizer.* in $LCM_HOME/config.toml (`lcm config show`)",
            )
        ]
    detail = f"{built.name} ({origin})"
    if provider == "extractive":
        detail += "; offline, no LLM: lcm_expand_query returns evidence, not answers"
        return [Check("summarizer", provider, "ok", detail)]
    if not probe:
        return [Check("summarizer", provider, "ok", detail + "; not called (--no-probe)")]
    failure = probe_summarizer(built, timeout_s=PROBE_TIMEOUT_S)
    if failure is not None:
        return [
            Check(
                "summarizer",
                provider,
                "problem",
                f"{detail}: a one-line test call failed: {failure}; until it works every "
                "summary falls back to truncation",
                "fix summarizer.* (`lcm config show`: key, model, base_url, command), "
                "then run `lcm doctor` again",
            )
        ]
    return [Check("summarizer", provider, "ok", detail + "; a one-line test call answered")]


def probe_summarizer(summarizer: object, *, timeout_s: float) -> str | None:
    """Make one tiny real call to the provider; None when it answered, else the cause.

    The call is a few tokens each way and is bounded by ``timeout_s`` (retries
    included), so a dead endpoint cannot hang `lcm doctor`.
    """
    from lossless.summarize.completion import CompletionRequest
    from lossless.summarize.configured import language_model_of
    from lossless.summarize.errors import SummarizerError

    model = language_model_of(summarizer)  # type: ignore[arg-type]
    if model is None:
        return None
    request = CompletionRequest(
        system="You are a health check. Reply with the single word OK.",
        user="Reply with OK.",
        max_output_tokens=8,
        timeout_s=timeout_s,
    )
    try:
        answer = model.complete(request)
    except SummarizerError as exc:
        return f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # an SDK bug or an unexpected reply shape: still the cause
        return f"{type(exc).__name__}: {exc}"
    if not answer.text.strip():
        return "the provider answered with empty text"
    return None


def check_outbox(config: Config) -> list[Check]:
    """What hooks captured offline (PostgreSQL): nothing waiting, waiting, or stuck."""
    from lossless.errors import LosslessError
    from lossless.offline_capture import outbox_path, outbox_state
    from lossless.store import is_shared

    try:
        state = outbox_state(config)
    except LosslessError as exc:
        return [Check("outbox", "read", "problem", str(exc), None)]
    if state is None or not state.pending:
        if not is_shared(config) and state is None:
            return []
        return [Check("outbox", "backlog", "ok", "empty: nothing captured offline is waiting")]
    if state.lasting:
        return [
            Check(
                "outbox",
                "backlog",
                "problem",
                state.describe(),
                "fix what the error names (`lcm status` and `lcm postgres status` show the "
                "store's side); until then hooks keep capturing and nothing is lost; then the "
                f"next hook or `lcm worker --once` delivers the backlog ({outbox_path(config)})",
            )
        ]
    return [
        Check(
            "outbox",
            "backlog",
            "warn",
            state.describe(),
            "the next hook that can use the server delivers it, or run `lcm worker --once`",
        )
    ]


def check_hook_log(config: Config) -> list[Check]:
    path = config.log_dir / "hooks.log"
    try:
        lines = path.read_text("utf-8", errors="replace").splitlines()[-2000:]
    except FileNotFoundError:
        return [Check("hooks", "log", "info", "no hook has run yet")]
    except OSError as exc:
        return [Check("hooks", "log", "warn", f"cannot read {path}: {exc}", None)]
    cutoff = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - RECENT_LOG_S))
    entries = [line for line in lines if line[:4].isdigit()]
    recent = [line for line in entries if line[:19] >= cutoff]
    errors = [line for line in recent if _hook_status(line) == "error"]
    # A hook that met a store error on a live server and captured offline
    # (`lossless.hooks.dispatch`): its data is safe, its cause is not fixed.
    # (The summarizer's health lines are warnings in this log too.)
    warned = [
        line for line in recent if _hook_status(line) == "warn" and "captured offline" in line
    ]
    runs = len(recent)
    checks: list[Check] = []
    if errors:
        checks.append(
            Check(
                "hooks",
                "recent errors",
                "warn",
                f"{len(errors)} of {runs} hook run(s) in the last 24h failed; last: "
                f"{errors[-1][:300]}",
                f"see {path} (a failed hook never interrupts the session; the next one catches up)",
            )
        )
    if warned:
        checks.append(
            Check(
                "hooks",
                "store errors",
                "warn",
                f"{len(warned)} of {runs} hook run(s) in the last 24h met a store error on a "
                f"live server and captured offline; last: {warned[-1][:600]}",
                "nothing was lost (see the outbox check); if it repeats, fix its cause: a "
                "statement_timeout or lock_timeout set for this role or database, a missing "
                f"privilege, the schema (see {path})",
            )
        )
    if checks:
        return checks
    last = entries[-1][:20] if entries else "never"
    return [Check("hooks", "log", "ok", f"{runs} run(s) in the last 24h; last at {last}")]


# A hook log line: stamp, event, session (not on failures), pid, then the status
# word (``lossless.hooks.log``). Matched here, not searched for anywhere in the
# line: a note such as "store error (...)" is not a failed hook.
_HOOK_LINE = re.compile(r"\S+ \S+ (?:session=\S+ )?pid=\d+ (\w+) ")


def _hook_status(line: str) -> str | None:
    found = _HOOK_LINE.match(line)
    return found.group(1) if found else None


def check_hook_server(config: Config) -> list[Check]:
    from lossless.hook_server.control import state

    if not config.hooks_server:
        origin = config.origins.get("hooks.server", "default")
        return [
            Check(
                "hooks",
                "server",
                "info",
                f"off ({origin}): every hook runs in its own process",
                "`lcm config unset hooks.server` turns it back on",
            )
        ]
    found = state(config.home)
    if found.running:
        return [Check("hooks", "server", "ok", found.describe())]
    return [
        Check(
            "hooks",
            "server",
            "info",
            "not running: the next hook runs in its own process and starts it "
            f"(it exits after {config.hooks_server_idle_s} s without a hook)",
        )
    ]


def run_checks(
    config: Config,
    *,
    project_dir: Path | None = None,
    probe_commands: bool = True,
    probe_summarizer: bool = True,
) -> list[Check]:
    """Every check, in display order."""
    from lossless.integrations.commands import lcm_argv

    probe = _Probe(probe_commands)
    checks: list[Check] = []
    me = lcm_argv()
    error = probe.error(me)
    checks.append(
        Check("lcm", "this install", "problem" if error else "ok", error or " ".join(me), None)
    )
    project = (project_dir or Path.cwd()).resolve()
    scopes: list[tuple[Scope, Path | None]] = [("user", None), ("project", project)]
    for client in ("claude-code", "codex"):
        checks.extend(check_client(client, config, scopes, probe))
    checks.extend(check_config(config))
    checks.extend(check_store_and_worker(config))
    checks.extend(check_outbox(config))
    checks.extend(check_summarizer(config, probe=probe_summarizer))
    checks.extend(check_hook_log(config))
    checks.extend(check_hook_server(config))
    return checks
