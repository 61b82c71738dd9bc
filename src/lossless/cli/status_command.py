"""What ``lcm status`` does once its arguments are read, without click.

The click command (``cli/history.py``) and the click-free start
(``cli/fast_path.py``) both run ``run_status`` with ``cli.lines.PrintedLines``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lossless.jsonable import to_jsonable

if TYPE_CHECKING:
    from lossless.cli.lines import Lines
    from lossless.cli.state import CliState
    from lossless.config import Config
    from lossless.engine.engine import Engine
    from lossless.engine.status import Status
    from lossless.store.contract import EscalationTally


def status_engine(state: CliState) -> Engine:
    """The engine ``lcm status`` reports on. When the store cannot be opened the
    error still fails the command, and says what waits in the outbox: hooks go
    on capturing offline meanwhile, and an operator asks status first."""
    from lossless.errors import StoreError

    try:
        return state.engine(lenient=True)
    except StoreError as exc:
        outbox = _outbox(state.config(lenient=True))
        if outbox is None or not outbox["pending"]:
            raise
        raise type(exc)(
            f"{exc}; meanwhile the outbox holds {outbox['described']}",
            code=exc.code,
            transient=exc.transient,
        ) from exc


def run_status(engine: Engine, *, sizes: bool, as_json: bool, out: Lines) -> None:
    """Print what is stored and whether compaction keeps up."""
    report = engine.status()
    info, stats = report.store, report.stats
    by_table = engine.store.size_by_table() if sizes else None
    escalation = engine.store.summaries.escalation()
    spend = _spend(engine.config)
    cap_mb = engine.config.storage_size_cap_mb
    from lossless.size_cap import size_cap_warning

    cap_warning = size_cap_warning(int(info.get("bytes_on_disk", 0)), cap_mb)
    hook_server = _hook_server(engine.config)
    outbox = _outbox(engine.config)
    if as_json:
        out.emit(
            {
                "store": info,
                **({"size_by_table": by_table} if by_table is not None else {}),
                "size_cap": {"mb": cap_mb, "warning": cap_warning},
                "stats": to_jsonable(stats),
                "summary_levels": to_jsonable(escalation),
                "summarizer_spend": spend,
                "redactions": report.redactions,
                "substring_index_backlog": report.substring_index_backlog,
                "home": report.home,
                "compaction": {
                    "pending": report.compaction_pending,
                    "errors": {str(k): v for k, v in report.compaction_errors.items()},
                    "worker_pid": report.worker_pid,
                    "summarizer": report.summarizer,
                },
                "config_problems": report.config_problems,
                "semantic": _semantic_json(report),
                "hook_server": hook_server,
                "outbox": outbox,
            }
        )
        return

    def show(line: str) -> None:
        out.wrapped(line, indent=15)

    show(f"home:          {report.home}")
    show(f"backend:       {info['backend']} ({info.get('path', '')})")
    if info.get("server_version"):
        show(f"server:        PostgreSQL {info['server_version']}")
    if info.get("sqlite_version"):
        show(f"sqlite:        {info['sqlite_version']}")
    show(f"schema:        {', '.join(info.get('migrations', [])) or 'none'}")
    if "bytes_on_disk" in info:
        cap = f" of a {cap_mb:,} MB cap" if cap_mb > 0 else ""
        show(f"size:          {info['bytes_on_disk'] / 1e6:.1f} MB{cap}")
        if cap_warning is not None:
            show(f"warning:       {cap_warning}")
    if by_table is not None:
        total = sum(by_table.values()) or 1
        for table, size in by_table.items():
            if size * 100 >= total:  # tables under 1% would only be noise
                out.line(f"  {table:<22} {size / 1e6:9.1f} MB  {100 * size / total:3.0f}%")
    pool = info.get("pool")
    if isinstance(pool, dict):
        show(
            f"pool:          {pool.get('size')} open, {pool.get('available')} idle, "
            f"max {pool.get('max')}, {pool.get('waiting')} waiting, "
            f"{pool.get('errors')} error(s)"
        )
    show(f"conversations: {stats.conversations}  {_by_client(stats.by_client)}")
    show(f"messages:      {stats.messages} ({stats.message_tokens} tokens)")
    show(f"parts:         {stats.parts}   native records: {stats.native_records}")
    show(f"summaries:     {stats.summaries} ({stats.summary_tokens} tokens)")
    _show_levels(escalation, out)
    if spend is not None:
        _show_spend(spend, out)
    show(f"large files:   {stats.large_files}")
    show(f"quarantined:   {stats.quarantined} line(s)")
    if report.substring_index_backlog:
        show(
            f"substring index: {report.substring_index_backlog} message(s) not indexed yet "
            "(the worker adds them; regex grep scans them meanwhile)"
        )
    if report.semantic is not None:
        out.line(f"search:        {report.semantic.describe()}")
        if report.semantic.active:
            out.line(f"  semantic coverage: {report.semantic.coverage}")
        progress = report.semantic.progress
        if progress is not None and progress.total_pending:
            waiting = ", ".join(f"{k} {v}" for k, v in progress.pending.items() if v)
            out.line(f"embedding backlog: {progress.total_pending} item(s) ({waiting})")
    total = sum(report.redactions.values())
    detail = ", ".join(f"{k} {v}" for k, v in report.redactions.items())
    show(f"redacted:      {total} secret(s)" + (f" ({detail})" if detail else ""))
    worker = "not running" if report.worker_pid is None else f"running (pid {report.worker_pid})"
    show(
        f"compaction:    {len(report.compaction_pending)} conversation(s) waiting, "
        f"{len(report.compaction_errors)} with an error; worker {worker}; "
        f"summarizer {report.summarizer}"
    )
    for conversation_id, error in sorted(report.compaction_errors.items()):
        show(f"  conversation {conversation_id}: {error}")
    show(f"hook server:   {hook_server['described']}")
    if outbox is not None and (outbox["pending"] or outbox.get("error")):
        show(f"outbox:        {outbox['described']} (see `lcm doctor`)")
    for problem in report.config_problems:
        show(f"config problem: {problem} (left out; the valid settings are in use)")


def _semantic_json(report: Status) -> dict[str, object] | None:
    semantic = report.semantic
    if semantic is None:
        return None
    progress = semantic.progress
    return {
        "active": semantic.active,
        "model": semantic.model,
        "note": semantic.describe(),
        "coverage": semantic.coverage if semantic.active else None,
        "embedded": None if progress is None else progress.embedded,
        "backlog": None if progress is None else progress.pending,
    }


def _outbox(config: Config) -> dict[str, Any] | None:
    """What hooks captured offline and why (None: this home has no outbox)."""
    from lossless.store import is_shared

    if not is_shared(config):
        # Hooks capture offline only for a shared store; a local one's status
        # does not pay for the outbox's imports (`lcm doctor` looks anyway).
        return None
    from lossless.errors import LosslessError
    from lossless.offline_capture import outbox_state

    try:
        state = outbox_state(config)
    except LosslessError as exc:
        # Status still reports the store; the damaged outbox is named.
        return {"pending": None, "error": str(exc), "described": f"cannot read it: {exc}"}
    return None if state is None else state.to_json()


def _hook_server(config: Config) -> dict[str, Any]:
    """The resident hook server: on or off, running or not, its pid and idle timeout."""
    from lossless.hook_server.control import state

    if not config.hooks_server:
        origin = config.origins.get("hooks.server", "default")
        return {"enabled": False, "running": False, "described": f"off ({origin})"}
    found = state(config.home)
    return {
        "enabled": True,
        "running": found.running,
        "pid": found.pid,
        "idle_timeout_s": found.idle_timeout_s,
        "requests": found.requests,
        "described": found.describe(),
    }


def _spend(config: Config) -> dict[str, Any] | None:
    """Use of a paid summarizer against its caps (None for offline providers)."""
    from dataclasses import asdict

    from lossless.summarize.spend import LEDGER_FILE, PAID_PROVIDERS, SpendLedger

    if config.summarizer_provider not in PAID_PROVIDERS:
        return None
    use = SpendLedger(config.home / LEDGER_FILE).use()
    caps = config.spend_caps
    return {"use": asdict(use), "caps": asdict(caps), "reached": use.over(caps)}


def _show_spend(spend: dict[str, Any], out: Lines) -> None:
    use, caps = spend["use"], spend["caps"]

    def against(used: int, cap: int) -> str:
        return f"{used:,}/{cap:,}" if cap else f"{used:,} (no cap)"

    out.wrapped(
        f"spend:         calls {against(use['calls_hour'], caps['calls_per_hour'])} this hour, "
        f"{against(use['calls_day'], caps['calls_per_day'])} today; tokens "
        f"{against(use['tokens_hour'], caps['tokens_per_hour'])} this hour, "
        f"{against(use['tokens_day'], caps['tokens_per_day'])} today",
        indent=15,
    )
    if spend["reached"]:
        out.wrapped(
            f"  cap reached ({spend['reached']}): summaries come from the offline summarizer",
            indent=15,
            status="warn",
        )


def _show_levels(tally: EscalationTally, out: Lines) -> None:
    """Summaries by escalation level; the newest degraded one and why, in colour."""
    if not tally.levels:
        return
    order = ["normal", "aggressive", "fallback", "unrecorded"]
    known = [level for level in order if level in tally.levels]
    counts = ", ".join(f"{tally.levels[level]:,} {level}" for level in known)
    degraded = tally.levels.get("fallback", 0) + tally.levels.get("aggressive", 0)
    out.wrapped(f"  by level:    {counts}", indent=15, status="warn" if degraded else None)
    if tally.latest_level is not None:
        why = tally.latest_why or "no cause recorded"
        out.wrapped(
            f"  latest {tally.latest_level} ({tally.latest_at}): {why}",
            indent=15,
            status="warn",
        )
        if tally.latest_level == "fallback":
            out.wrapped("  (fallback = truncation; `lcm doctor` tests the summarizer)", indent=15)


def _by_client(by_client: dict[str, int]) -> str:
    if not by_client:
        return ""
    return "(" + ", ".join(f"{k} {v}" for k, v in sorted(by_client.items())) + ")"
