"""Hook handlers for Claude Code and Codex: ``lcm hook <Event>`` with the event JSON on stdin.

What each event does:

- ``UserPromptSubmit``, ``PostToolUse``, ``Stop``, ``SubagentStop``,
  ``PostCompact``: ingest what the transcript (``transcript_path``) gained since
  the last hook, and the sub-agent transcripts under ``<session>/subagents/``.
  The trailing assistant message is held back (``final=False``): it may still
  gain blocks, and the next hook stores it whole.
- ``PreCompact``: the same ingest, before the client rewrites its context.
  Never blocks the client's compaction (it only reads and stores).
- ``SessionEnd``: a final ingest (nothing held back) and a ``sweep`` compaction
  request.
- ``SessionStart`` with ``source`` ``compact`` or ``resume``: ingest, then print
  the session's summary DAG (top summaries with ids and time ranges, and how
  to expand them) as ``hookSpecificOutput.additionalContext``.

Sessions lossless starts itself (a ``claude -p`` summarizer or sub-agent,
marked by ``LCM_IN_SUMMARIZER``) are not captured.

After an ingest, if the conversation has more raw tokens outside its fresh tail
than one leaf chunk, a compaction request is recorded and the background
worker is started detached (``lossless.worker``). Compaction never runs here.

On PostgreSQL (``storage.backend = postgresql``) a hook that cannot use the
server (down, unreachable, refusing us) still captures: the raw bytes the
transcripts gained go into the local outbox (``$LCM_HOME/outbox.db``) and the
hook returns at once, quietly. The next hook that reaches the server, and the
worker, deliver the outbox in capture order, each event once (receipts on the
server). Nothing ever reads history from the outbox: commands that read
(``lcm status``, MCP) fail clearly while the server is away.

A hook never breaks the user's session: every failure is caught, written to
``$LCM_HOME/logs/hooks.log`` with a traceback, and the process exits 0 with
nothing on stdout. Imports are kept lazy so start-up stays short.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

# Set in every model process lossless starts; a `claude -p` started that way
# fires these hooks too, and capturing it would store lossless's own prompts.
from lossless.delegation import CHILD_MARKER_ENV, inside_subagent

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.engine.engine import Engine
    from lossless.engine.ingest import FileImportResult
    from lossless.models import Conversation
    from lossless.sources.base import ParseEvent, SourceKind
    from lossless.store.outbox import Outbox, OutboxEvent
    from lossless.worker import FileLock

EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "SessionEnd",
)
INGEST_EVENTS = frozenset(
    {"UserPromptSubmit", "PostToolUse", "Stop", "SubagentStop", "PreCompact", "PostCompact"}
)
CLIENTS: tuple[str, ...] = ("claude-code", "codex")

# Claude Code drops additionalContext beyond 10,000 characters; stay clear of it.
MAX_CONTEXT_CHARS = 9_500
# How long a hook waits for another hook of the same transcript to finish its
# ingest. Past it, it ingests anyway: idempotent keys make that safe.
INGEST_LOCK_WAIT_S = 10.0
# A backlog larger than this (lossless installed in the middle of a long
# session, a resumed old session) is imported by a detached process instead:
# done inline it could outlast the client's hook timeout, get killed before its
# cursor is saved, and start over at every hook.
DEFAULT_INLINE_BYTES = 8 * 1024 * 1024
BACKGROUND_FINAL_WAIT_S = 30 * 60.0
# The event fields a background import needs (a PostToolUse payload can carry
# megabytes of tool output that it does not).
_BACKGROUND_FIELDS = (
    "session_id",
    "transcript_path",
    "agent_transcript_path",
    "cwd",
    "hook_event_name",
    "source",
)
LOG_FILE = "hooks.log"
LOG_ROTATE_BYTES = 5 * 1024 * 1024
# A hook on PostgreSQL gives up on the server after this long and captures
# into the outbox instead: the client waits on the hook, and the outbox loses
# nothing. It replaces postgres.connect_timeout_s for hooks only (2 s is
# libpq's floor); a connect_timeout in the URL still wins.
HOOK_CONNECT_TIMEOUT_S = 2
# Outbox events a hook that reaches the server delivers itself; the worker it
# starts delivers the rest, so a long offline stretch never slows a hook down.
HOOK_DELIVERY_LIMIT = 16
CAPTURE_KIND = "transcript"
OUTBOX_LOCK = "outbox.lock"


HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "SessionEnd",
)


def canonical_event(event: str) -> str:
    """The event's canonical spelling (clients and users vary the case)."""
    return next((e for e in HOOK_EVENTS if e.lower() == event.lower()), event)


class HookInputError(Exception):
    """The event JSON is unusable (empty, malformed, missing a field)."""


@dataclass(slots=True)
class HookOutcome:
    """What one hook did: ``output`` goes to stdout, ``notes`` to the log line."""

    output: str = ""
    notes: list[str] = field(default_factory=list)
    conversation_ids: list[int] = field(default_factory=list)
    worker_started: int | None = None


# --------------------------------------------------------------------------- entry


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
) -> int:
    """Run one hook from the command line. Always returns 0.

    ``background`` marks the detached process a hook starts for a large
    backlog (see ``DEFAULT_INLINE_BYTES``; None: never defer); ``lock_fd`` is
    the session's background-import lock, already taken by that hook and
    inherited.

    Never raises, never writes anything but the event's JSON answer to
    stdout: a hook's job is to stay out of the way.
    """
    started = time.monotonic()
    out = stdout if stdout is not None else sys.stdout
    config: Config | None = None
    raw = b""
    try:
        from lossless.config import load_config

        config = load_config(home)
        raw = _read_stdin(stdin)
        payload = parse_payload(raw)
        if inside_subagent():
            _log(config, event, payload, "skipped", time.monotonic() - started, CHILD_MARKER_ENV)
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
        _log(
            config,
            event,
            payload,
            "ok",
            time.monotonic() - started,
            "; ".join(outcome.notes),
        )
    except BaseException as exc:
        # SystemExit/KeyboardInterrupt included: the client must see exit 0.
        detail = f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, HookInputError):
            import traceback

            detail += "\n" + traceback.format_exc()
        else:
            detail += f" (stdin: {len(raw)} bytes: {raw[:200]!r})"
        _log_safely(config, home, event, detail, time.monotonic() - started)
    return 0


def _read_stdin(stdin: IO[bytes] | None) -> bytes:
    stream = stdin if stdin is not None else sys.stdin.buffer
    if stdin is None and sys.stdin.isatty():
        # Run by hand without piped input: reading would wait for ^D forever.
        raise HookInputError("no event JSON on stdin (it is a terminal)")
    return stream.read()


def parse_payload(raw: bytes) -> dict[str, Any]:
    """The event JSON as an object; ``HookInputError`` for anything else."""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        raise HookInputError("empty stdin: expected the hook event JSON")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise HookInputError(f"stdin is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HookInputError(f"hook event JSON must be an object, got {type(data).__name__}")
    return data


# --------------------------------------------------------------------------- dispatch


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
        # The server went away mid-hook. Whatever reached it is stored and the
        # capture repeats it; delivery skips what the server already has.
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
    try:
        if background:
            results = _background_ingest(
                engine, payload, final=final, client=client, lock_fd=lock_fd
            )
        elif _defer(engine, event, payload, client, inline_bytes, outcome):
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
            context = session_context(engine, conversation)
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
        _recall(engine, payload, outcome)
    elif event == "Stop":
        _usage_feedback(engine, payload, outcome)
    _schedule(engine, outcome, sweep=final)


RECALLED_KEY = "lcm_recalled_memory_ids"


def _recall(engine: Engine, payload: dict[str, Any], outcome: HookOutcome) -> None:
    """Add the few memories most relevant to the prompt as ``additionalContext``."""
    from lossless.engine.recall import recall_for_prompt, render_additional_context

    config = engine.config
    prompt = payload.get("prompt")
    if not config.get("recall.enabled") or not isinstance(prompt, str) or not prompt.strip():
        return
    conversation = (
        engine.store.conversations.get(outcome.conversation_ids[0])
        if outcome.conversation_ids
        else None
    )
    cwd = payload.get("cwd")
    project = conversation.project if conversation else cwd if isinstance(cwd, str) else None
    if not project:
        return
    recalled = recall_for_prompt(
        engine.store,
        prompt,
        project,
        int(config.get("recall.budget_bytes")),
        limit=int(config.get("recall.limit")),
    )
    if not recalled:
        return
    if conversation is not None:
        # Remembered so the Stop hook can tell which ones the reply relied on.
        engine.store.conversations.update_metadata(
            conversation.id, {RECALLED_KEY: [r.memory.id for r in recalled]}
        )
    outcome.notes.append(f"recalled {len(recalled)} memory(ies)")
    outcome.output = json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "UserPromptSubmit",
                "additionalContext": render_additional_context(recalled),
            }
        },
        ensure_ascii=False,
    )


def _usage_feedback(engine: Engine, payload: dict[str, Any], outcome: HookOutcome) -> None:
    """Memories the last reply cited count as used (they will rank higher)."""
    for conversation_id in outcome.conversation_ids[:1]:
        conversation = engine.store.conversations.get(conversation_id)
        surfaced = conversation.metadata.get(RECALLED_KEY) if conversation else None
        if not surfaced:
            continue
        # Only now: most Stop hooks follow a prompt that surfaced no memory.
        from lossless.engine.recall import feedback_from_response

        recent = engine.store.messages.list(
            conversation_id, after_seq=max(-1, engine.store.messages.count(conversation_id) - 20)
        )
        replies = [m.content for m in recent if m.role == "assistant"]
        replies.extend(_unstored_replies(engine, payload))
        used = feedback_from_response(engine.store, "\n".join(replies[-3:]), list(surfaced))
        if used:
            outcome.notes.append(f"{len(used)} recalled memory(ies) used")
        engine.store.conversations.update_metadata(conversation_id, {RECALLED_KEY: []})


def _unstored_replies(engine: Engine, payload: dict[str, Any]) -> list[str]:
    """Assistant text past the transcript's cursor: the reply a Stop hook just saw.

    Ingest holds the last assistant message back until the transcript moves
    on (it may still grow), so it is read here without being stored.
    """
    from lossless.models import NewMessage
    from lossless.sources import detect_kind, parser_for

    path = _path_field(payload, "transcript_path")
    if path is None or not path.is_file():
        return []
    path = confine_transcript(path, engine.config, "transcript_path")
    kind = detect_kind(path)
    if kind is None:
        return []
    cursor = engine.store.cursors.get(str(path.resolve()))
    events, _ = parser_for(kind).parse(
        path,
        start_offset=cursor.byte_offset if cursor else 0,
        start_line=cursor.line_no if cursor else 0,
        final=True,
    )
    return [e.content for e in events if isinstance(e, NewMessage) and e.role == "assistant"]


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


# --------------------------------------------------------------------------- ingest


def transcript_paths(payload: dict[str, Any], config: Config) -> list[Path]:
    """The transcripts an event points at: the session's, then its sub-agents'.

    Parents come first so a sub-agent's conversation can link to its parent.
    Each is confined (``confine_transcript``): a payload is input, and a hook
    must not copy an arbitrary file of the machine into the store.
    """
    main_path = _path_field(payload, "transcript_path")
    if main_path is None:
        raise HookInputError("the event has no transcript_path")
    main_path = confine_transcript(main_path, config, "transcript_path")
    found = [main_path]
    # Claude Code keeps sub-agent transcripts in <session>/subagents/*.jsonl
    # beside <session>.jsonl.
    subagents = main_path.with_suffix("") / "subagents"
    if subagents.is_dir():
        found.extend(sorted(p for p in subagents.glob("*.jsonl") if p.is_file()))
    agent_path = _path_field(payload, "agent_transcript_path")
    if agent_path is not None:
        agent_path = confine_transcript(agent_path, config, "agent_transcript_path")
        if agent_path not in found:
            found.append(agent_path)
    return found


def transcript_roots(config: Config) -> list[Path]:
    """Folders a hook may read transcripts from: the clients' own, plus ``transcript_dirs``."""
    roots = [
        config.path("claude_home") / "projects",
        config.path("codex_home") / "sessions",
        config.path("codex_home") / "archived_sessions",
    ]
    extra = str(config.get("transcript_dirs") or "")
    roots.extend(Path(p).expanduser() for p in extra.split(os.pathsep) if p.strip())
    return roots


def confine_transcript(path: Path, config: Config, key: str) -> Path:
    """``path`` if it looks like a client's transcript under an allowed folder.

    The path is resolved first (symbolic links, ``..``), so neither a link nor
    a relative path climbs out of the folder. Only ``*.jsonl`` files count.
    """
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):
        raise HookInputError(f"{key} {path} cannot be resolved (a symbolic link loop?)") from None
    if resolved.suffix != ".jsonl":
        raise HookInputError(f"{key} {path} is not a transcript (*.jsonl); not read")
    for root in transcript_roots(config):
        try:
            real_root = root.resolve()
        except (OSError, RuntimeError):
            continue
        if resolved.is_relative_to(real_root):
            return path
    where = ", ".join(str(r) for r in transcript_roots(config))
    raise HookInputError(
        f"{key} {path} is outside the folders transcripts are read from ({where}); "
        "add its folder to the transcript_dirs setting (LCM_TRANSCRIPT_DIRS) to allow it"
    )


def _path_field(payload: dict[str, Any], key: str) -> Path | None:
    value = payload.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise HookInputError(f"{key} must be a string, got {type(value).__name__}")
    path = Path(value).expanduser()
    if not path.is_absolute():
        cwd = payload.get("cwd")
        if isinstance(cwd, str) and cwd:
            path = Path(cwd) / path
    return path


def ingest_transcripts(
    engine: Engine, payload: dict[str, Any], *, final: bool, client: str | None = None
) -> list[FileImportResult]:
    """Import each transcript's delta, one hook per transcript at a time.

    Two hooks of one session can fire together (Claude Code runs PostToolUse
    hooks of parallel tools concurrently); a per-transcript lock makes the
    second wait for the first and then read only what is left, instead of both
    parsing the same bytes.
    """
    from lossless.worker import FileLock

    results: list[FileImportResult] = []
    paths = transcript_paths(payload, engine.config)
    if not paths[0].is_file():
        raise HookInputError(f"transcript {paths[0]} does not exist or is not a file")
    importer = engine.importer()
    for path in paths:
        kind = _kind_for(path, client)
        lock = FileLock(_ingest_lock_path(engine.config, path))
        lock.acquire(INGEST_LOCK_WAIT_S)
        try:
            results.append(importer.import_file(path, kind, final=final))
        finally:
            lock.release()
    failed = results[0]
    if failed.error and failed.messages_added == 0:
        raise HookInputError(f"cannot ingest {failed.path}: {failed.error}")
    return results


def _backlog(engine: Engine, paths: list[Path]) -> int:
    """Bytes of these transcripts not yet read (whole files never read before)."""
    total = 0
    for path in paths:
        try:
            size = path.stat().st_size
        except OSError:
            continue
        cursor = engine.store.cursors.get(str(path.resolve()))
        total += max(0, size - (cursor.byte_offset if cursor else 0))
    return total


def _background_lock(config: Config, payload: dict[str, Any]) -> FileLock:
    from lossless.worker import FileLock

    main_path = _path_field(payload, "transcript_path")
    assert main_path is not None
    return FileLock(_ingest_lock_path(config, main_path).with_suffix(".background.lock"))


def _defer(
    engine: Engine,
    event: str,
    payload: dict[str, Any],
    client: str | None,
    inline_bytes: int | None,
    outcome: HookOutcome,
) -> bool:
    """Hand a large backlog to a detached ``lcm hook --background``; True if handed off."""
    if inline_bytes is None:
        return False
    paths = transcript_paths(payload, engine.config)
    lock = _background_lock(engine.config, payload)
    if not lock.acquire():
        if event != "SessionEnd":
            outcome.notes.append("a background import of this session is running")
            return True
        # The final ingest must still happen: queue it behind the running import.
        backlog = -1
    else:
        backlog = _backlog(engine, paths)
        if backlog <= inline_bytes:
            lock.release()
            return False
    from lossless.worker import spawn_detached

    config = engine.config
    argv = [sys.executable, "-m", "lossless", "--home", str(config.home), "hook", event]
    argv += ["--background"] + (["--client", client] if client else [])
    # The child inherits the lock taken above, so a hook firing before the
    # child has started sees the import as running and does not start another.
    passed: tuple[int, ...] = ()
    if lock.held and sys.platform != "win32":
        passed = (lock.hand_over(),)
        argv += ["--lock-fd", str(passed[0])]
    else:
        lock.release()
    brief = {k: payload[k] for k in _BACKGROUND_FIELDS if k in payload}
    pid = spawn_detached(config, argv, stdin=json.dumps(brief).encode("utf-8"), pass_fds=passed)
    if backlog < 0:
        outcome.notes.append(f"final import queued behind the running one: {pid}")
    else:
        outcome.notes.append(f"{backlog} bytes to read: background import {pid}")
    return True


def _background_ingest(
    engine: Engine,
    payload: dict[str, Any],
    *,
    final: bool,
    client: str | None,
    lock_fd: int | None,
) -> list[FileImportResult]:
    from lossless.worker import FileLock

    lock = _background_lock(engine.config, payload)
    if lock_fd is not None:
        lock = FileLock.adopt(lock.path, lock_fd)
    # A final (SessionEnd) import waits its turn; any other gives way to a
    # background import of the session that got there first.
    elif not lock.acquire(BACKGROUND_FINAL_WAIT_S if final else 0.0, poll_s=0.2):
        return []
    try:
        return ingest_transcripts(engine, payload, final=final, client=client)
    finally:
        lock.release()


def _kind_for(path: Path, client: str | None) -> Any:
    if client in CLIENTS:
        return client
    from lossless.sources import detect_kind

    return detect_kind(path)


def _ingest_lock_path(config: Config, path: Path) -> Path:
    import hashlib

    digest = hashlib.sha256(str(path.resolve()).encode("utf-8", "surrogateescape")).hexdigest()
    return config.home / "locks" / f"ingest-{digest[:24]}.lock"


def _session_conversation(
    engine: Engine, payload: dict[str, Any], results: list[FileImportResult]
) -> Conversation | None:
    if results and results[0].conversation_id is not None:
        return engine.store.conversations.get(results[0].conversation_id)
    session_id = payload.get("session_id")
    if isinstance(session_id, str) and session_id:
        return engine.store.conversations.find_by_session(session_id)
    return None


# --------------------------------------------------------------------------- compaction


def _schedule(engine: Engine, outcome: HookOutcome, *, sweep: bool) -> None:
    """Record compaction requests for conversations that need one; wake the worker."""
    from lossless.worker import schedule_compaction

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


# --------------------------------------------------------------------------- offline capture


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
    exc: BaseException,
    *,
    final: bool,
    client: str | None,
) -> HookOutcome:
    """Put what this hook would have ingested into the outbox (server not usable)."""
    reason = str(exc).split(";")[0]
    outcome.notes.append(f"server unavailable ({reason}): captured offline")
    try:
        outcome.notes.extend(capture_offline(config, payload, final=final, client=client))
    except HookInputError as bad:
        if event != "SessionStart":
            raise
        outcome.notes.append(str(bad))
    return outcome


def outbox_path(config: Config) -> Path:
    from lossless.store.outbox import OUTBOX_FILE

    return config.home / OUTBOX_FILE


def capture_offline(
    config: Config, payload: dict[str, Any], *, final: bool, client: str | None = None
) -> list[str]:
    """Capture what each transcript gained into the outbox; one note per transcript.

    Each transcript's capture starts where the previous capture of it ended
    (a mark kept in the outbox), or at the start of the file the first time:
    the server's cursor cannot be asked. Capturing more than needed is safe,
    delivery skips what the server already has; capturing less would lose it.
    """
    from lossless.store.outbox import Outbox
    from lossless.worker import FileLock

    paths = transcript_paths(payload, config)
    if not paths[0].is_file():
        raise HookInputError(f"transcript {paths[0]} does not exist or is not a file")
    notes: list[str] = []
    with Outbox(outbox_path(config)) as outbox:
        for path in paths:
            kind = _kind_for(path, client)
            if kind is None:
                notes.append(f"{path.name}: not a recognised transcript")
                continue
            lock = FileLock(_ingest_lock_path(config, path))
            lock.acquire(INGEST_LOCK_WAIT_S)
            try:
                size = _capture_delta(outbox, path.resolve(), kind, final=final)
            finally:
                lock.release()
            notes.append(f"{path.name}: {size}B captured")
    return notes


def _capture_delta(outbox: Outbox, path: Path, kind: SourceKind, *, final: bool) -> int:
    """Capture ``path`` from its mark to where an import would stop now; bytes captured."""
    import base64

    from lossless.engine.ingest import ANCHOR_BYTES, _anchor_hash
    from lossless.sources import line_before, parser_for

    key = f"{CAPTURE_KIND}:{path}"
    mark = outbox.mark(key)
    start = start_line = 0
    if isinstance(mark, dict):
        offset, line = mark.get("offset"), mark.get("line")
        if (
            isinstance(offset, int)
            and isinstance(line, int)
            and offset <= path.stat().st_size
            and _anchor_hash(path, offset) == mark.get("anchor")
        ):
            start, start_line = offset, line
        # Otherwise the file was rewritten under us: capture all of it again.
    # Parsed (not stored) to find where an import would stop: a trailing
    # message still being written is left for the next capture, as an
    # import leaves it for the next hook.
    events, progress = parser_for(kind).parse(
        path, start_offset=start, start_line=start_line, final=final
    )
    for _ in events:
        pass
    end = progress.end_offset
    if end <= start:
        return 0
    # The bytes just before the start travel too: the parser reads the line
    # before its start, and the cursor's anchor hashes the bytes before it.
    context = start
    before = line_before(path, start)
    with path.open("rb") as fh:
        if before is not None:
            fh.seek(start - 1)
            context = start - len(before) - (1 if fh.read(1) == b"\n" else 0)
        context = max(0, min(context, start - ANCHOR_BYTES))
        fh.seek(context)
        data = fh.read(end - context)
    outbox.put(
        CAPTURE_KIND,
        {
            "path": str(path),
            "kind": kind,
            "final": final,
            "context": context,
            "start": start,
            "start_line": start_line,
            "end": end,
            "data": base64.b64encode(data).decode("ascii"),
        },
        mark=(key, {"offset": end, "line": progress.end_line, "anchor": _anchor_hash(path, end)}),
    )
    return end - start


@dataclass(slots=True)
class OutboxDelivery:
    """What one delivery of the outbox did; ``conversations`` maps id -> final seen."""

    delivered: int = 0
    duplicates: int = 0
    remaining: int = 0
    error: str | None = None
    conversations: dict[int, bool] = field(default_factory=dict)

    def describe(self) -> str:
        text = f"outbox: {self.delivered} delivered, {self.remaining} left"
        if self.duplicates:
            text += f", {self.duplicates} already delivered"
        return text + (f" (stopped: {self.error})" if self.error else "")


def deliver_outbox(engine: Engine, *, limit: int | None = None) -> OutboxDelivery | None:
    """Deliver what hooks captured offline to the server, in order, each once.

    None when there is nothing to do: not a shared store, no outbox, an empty
    one, or another process delivering it right now.
    """
    from lossless.errors import StoreError
    from lossless.store.outbox import Outbox
    from lossless.worker import FileLock

    config = engine.config
    if engine.store.coordination is None or not outbox_path(config).exists():
        return None
    lock = FileLock(config.home / "locks" / OUTBOX_LOCK)
    if not lock.acquire():
        return None
    try:
        with Outbox(outbox_path(config)) as outbox:
            if outbox.pending() == 0:
                return None
            found = OutboxDelivery()

            def apply(_store: Any, event: OutboxEvent) -> None:
                if event.kind != CAPTURE_KIND:
                    raise StoreError(f"unknown outbox event kind {event.kind!r}")
                result = deliver_capture(engine, event)
                if result.error:
                    raise StoreError(f"{result.path}: {result.error}")
                if result.conversation_id is not None:
                    final = bool(isinstance(event.payload, dict) and event.payload.get("final"))
                    previous = found.conversations.get(result.conversation_id, False)
                    found.conversations[result.conversation_id] = previous or final

            # Not atomic with its receipt: an import commits in batches of its
            # own. It is idempotent, so a crash between the two repeats it
            # harmlessly.
            report = outbox.deliver(engine.store, apply, atomic=False, limit=limit)
    finally:
        lock.release()
    found.delivered, found.duplicates = report.delivered, report.duplicates
    found.remaining, found.error = report.remaining, report.error
    return found


def deliver_capture(engine: Engine, event: OutboxEvent) -> FileImportResult:
    """Import one captured delta: from the transcript while it still holds the
    captured bytes, else from the captured bytes themselves."""
    import base64

    from lossless.worker import FileLock

    p = event.payload
    assert isinstance(p, dict)
    path = Path(str(p["path"]))
    kind = _source_kind(p["kind"])
    data = base64.b64decode(str(p["data"]))
    context = int(str(p["context"]))
    lock = FileLock(_ingest_lock_path(engine.config, path))
    lock.acquire(INGEST_LOCK_WAIT_S)
    try:
        if _holds(path, context, data):
            result = engine.importer().import_file(path, kind, final=bool(p["final"]))
            if result.error is None:
                return result
        return _import_captured(engine, path, kind, p, data)
    finally:
        lock.release()


def _source_kind(value: object) -> SourceKind:
    if value not in ("claude-code", "codex", "generic"):
        raise HookInputError(f"outbox event names an unknown transcript kind {value!r}")
    return value


def _holds(path: Path, offset: int, data: bytes) -> bool:
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            return fh.read(len(data)) == data
    except OSError:
        return False


def _import_captured(
    engine: Engine, path: Path, kind: SourceKind, p: dict[str, Any], data: bytes
) -> FileImportResult:
    """Import a captured delta whose transcript is gone or was rewritten."""
    import tempfile

    from lossless.engine.ingest import FileImportResult, _anchor_hash
    from lossless.models import SourceCursor
    from lossless.sources import parser_for
    from lossless.timeutil import utc_now_iso

    store = engine.store
    result = FileImportResult(path=str(path), kind=kind)
    cursor = store.cursors.get(str(path))
    conversation = store.conversations.get(cursor.conversation_id) if cursor else None
    start, line, end = int(p["start"]), int(p["start_line"]), int(p["end"])
    if cursor is not None and conversation is not None and start <= cursor.byte_offset:
        if cursor.byte_offset >= end:
            # Delivered before (an earlier event read the live file past it).
            result.conversation_id = conversation.id
            return result
        start, line = cursor.byte_offset, cursor.line_no
    with tempfile.TemporaryDirectory(prefix="lcm-outbox-") as tmp:
        # Same trailing names as the original: parsers read the session id and
        # the sub-agent layout from them.
        mirror = Path(tmp).joinpath(*path.parts[-3:])
        mirror.parent.mkdir(parents=True, exist_ok=True)
        with mirror.open("wb") as fh:
            # At its original offset (the file is sparse before it), so byte
            # offsets, line numbers and the keys derived from them are the
            # ones a live import would have stored.
            fh.seek(int(p["context"]))
            fh.write(data)
        # final=True: the capture already stopped where a live import would.
        events, progress = parser_for(kind).parse(
            mirror, start_offset=start, start_line=line, final=True
        )
        source = str(path)
        importer = engine.importer()
        importer._consume(path, (_relocated(e, source) for e in events), conversation, result, None)
        if result.conversation_id is not None:
            store.cursors.put(
                SourceCursor(
                    source_path=source,
                    conversation_id=result.conversation_id,
                    byte_offset=progress.end_offset,
                    line_no=progress.end_line,
                    anchor_key=progress.last_key,
                    anchor_sha256=_anchor_hash(mirror, progress.end_offset),
                    updated_at=utc_now_iso(),
                )
            )
    return result


def _relocated(event: ParseEvent, source: str) -> ParseEvent:
    """``event`` as read from ``source`` rather than from its stand-in copy."""
    from lossless.models import NewMessage, NewNativeRecord
    from lossless.sources.base import ParseProblem

    if isinstance(event, NewMessage):
        records = tuple(dataclasses.replace(r, source_path=source) for r in event.native_records)
        return dataclasses.replace(event, native_records=records)
    if isinstance(event, NewNativeRecord | ParseProblem):
        return dataclasses.replace(event, source_path=source)
    return event


def _deliver_from_hook(engine: Engine, outcome: HookOutcome) -> None:
    from lossless.worker import schedule_compaction

    delivery = deliver_outbox(engine, limit=HOOK_DELIVERY_LIMIT)
    if delivery is None:
        return
    outcome.notes.append(delivery.describe())
    wanted = schedule_compaction(engine, delivery.conversations)
    if wanted or delivery.remaining:
        _wake_worker(engine.config, outcome)


# --------------------------------------------------------------------------- context


def session_context(engine: Engine, conversation: Conversation) -> str:
    """The DAG view injected after a compaction or on resume, or '' if nothing to say.

    The summaries currently in the conversation's context (the tops of its
    DAG) with ids, depths and time ranges, newest kept when space runs out
    (``engine.dag.session_start_view``, the same view as ``lcm dag``), framed
    by what is stored and how to get it back, within ``MAX_CONTEXT_CHARS``.
    """
    from lossless.engine.dag import session_start_view

    store = engine.store
    message_count = store.messages.count(conversation.id)
    if message_count == 0:
        return ""
    head = (
        f"[lossless] Session {conversation.session_id}: all {message_count} messages are "
        "stored verbatim in lossless (lcm)."
    )
    howto = (
        "To recover anything no longer in your context: lcm_grep / lcm_search (MCP tools) "
        "find messages and summaries; lcm_expand with a summary_id shows what it was built "
        "from; lcm_describe shows one id in full; lcm_expand_query answers a question from "
        "the history. In a shell: `lcm grep PATTERN`, `lcm expand SUM_ID`."
    )
    budget = MAX_CONTEXT_CHARS - len(head) - len(howto) - 2
    view = session_start_view(store, conversation.id, max_chars=budget)
    if not view:
        return f"{head} None of them are summarized yet.\n{howto}"
    return f"{head}\n{view}\n{howto}"[:MAX_CONTEXT_CHARS]


# --------------------------------------------------------------------------- log


def _log(
    config: Config | None,
    event: str,
    payload: dict[str, Any] | None,
    status: str,
    seconds: float,
    detail: str,
) -> None:
    if config is None:
        raise RuntimeError("no configuration to find the log folder")
    session = payload.get("session_id") if isinstance(payload, dict) else None
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    line = (
        f"{stamp}Z {event} session={session if isinstance(session, str) else '-'} "
        f"pid={os.getpid()} {status} {seconds * 1000:.0f}ms {detail}".rstrip()
    )
    _append(config.log_dir, line)


def _append(log_dir: Path, text: str) -> None:
    # A failing hook logs its payload's problem, which may quote the payload:
    # secrets never reach a log either (built-in detectors; the user's
    # patterns need the configuration, which may be what failed).
    from lossless.redact import redact_text

    text = redact_text(text).text
    log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = log_dir / LOG_FILE
    try:
        if path.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(path, path.with_suffix(".log.1"))
    except OSError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8", errors="replace") as fh:
        fh.write(text + "\n")


def _log_safely(
    config: Config | None, home: Path | None, event: str, detail: str, seconds: float
) -> None:
    """Log a failure even when the configuration itself is what failed."""
    try:
        if config is not None:
            log_dir = config.log_dir
        elif home is not None:
            log_dir = Path(home).expanduser() / "logs"
        else:
            # load_config failed (a broken config.toml): find the home the way
            # it would have, so the error still lands where the user looks.
            from lossless.config import default_home

            log_dir = default_home(os.environ) / "logs"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        _append(
            log_dir,
            f"{stamp}Z {event} pid={os.getpid()} error {seconds * 1000:.0f}ms {detail}".rstrip(),
        )
    except BaseException:
        # Nowhere left to report; staying silent is the hook's contract.
        pass
