"""Ingest policy for hooks: which transcripts an event points at, and how they are read.

Each transcript's delta is imported under a per-transcript lock (hooks of one
session fire together). A backlog too large to read within a hook's time
(lossless installed in the middle of a long session, a resumed old one) is
handed to a detached ``lcm hook --background``, which holds the session's
background-import lock while it works.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lossless.hooks.confine import confine_transcript
from lossless.hooks.events import CLIENTS, HookInputError, HookOutcome
from lossless.process import INGEST_LOCK_WAIT_S, FileLock, ingest_lock_path, spawn_detached

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.engine.engine import Engine
    from lossless.engine.ingest import FileImportResult

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


def transcript_paths(payload: dict[str, Any], config: Config) -> list[Path]:
    """The transcripts an event points at: the session's, then its sub-agents'.

    Parents come first so a sub-agent's conversation can link to its parent.
    Each is confined to the clients' folders (``confine``).
    """
    main_path = path_field(payload, "transcript_path")
    if main_path is None:
        raise HookInputError("the event has no transcript_path")
    main_path = confine_transcript(main_path, config, "transcript_path")
    found = [main_path]
    # Claude Code keeps sub-agent transcripts in <session>/subagents/*.jsonl
    # beside <session>.jsonl.
    subagents = main_path.with_suffix("") / "subagents"
    if subagents.is_dir():
        found.extend(sorted(p for p in subagents.glob("*.jsonl") if p.is_file()))
    agent_path = path_field(payload, "agent_transcript_path")
    if agent_path is not None:
        agent_path = confine_transcript(agent_path, config, "agent_transcript_path")
        if agent_path not in found:
            found.append(agent_path)
    return found


def path_field(payload: dict[str, Any], key: str) -> Path | None:
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
    results: list[FileImportResult] = []
    paths = transcript_paths(payload, engine.config)
    if not paths[0].is_file():
        raise HookInputError(f"transcript {paths[0]} does not exist or is not a file")
    importer = engine.importer()
    for path in paths:
        kind = kind_for(path, client)
        lock = FileLock(ingest_lock_path(engine.config.home, path))
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


def background_lock(config: Config, payload: dict[str, Any]) -> FileLock:
    main_path = path_field(payload, "transcript_path")
    assert main_path is not None
    return FileLock(ingest_lock_path(config.home, main_path).with_suffix(".background.lock"))


def defer_backlog(
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
    lock = background_lock(engine.config, payload)
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


def background_ingest(
    engine: Engine,
    payload: dict[str, Any],
    *,
    final: bool,
    client: str | None,
    lock_fd: int | None,
) -> list[FileImportResult]:
    lock = background_lock(engine.config, payload)
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


def kind_for(path: Path, client: str | None) -> Any:
    if client in CLIENTS:
        return client
    from lossless.sources import detect_kind

    return detect_kind(path)
