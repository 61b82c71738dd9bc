"""Hook dispatch: ``lcm hook <Event>`` reads the event, routes it, never fails the session.

Online (the store opens) the event's ingest runs, then what the event adds:
the DAG view at ``SessionStart``, recalled memories at ``UserPromptSubmit``,
memory-use feedback at ``Stop``, and compaction requests that wake the
worker. On PostgreSQL a hook that cannot use the store captures offline
instead (``lossless.offline_capture``), whatever the store error: the client's
turn never waits on or fails for the server, and nothing is lost. Its log line
says which case it was: ``server unavailable (...)`` only for a server that
could not be reached; ``store error (<SQLSTATE or class>: ...)`` with status
``warn`` for an error a live server answered with, naming whether it clears
by itself, and pointing at ``lcm doctor`` (which shows the outbox and why
hooks fill it).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from lossless.delegation import CHILD_MARKER_ENV, inside_subagent
from lossless.hooks.context import session_context
from lossless.hooks.events import EVENTS, HookInputError, HookOutcome, parse_payload
from lossless.hooks.ingest import (
    DEFAULT_INLINE_BYTES,
    background_ingest,
    defer_backlog,
    ingest_transcripts,
    kind_for,
    path_field,
    transcript_paths,
)
from lossless.hooks.log import log_event, log_failure
from lossless.hooks.recall import recall_memories, record_memory_use
from lossless.hooks.replayed import last_injected, only_new, remember_injected, summary_ids
from lossless.offline_capture import capture_offline, deliver_outbox

if TYPE_CHECKING:
    from collections.abc import Callable

    from lossless.config import Config
    from lossless.engine.engine import Engine
    from lossless.engine.ingest import FileImportResult
    from lossless.errors import StoreError
    from lossless.models import Conversation

# A hook on PostgreSQL gives up on the server after this long and captures
# into the outbox instead: the client waits on the hook, and the outbox loses
# nothing. It replaces postgres.connect_timeout_s for hooks only (2 s is
# libpq's floor); a connect_timeout in the URL still wins.
HOOK_CONNECT_TIMEOUT_S = 2
# Outbox events a hook that reaches the server delivers itself; the worker it
# starts delivers the rest, so a long offline stretch never slows a hook down.
HOOK_DELIVERY_LIMIT = 16


def main(
    event: str,
    *,
    home: Path | None = None,
    client: str | None = None,
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    inline_bytes: int | None = DEFAULT_INLINE_BYTES,
    background: bool = False,
    lock_fd: int | None = None,
    start_server: Callable[[Config], int | None] | None = None,
    note: str = "",
) -> int:
    """Run one hook from the command line. Always returns 0.

    ``background`` marks the detached process a hook starts for a large
    backlog (see ``DEFAULT_INLINE_BYTES``; None: never defer); ``lock_fd`` is
    the session's background-import lock, already taken by that hook and
    inherited. ``start_server``: the hook runs inline because the home has
    no hook server; this starts one for the next hook
    (``lossless.hook_server.control.start_detached``) unless ``hooks.server``
    is off. ``note`` goes into the log line.

    Never raises, never writes anything but the event's JSON answer to
    stdout: a hook's job is to stay out of the way.
    """
    started = time.monotonic()
    out = stdout if stdout is not None else sys.stdout
    config: Config | None = None
    raw = b""
    try:
        from lossless.config import load_config

        # Lenient: a typo in config.toml must not stop capturing; the hook runs
        # on the valid settings and its log line names the problem.
        config = load_config(home, lenient=True)
        raw = _read_stdin(stdin)
        payload = parse_payload(raw)
        if inside_subagent():
            log_event(
                config, event, payload, "skipped", time.monotonic() - started, CHILD_MARKER_ENV
            )
            return 0
        outcome = handle(
            event,
            payload,
            config,
            client=client,
            inline_bytes=None if background else inline_bytes,
            background=background,
            lock_fd=lock_fd,
        )
        if outcome.output:
            out.write(outcome.output)
            out.flush()
        notes = outcome.notes + [f"config: {p.describe()}" for p in config.problems]
        if start_server is not None and config.hooks_server:
            pid = start_server(config)
            if pid is not None:
                notes.append(f"started hook server {pid}")
        if note:
            notes.append(note)
        if config.storage_size_cap_mb > 0 and config.storage_backend == "sqlite":
            from lossless.size_cap import warn_once

            warning = warn_once(config.db_path, config.log_dir, config.storage_size_cap_mb)
            if warning is not None:
                notes.append(f"size cap: {warning}")
        log_event(
            config, event, payload, outcome.status, time.monotonic() - started, "; ".join(notes)
        )
    except BaseException as exc:
        # SystemExit/KeyboardInterrupt included: the client must see exit 0.
        detail = f"{type(exc).__name__}: {exc}"
        if note:
            detail = f"{note}: {detail}"
        if config is not None:
            detail += "".join(f"; config: {p.describe()}" for p in config.problems)
        if not isinstance(exc, HookInputError):
            import traceback

            detail += "\n" + traceback.format_exc()
        else:
            detail += f" (stdin: {len(raw)} bytes: {raw[:200]!r})"
        log_failure(config, home, event, detail, time.monotonic() - started)
    return 0


def _read_stdin(stdin: IO[bytes] | None) -> bytes:
    stream = stdin if stdin is not None else sys.stdin.buffer
    if stdin is None and sys.stdin.isatty():
        # Run by hand without piped input: reading would wait for ^D forever.
        raise HookInputError("no event JSON on stdin (it is a terminal)")
    return stream.read()


def handle(
    event: str,
    payload: dict[str, Any],
    config: Config,
    *,
    client: str | None = None,
    inline_bytes: int | None = DEFAULT_INLINE_BYTES,
    background: bool = False,
    lock_fd: int | None = None,
) -> HookOutcome:
    """Do what ``event`` asks (see the module docstring). Raises on failure."""
    if event not in EVENTS:
        raise HookInputError(f"unknown hook event {event!r}; known: {', '.join(EVENTS)}")
    named = payload.get("hook_event_name")
    outcome = HookOutcome()
    if background:
        outcome.notes.append("background")
    if isinstance(named, str) and named and named != event:
        outcome.notes.append(f"payload says {named!r}")
    if event == "SessionStart":
        source = payload.get("source")
        if source not in ("compact", "resume"):
            outcome.notes.append(f"source {source!r}: nothing to inject")
            return outcome
    from lossless.errors import StoreError

    final = event == "SessionEnd"
    try:
        engine = _open_engine(config)
    except StoreError as exc:
        from lossless.store import is_shared

        if not is_shared(config):
            raise
        return _capture_instead(config, event, payload, outcome, exc, final=final, client=client)
    try:
        with engine:
            _handle_online(
                engine,
                event,
                payload,
                outcome,
                final=final,
                client=client,
                inline_bytes=inline_bytes,
                background=background,
                lock_fd=lock_fd,
            )
    except StoreError as exc:
        if engine.store.coordination is None:
            raise
        # The store failed mid-hook (the server went away, or answered with
        # an error). Whatever reached it is stored and the capture repeats
        # it; delivery skips what the server already has.
        outcome.output = ""
        return _capture_instead(config, event, payload, outcome, exc, final=final, client=client)
    return outcome


def _handle_online(
    engine: Engine,
    event: str,
    payload: dict[str, Any],
    outcome: HookOutcome,
    *,
    final: bool,
    client: str | None,
    inline_bytes: int | None,
    background: bool,
    lock_fd: int | None,
) -> None:
    if engine.store.capabilities.distributed_coordination:
        # Before this hook's own ingest, so what was captured offline reaches
        # the server first.
        _deliver_from_hook(engine, outcome)
    transcript = path_field(payload, "transcript_path")
    try:
        if transcript is not None and not transcript.exists():
            # Claude Code fires SessionStart and the first UserPromptSubmit
            # before it writes the transcript, and `claude mcp list` fires a
            # SessionEnd for one it never writes: nothing to ingest yet, not a
            # failure. Recall below still runs (project from cwd, the prompt
            # from the payload).
            outcome.notes.append("no transcript yet: nothing to ingest")
            results = []
        elif background:
            results = background_ingest(
                engine, payload, final=final, client=client, lock_fd=lock_fd
            )
        elif defer_backlog(engine, event, payload, client, inline_bytes, outcome):
            results = []
        else:
            results = ingest_transcripts(engine, payload, final=final, client=client)
    except HookInputError as exc:
        if event != "SessionStart":
            raise
        # The summaries already stored are still worth injecting.
        outcome.notes.append(str(exc))
        results = []
    for result in results:
        outcome.notes.append(_describe(result))
        if result.conversation_id is not None:
            outcome.conversation_ids.append(result.conversation_id)
    if event == "SessionStart":
        conversation = _session_conversation(engine, payload, results)
        if conversation is not None:
            full = session_context(engine, conversation)
            session_id = payload.get("session_id")
            session_key = session_id if isinstance(session_id, str) and session_id else None
            carried: set[str] = set()
            if payload.get("source") == "compact" and session_key is not None:
                # What this process got at its start is carried across the
                # compaction, though not yet written to the transcript.
                carried = last_injected(engine.config.home, session_key)
            context = only_new(full, transcript, carried)
            if session_key is not None:
                remember_injected(
                    engine.config.home, session_key, sorted(carried | set(summary_ids(context)))
                )
            if full and not context:
                outcome.notes.append("the DAG view since the last compaction is still in context")
            elif context != full:
                outcome.notes.append("only summaries new since the last injection")
            if context:
                outcome.output = json.dumps(
                    {
                        "hookSpecificOutput": {
                            "hookEventName": "SessionStart",
                            "additionalContext": context,
                        }
                    },
                    ensure_ascii=False,
                )
    if event == "UserPromptSubmit":
        recall_memories(engine, payload, outcome)
    elif event == "Stop":
        record_memory_use(engine, payload, outcome)
    _schedule(engine, outcome, sweep=final)


def _describe(result: FileImportResult) -> str:
    name = Path(result.path).name
    if result.error:
        return f"{name}: {result.error}"
    text = f"{name}: +{result.messages_added}"
    if result.messages_skipped:
        text += f" ({result.messages_skipped} already stored)"
    if result.problems:
        text += f", {len(result.problems)} problem line(s)"
    if result.held_back_bytes:
        text += f", {result.held_back_bytes}B held back"
    return text


def _session_conversation(
    engine: Engine, payload: dict[str, Any], results: list[FileImportResult]
) -> Conversation | None:
    if results and results[0].conversation_id is not None:
        return engine.store.conversations.get(results[0].conversation_id)
    session_id = payload.get("session_id")
    if isinstance(session_id, str) and session_id:
        return engine.store.conversations.find_by_session(session_id)
    return None


def _schedule(engine: Engine, outcome: HookOutcome, *, sweep: bool) -> None:
    """Record compaction requests for conversations that need one; wake the worker."""
    from lossless.engine.compaction_requests import schedule_compaction

    wanted = schedule_compaction(engine, dict.fromkeys(outcome.conversation_ids, sweep))
    if wanted:
        _wake_worker(engine.config, outcome)


def _wake_worker(config: Config, outcome: HookOutcome) -> None:
    from lossless.worker import start_detached

    if outcome.worker_started is not None:
        return
    outcome.worker_started = start_detached(config)
    if outcome.worker_started is not None:
        outcome.notes.append(f"started worker {outcome.worker_started}")


def _open_engine(config: Config) -> Engine:
    from lossless.engine.engine import Engine

    # Only a server backend reads the setting; a local one ignores it.
    return Engine.open(config=_with_hook_connect_timeout(config))


def _with_hook_connect_timeout(config: Config) -> Config:
    name = "postgres.connect_timeout_s"
    return dataclasses.replace(
        config,
        values={**config.values, name: HOOK_CONNECT_TIMEOUT_S},
        origins={**config.origins, name: "hook"},
    )


def _capture_instead(
    config: Config,
    event: str,
    payload: dict[str, Any],
    outcome: HookOutcome,
    exc: StoreError,
    *,
    final: bool,
    client: str | None,
) -> HookOutcome:
    """Put what this hook would have ingested into the outbox (the store not usable)."""
    from lossless.offline_capture import CaptureCause

    cause = CaptureCause.of(exc)
    outcome.notes.append(cause.note())
    if not cause.unavailable:
        outcome.status = "warn"
    try:
        paths = transcript_paths(payload, config)
        if not paths[0].exists():
            outcome.notes.append("no transcript yet: nothing to capture")
            return outcome
        if not paths[0].is_file():
            raise HookInputError(f"transcript {paths[0]} does not exist or is not a file")
        transcripts = [(path, kind_for(path, client)) for path in paths]
        outcome.notes.extend(capture_offline(config, transcripts, final=final, cause=cause))
    except HookInputError as bad:
        if event != "SessionStart":
            raise
        outcome.notes.append(str(bad))
    return outcome


def _deliver_from_hook(engine: Engine, outcome: HookOutcome) -> None:
    from lossless.engine.compaction_requests import schedule_compaction

    delivery = deliver_outbox(engine, limit=HOOK_DELIVERY_LIMIT)
    if delivery is None:
        return
    outcome.notes.append(delivery.describe())
    wanted = schedule_compaction(engine, delivery.conversations)
    if wanted or delivery.remaining:
        _wake_worker(engine.config, outcome)
