"""Offline capture: what hooks could not store on the server, kept and delivered.

On PostgreSQL (``storage.backend = postgresql``) a hook that cannot use the
server still captures: the raw bytes the transcripts gained go into the local
outbox (``$LCM_HOME/outbox.db``) and the hook returns at once, quietly. The
next hook that reaches the server, and the worker, deliver the outbox in
capture order, each event once (receipts on the server). Nothing ever reads
history from the outbox: commands that read (``lcm status``, MCP) fail
clearly while the server is away.

Why a hook captured is a ``CaptureCause``: the server unavailable (down,
unreachable, timed out), or a store error a live server answered with, which
either clears by itself (a statement or lock timeout, a conflict with the
worker) or lasts until someone fixes it (a schema from a newer lossless, a
missing privilege). Hooks capture in every case, since a hook never loses
data nor fails the client's turn; the latest cause and the last delivery
failure are kept in the outbox, where ``outbox_state`` reads them for ``lcm
doctor`` and ``lcm status``. The outbox grows only as fast as the transcripts
do (each byte is captured once, from the previous capture's mark).

Used by hooks (capture, and a bounded delivery) and by the worker (delivery);
imports nothing heavy at its top level.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lossless.process import INGEST_LOCK_WAIT_S, FileLock, ingest_lock_path

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.engine.engine import Engine
    from lossless.engine.ingest import FileImportResult
    from lossless.errors import StoreError
    from lossless.sources.base import ParseEvent, SourceKind
    from lossless.store.outbox import Outbox, OutboxEvent

CAPTURE_KIND = "transcript"
OUTBOX_LOCK = "outbox.lock"
# Notes kept in the outbox (``Outbox.note``) for ``outbox_state``.
LAST_CAUSE = "last_cause"
DELIVERY_ERROR = "delivery_error"
# A store error's message in a log line and a note: room for its cause and fix.
CAUSE_CHARS = 400


@dataclass(frozen=True, slots=True)
class CaptureCause:
    """Why a hook captured offline instead of storing.

    ``unavailable``: the server could not be reached. Otherwise a live server
    answered with an error, ``label`` (SQLSTATE and condition, or the error's
    class) and ``message`` say which, and ``transient`` whether it clears
    without anyone acting.
    """

    unavailable: bool
    transient: bool
    label: str
    message: str

    @classmethod
    def of(cls, exc: StoreError) -> CaptureCause:
        from lossless.errors import StoreUnavailableError

        text = " ".join(str(exc).split())
        if isinstance(exc, StoreUnavailableError):
            # Its first clause names the server and libpq's reason; the rest
            # is the usual advice, said once in the docs.
            return cls(True, True, exc.label, text.split(";")[0])
        if len(text) > CAUSE_CHARS:
            text = text[: CAUSE_CHARS - 1] + "…"
        return cls(False, exc.transient, exc.label, text)

    def note(self) -> str:
        """The hook log's words for it."""
        if self.unavailable:
            return f"server unavailable ({self.message}): captured offline"
        said = f"store error ({self.label}: {self.message}): captured offline"
        if self.transient:
            return (
                said + "; the next hook or `lcm worker` delivers it (if it repeats: `lcm doctor`)"
            )
        return said + (
            "; this will not clear by itself: fix its cause (`lcm doctor`); "
            "hooks keep capturing until then"
        )

    def to_json(self) -> dict[str, Any]:
        from lossless.timeutil import utc_now_iso

        return {
            "at": utc_now_iso(),
            "unavailable": self.unavailable,
            "transient": self.transient,
            "label": self.label,
            "message": self.message,
        }


def outbox_path(config: Config) -> Path:
    from lossless.store.outbox import OUTBOX_FILE

    return config.home / OUTBOX_FILE


def capture_offline(
    config: Config,
    transcripts: Sequence[tuple[Path, SourceKind | None]],
    *,
    final: bool,
    cause: CaptureCause | None = None,
) -> list[str]:
    """Capture what each transcript gained into the outbox; one note per transcript.

    ``cause`` (why the store was not used) is kept in the outbox as its latest.

    Each transcript's capture starts where the previous capture of it ended
    (a mark kept in the outbox), or at the start of the file the first time:
    the server's cursor cannot be asked. Capturing more than needed is safe,
    delivery skips what the server already has; capturing less would lose it.
    """
    from lossless.store.outbox import Outbox

    notes: list[str] = []
    with Outbox(outbox_path(config)) as outbox:
        if cause is not None:
            outbox.note(LAST_CAUSE, cause.to_json())
        for path, kind in transcripts:
            if kind is None:
                notes.append(f"{path.name}: not a recognised transcript")
                continue
            lock = FileLock(ingest_lock_path(config.home, path))
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
            # Kept until a delivery gets past it, for `lcm doctor`.
            outbox.note(DELIVERY_ERROR, _failed_again(outbox, report.error))
    finally:
        lock.release()
    found.delivered, found.duplicates = report.delivered, report.duplicates
    found.remaining, found.error = report.remaining, report.error
    return found


def _failed_again(outbox: Outbox, error: str | None) -> dict[str, Any] | None:
    """The delivery-failure note after an attempt that stopped at ``error`` (None: it
    got through): when the failures began and how many attempts (by hooks and the
    worker) failed since, so ``lcm doctor`` shows a delivery stuck for hours as one."""
    from lossless.timeutil import utc_now_iso

    if error is None:
        return None
    now = utc_now_iso()
    before = outbox.noted(DELIVERY_ERROR)
    since, attempts = now, 0
    if isinstance(before, dict):
        # Notes from before these two fields count as one attempt at "at".
        since = str(before.get("since") or before.get("at") or now)
        counted = before.get("attempts")
        attempts = counted if isinstance(counted, int) else 1
    return {"at": now, "error": error, "since": since, "attempts": attempts + 1}


def outbox_position(config: Config) -> tuple[int, int] | None:
    """Where this home's outbox stands (``Outbox.position``); None without one."""
    from lossless.store.outbox import Outbox

    path = outbox_path(config)
    if not path.exists():
        return None
    with Outbox(path) as outbox:
        return outbox.position()


@dataclass(frozen=True, slots=True)
class OutboxState:
    """What waits in the outbox and why, for ``lcm doctor`` and ``lcm status``.

    ``last_cause``: ``CaptureCause.to_json()`` of the latest capture (None
    before any); ``delivery_error``: ``{"at", "error", "since", "attempts"}``
    of the last delivery that stopped at a failing event, until one gets past
    it (``since`` the first of the ``attempts`` that failed in a row).
    """

    pending: int
    payload_bytes: int
    oldest_at: str | None
    last_cause: dict[str, Any] | None
    delivery_error: dict[str, Any] | None

    @property
    def lasting(self) -> bool:
        """Events wait for a cause someone must fix: a delivery that fails, or a
        store error that does not clear by itself."""
        if not self.pending:
            return False
        cause = self.last_cause or {}
        return self.delivery_error is not None or not cause.get("transient", True)

    def describe(self) -> str:
        if not self.pending:
            return "empty"
        text = (
            f"{self.pending} event(s) captured offline waiting for the server "
            f"({self.payload_bytes / 1e6:.1f} MB), the oldest since {self.oldest_at}"
        )
        cause = self.last_cause
        if cause is not None:
            if cause.get("unavailable"):
                why = f"server unavailable ({cause.get('message')})"
            else:
                why = f"store error ({cause.get('label')}: {cause.get('message')})"
            text += f"; last captured at {cause.get('at')}: {why}"
        if self.delivery_error is not None:
            error = self.delivery_error
            text += f"; delivery stopped at {error.get('at')}: {error.get('error')}"
            if isinstance(error.get("attempts"), int) and error["attempts"] > 1:
                text += f" (failing since {error.get('since')}, {error['attempts']} attempts)"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "pending": self.pending,
            "payload_bytes": self.payload_bytes,
            "oldest_at": self.oldest_at,
            "last_cause": self.last_cause,
            "delivery_error": self.delivery_error,
            "described": self.describe(),
        }


def outbox_state(config: Config) -> OutboxState | None:
    """The outbox's backlog and notes; None when this home has no outbox."""
    from lossless.store.outbox import Outbox

    path = outbox_path(config)
    if not path.exists():
        return None
    with Outbox(path) as outbox:
        pending, size, oldest = outbox.backlog()
        cause, error = outbox.noted(LAST_CAUSE), outbox.noted(DELIVERY_ERROR)
    return OutboxState(
        pending,
        size,
        oldest,
        cause if isinstance(cause, dict) else None,
        error if isinstance(error, dict) else None,
    )


def deliver_capture(engine: Engine, event: OutboxEvent) -> FileImportResult:
    """Import one captured delta: from the transcript while it still holds the
    captured bytes, else from the captured bytes themselves."""
    import base64

    p = event.payload
    assert isinstance(p, dict)
    path = Path(str(p["path"]))
    kind = _source_kind(p["kind"])
    data = base64.b64decode(str(p["data"]))
    context = int(str(p["context"]))
    lock = FileLock(ingest_lock_path(engine.config.home, path))
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
    from lossless.errors import StoreError

    if value not in ("claude-code", "codex", "generic"):
        raise StoreError(f"outbox event names an unknown transcript kind {value!r}")
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
