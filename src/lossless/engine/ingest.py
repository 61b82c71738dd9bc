"""Import transcripts into the store: parse, prepare, append, remember how far.

Each file is read from where the last import stopped (its cursor) when the
file was only appended to; a file that changed underneath (the bytes before
the cursor differ) is re-read in full, and idempotent keys make that safe:
a message or native record already stored is skipped, never duplicated.
This is the seeds' anchor-based reconciliation: the anchor is the last
consumed line, checked by a hash of the bytes before the cursor.

Bad lines never stop an import: each is reported with file and line and kept
verbatim in the quarantine table; everything valid is imported. Nothing
already stored is changed by a failed import (every batch is a transaction).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lossless.engine import indexing
from lossless.engine.branches import ROLLBACK_EVENT, follow_rewinds, follow_rollbacks
from lossless.engine.sensitive import Redactors, redact_raw_line, redact_records
from lossless.errors import InputError, LosslessError
from lossless.models import Conversation, NewMessage, NewNativeRecord, SourceCursor
from lossless.redact import Redactor
from lossless.sources.base import ParseProblem, SessionInfo, SourceKind
from lossless.sources.generic import file_session_id
from lossless.store.contract import Repositories, Store
from lossless.store.hashing import raw_hash
from lossless.timeutil import normalize_ts, utc_now_iso

MessagePrep = Callable[[Conversation, NewMessage], NewMessage]
ProgressCallback = Callable[[int], None]

BATCH_MESSAGES = 2000
ANCHOR_BYTES = 4096
# A transcript written to within this many seconds may still be growing: its
# trailing assistant message could gain blocks, so it is held back.
LIVE_FILE_SECONDS = 120.0


@dataclass(slots=True)
class FileImportResult:
    path: str
    kind: str | None
    conversation_id: int | None = None
    session_id: str | None = None
    messages_added: int = 0
    messages_skipped: int = 0
    records_added: int = 0
    problems: list[str] = field(default_factory=list)
    resumed_from: int = 0
    pending_tail: bool = False
    held_back_bytes: int = 0
    redactions: dict[str, int] = field(default_factory=dict)
    # Forks followed to the branch the client is on (``engine.branches``).
    rewinds: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(slots=True)
class ImportReport:
    files: list[FileImportResult] = field(default_factory=list)

    @property
    def messages_added(self) -> int:
        return sum(f.messages_added for f in self.files)

    @property
    def messages_skipped(self) -> int:
        return sum(f.messages_skipped for f in self.files)

    @property
    def problems(self) -> int:
        return sum(len(f.problems) for f in self.files) + sum(1 for f in self.files if f.error)


def _anchor_hash(path: Path, offset: int) -> str | None:
    if offset <= 0:
        return None
    start = max(0, offset - ANCHOR_BYTES)
    with path.open("rb") as fh:
        fh.seek(start)
        return hashlib.sha256(fh.read(offset - start)).hexdigest()


# One pass, no copy: what no store accepts in text (NUL, lone UTF-16 surrogates).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _unstorable(text: str) -> str | None:
    # Almost every text is storable: shown by two C scans (a NUL search, and
    # for non-ASCII text the UTF-8 encode that only a lone surrogate fails)
    # instead of the regex's, which ran ~5 us per 550 characters, twice a
    # message. The regex then names what it finds first, as before.
    if "\x00" not in text:
        if text.isascii():
            return None
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            return None
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "U+0000 (NUL)"
    return "a lone UTF-16 surrogate (invalid Unicode)"


def _find_unstorable(value: object) -> str | None:
    if isinstance(value, str):
        return _unstorable(value)
    if isinstance(value, dict):
        for k, v in value.items():
            found = _find_unstorable(k) or _find_unstorable(v)
            if found:
                return found
    elif isinstance(value, list | tuple):
        for v in value:
            found = _find_unstorable(v)
            if found:
                return found
    return None


def _text_problem(message: NewMessage) -> str | None:
    """Why a message cannot be stored as given (it is quarantined instead), or None."""
    found = _unstorable(message.content)
    if found is None and message.metadata:
        found = _find_unstorable(message.metadata)
    for part in message.parts:
        if found is not None:
            break
        for text in (part.text, part.tool_name, part.tool_call_id):
            if text and (found := _unstorable(text)):
                break
        if found is None and part.metadata:
            found = _find_unstorable(part.metadata)
    if found is None:
        return None
    return (
        f"message text contains {found}, which lossless does not store; "
        "the line is kept verbatim in quarantine"
    )


class Importer:
    """Imports transcript files into one store. Reusable across files."""

    def __init__(
        self,
        store: Store,
        *,
        redactors: Redactors | None = None,
        prepare: Sequence[MessagePrep] = (),
        project_override: str | None = None,
        defer_substring_index: bool = False,
    ) -> None:
        self.store = store
        self.redactors = redactors
        self.prepare = list(prepare)
        #: The conversation the file being imported created, until it holds messages.
        self._created: int | None = None
        self.project_override = project_override
        # A bulk import leaves the trigram index to whoever runs it afterwards
        # (engine.indexing); otherwise each file's messages are indexed at once.
        self.defer_substring_index = defer_substring_index

    def import_file(
        self,
        path: Path,
        kind: SourceKind | None = None,
        *,
        final: bool | None = None,
        progress: ProgressCallback | None = None,
    ) -> FileImportResult:
        from lossless.sources import detect_kind, parser_for

        try:
            path = path.resolve()
        except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
            result = FileImportResult(path=str(path), kind=kind)
            result.error = f"cannot read {path}: symbolic link loop"
            return result
        result = FileImportResult(path=str(path), kind=kind)
        try:
            mode = path.stat().st_mode
            if not stat.S_ISREG(mode):
                # A FIFO or device named *.jsonl would block the import forever.
                what = "a named pipe" if stat.S_ISFIFO(mode) else "not a regular file"
                result.error = f"skipped: {what}"
                return result
            # Fail here, naming the cause, rather than as "not a recognised transcript".
            with path.open("rb"):
                pass
            if kind is None:
                kind = detect_kind(path)
                result.kind = kind
            if kind is None:
                result.error = "not a recognised transcript (Claude Code, Codex or message list)"
                return result
            if final is None:
                final = time.time() - path.stat().st_mtime > LIVE_FILE_SECONDS
            start_offset, start_line, conversation = self._resume_point(path)
            result.resumed_from = start_offset
            events, parse_progress = parser_for(kind).parse(
                path, start_offset=start_offset, start_line=start_line, final=final
            )
            self._created = None
            try:
                self._consume(path, events, conversation, result, progress)
            except BaseException:
                self._discard_created()
                raise
            result.pending_tail = parse_progress.pending_tail
            # What the parser left unread (an incomplete last line, or the last
            # message of a live session that may still grow) is read next time.
            result.held_back_bytes = max(0, path.stat().st_size - parse_progress.end_offset)
            if result.conversation_id is not None:
                self.store.cursors.put(
                    _cursor(
                        path,
                        result.conversation_id,
                        parse_progress.end_offset,
                        parse_progress.end_line,
                        parse_progress.last_key,
                    )
                )
            if result.messages_added and not self.defer_substring_index:
                indexing.keep_current(self.store)
        except OSError as exc:
            result.error = f"cannot read {path}: {exc.strerror or exc}"
        except RecursionError:
            # Parsers report deep lines as problem lines; this keeps any other
            # deep structure from ending the whole run.
            result.error = f"cannot import {path}: data nested too deeply"
        return result

    def _resume_point(self, path: Path) -> tuple[int, int, Conversation | None]:
        cursor = self.store.cursors.get(str(path))
        if cursor is None:
            return 0, 0, None
        conversation = self.store.conversations.get(cursor.conversation_id)
        size = path.stat().st_size
        if (
            conversation is not None
            and cursor.byte_offset <= size
            and _anchor_hash(path, cursor.byte_offset) == cursor.anchor_sha256
        ):
            return cursor.byte_offset, cursor.line_no, conversation
        # Rewritten or truncated file: read it all again; idempotent keys skip
        # what is already stored.
        return 0, 0, conversation

    def _consume(
        self,
        path: Path,
        events: Iterable[object],
        conversation: Conversation | None,
        result: FileImportResult,
        progress: ProgressCallback | None,
    ) -> None:
        pending_messages: list[NewMessage] = []
        pending_records: list[NewNativeRecord] = []
        reported_offset = 0
        # Content digest per ingest key read from this file: a second record
        # with a key already used (a duplicate uuid) but other content would be
        # dropped by the store's unique key without a word.
        digests: dict[str, str] = {}

        def flush() -> None:
            nonlocal pending_messages, pending_records
            if conversation is None or (not pending_messages and not pending_records):
                return
            _report_conflicting_duplicates(pending_messages, digests, result)
            self._write(conversation, pending_messages, pending_records, result)
            pending_messages, pending_records = [], []

        if conversation is not None:
            result.conversation_id = conversation.id
            result.session_id = conversation.session_id
        for event in events:
            if isinstance(event, SessionInfo):
                if conversation is None:
                    conversation = self._conversation_for(event)
                    result.conversation_id = conversation.id
                    result.session_id = conversation.session_id
            elif isinstance(event, ParseProblem):
                result.problems.append(event.describe())
                raw = event.raw
                if self.redactors is not None:
                    project = conversation.project if conversation else None
                    raw = redact_raw_line(self.redactors.for_project(project), raw)
                self.store.quarantine.add(
                    source_path=event.source_path,
                    line_no=event.line_no,
                    byte_offset=event.byte_offset,
                    error=event.error,
                    raw=raw,
                )
            elif isinstance(event, NewMessage):
                if conversation is None:
                    conversation = self._conversation_for(_fallback_session(path))
                    result.conversation_id = conversation.id
                    result.session_id = conversation.session_id
                pending_messages.append(event)
                if event.native_records and event.native_records[-1].byte_offset is not None:
                    reported_offset = self._report(
                        progress, event.native_records[-1], reported_offset
                    )
                if len(pending_messages) >= BATCH_MESSAGES:
                    flush()
            elif isinstance(event, NewNativeRecord):
                if conversation is None:
                    conversation = self._conversation_for(_fallback_session(path))
                    result.conversation_id = conversation.id
                    result.session_id = conversation.session_id
                pending_records.append(event)
                reported_offset = self._report(progress, event, reported_offset)
                if len(pending_records) >= BATCH_MESSAGES * 4:
                    flush()
        flush()

    @staticmethod
    def _report(progress: ProgressCallback | None, record: NewNativeRecord, reported: int) -> int:
        if progress is None or record.byte_offset is None:
            return reported
        position = record.byte_offset + len(record.raw.encode("utf-8")) + 1
        if position > reported:
            progress(position - reported)
            return position
        return reported

    def _discard_created(self) -> None:
        """A write failed (a full disk): drop the conversation this file created, if empty.

        Otherwise an empty conversation row would stay behind; the re-run
        creates it again with its messages.
        """
        created, self._created = self._created, None
        if created is None:
            return
        with contextlib.suppress(LosslessError, OSError):
            self.store.conversations.discard_if_empty(created)

    def _conversation_for(self, info: SessionInfo) -> Conversation:
        project = self.project_override or info.project or "unknown"
        existing = self.store.conversations.find_by_session(info.session_id, project=project)
        conversation = self._get_or_create(info, project)
        if existing is None or existing.id != conversation.id:
            self._created = conversation.id
        return conversation

    def _get_or_create(self, info: SessionInfo, project: str) -> Conversation:
        parent_id = None
        if info.parent_session_id:
            parent = self.store.conversations.find_by_session(info.parent_session_id)
            parent_id = parent.id if parent else None
        metadata = dict(info.metadata)
        if info.agent_id:
            metadata["agent_id"] = info.agent_id
        if info.parent_session_id:
            metadata["parent_session_id"] = info.parent_session_id
        return self.store.conversations.get_or_create(
            project=project,
            session_id=info.session_id,
            client=info.client,
            title=info.title,
            parent_id=parent_id,
            metadata=metadata,
            created_at=normalize_ts(info.started_at) if info.started_at else None,
        )

    def _report_edited_lines(
        self,
        conversation: Conversation,
        messages: list[NewMessage],
        known: set[str],
        redactor: Redactor | None,
        result: FileImportResult,
    ) -> None:
        """A line already imported whose text has changed since is a problem line.

        The stored message is kept as it was (history is immutable); the edit
        is reported with its file and line number. Lines are compared by the
        raw hash recorded at ingest, after the same redaction as then.
        """
        records = [
            r
            for m in messages
            if m.native_records and m.ingest_key in known
            for r in m.native_records
        ]
        stored = self.store.messages.native_raw_hashes(
            conversation.id, [r.native_key for r in records]
        )
        for record in records:
            recorded = stored.get(record.native_key)
            if recorded is None or raw_hash(record.raw) == recorded:
                continue
            if redactor is not None:
                (redacted,), _ = redact_records(redactor, [record])
                if raw_hash(redacted.raw) == recorded:
                    continue
            where = f"{record.source_path or '?'}:{record.line_no}" if record.line_no else "?"
            result.problems.append(
                f"{where}: this line changed after it was imported (record "
                f"{record.native_key}); the stored message is kept unchanged"
            )

    def _write(
        self,
        conversation: Conversation,
        messages: list[NewMessage],
        records: list[NewNativeRecord],
        result: FileImportResult,
    ) -> None:
        # Skip what is already stored before doing any work on it (redaction,
        # large-file storage): a re-read of a rewritten file costs little.
        keys = [m.ingest_key for m in messages if m.ingest_key and m.native_records]
        known = self.store.messages.has_native_keys(conversation.id, keys) if keys else set()
        fresh = [m for m in messages if not (m.native_records and m.ingest_key in known)]
        result.messages_skipped += len(messages) - len(fresh)
        redactor = self.redactors.for_conversation(conversation) if self.redactors else None
        if len(fresh) < len(messages):
            self._report_edited_lines(conversation, messages, known, redactor, result)
        counts: dict[str, int] = {}
        ready: list[NewMessage] = []
        for message in fresh:
            created_at = normalize_ts(message.created_at)
            if created_at != message.created_at:
                message = dataclasses.replace(message, created_at=created_at)
            if redactor is not None:
                message = _redact(redactor, message, counts)
            problem = _text_problem(message)
            if problem is not None:
                self._quarantine_message(message, problem, result)
                continue
            for step in self.prepare:
                message = step(conversation, message)
            ready.append(message)
        if redactor is not None and records:
            records, record_counts = redact_records(redactor, records)
            _add_counts(counts, record_counts)
        branched = any((m.metadata or {}).get("parent_uuid") for m in ready)
        with self.store.transaction() as tx:
            before = tx.messages.last(conversation.id) if branched else None
            appended = tx.messages.append(conversation.id, ready)
            tx.context.append_messages(conversation.id, appended.inserted)
            if records:
                result.records_added += tx.messages.add_native_records(conversation.id, records)
            if counts:
                record_redactions(tx, conversation.id, counts)
            if branched and appended.inserted:
                for rewind in follow_rewinds(tx, conversation.id, before, appended.inserted):
                    result.rewinds.append(rewind.describe())
            if any(ROLLBACK_EVENT in r.raw for r in records):
                for rewind in follow_rollbacks(tx, conversation.id, records):
                    result.rewinds.append(rewind.describe())
        result.messages_added += len(appended.inserted)
        result.messages_skipped += appended.skipped
        _add_counts(result.redactions, counts)
        inserted_keys = {m.ingest_key for m in appended.inserted}
        result.records_added += sum(
            len(m.native_records) for m in ready if m.ingest_key in inserted_keys
        )

    def _quarantine_message(
        self, message: NewMessage, problem: str, result: FileImportResult
    ) -> None:
        for record in message.native_records:
            where = f"{record.source_path}:{record.line_no}"
            result.problems.append(f"{where}: {problem}")
            self.store.quarantine.add(
                source_path=record.source_path or "",
                line_no=record.line_no or 0,
                byte_offset=record.byte_offset or 0,
                error=problem,
                raw=record.raw.encode("utf-8"),
            )


def _cursor(
    path: Path, conversation_id: int, offset: int, line_no: int, key: str | None
) -> SourceCursor:
    return SourceCursor(
        source_path=str(path),
        conversation_id=conversation_id,
        byte_offset=offset,
        line_no=line_no,
        anchor_key=key,
        anchor_sha256=_anchor_hash(path, offset),
        updated_at=utc_now_iso(),
    )


def _report_conflicting_duplicates(
    messages: list[NewMessage], digests: dict[str, str], result: FileImportResult
) -> None:
    """A problem for each message whose ingest key an earlier one with other content had."""
    for message in messages:
        key = message.ingest_key
        if not key:
            continue
        text = f"{message.role}\0{message.content}"
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        first = digests.setdefault(key, digest)
        if first != digest:
            record = message.native_records[-1] if message.native_records else None
            where = f"{record.source_path}:{record.line_no}" if record else result.path
            result.problems.append(
                f"{where}: a second record with id {key} but different content; the first "
                "one is kept, this one is not stored (its line stays in the transcript)"
            )


def _fallback_session(path: Path) -> SessionInfo:
    return SessionInfo(client="generic", session_id=file_session_id(path), project=str(path.parent))


def _add_counts(total: dict[str, int], more: Mapping[str, int]) -> None:
    for category, n in more.items():
        total[category] = total.get(category, 0) + n


def _redact(redactor: Redactor, message: NewMessage, counts: dict[str, int]) -> NewMessage:
    redacted, found = redactor.redact_message(message)
    if found:
        # A secret usually appears in the content, a part and the raw record at
        # once; count it where a reader sees it (the content) when it is there.
        in_content = redactor.redact_text(message.content).counts
        _add_counts(counts, in_content or found)
    return redacted


def record_redactions(repos: Repositories, conversation_id: int, counts: Mapping[str, int]) -> None:
    """Add ``counts`` to the conversation's per-category redaction tally."""
    conversation = repos.conversations.get(conversation_id)
    if conversation is None:
        return
    tally = dict(conversation.metadata.get("redactions") or {})
    _add_counts(tally, counts)
    repos.conversations.update_metadata(conversation_id, {"redactions": tally})


def ingest_messages(
    repos: Repositories,
    conversation: Conversation,
    messages: Sequence[NewMessage],
    *,
    redactor: Redactor | None = None,
    prepare: Sequence[MessagePrep] = (),
) -> list[int]:
    """Append API-supplied messages (no transcript file) and their context items.

    Raises ``InputError`` (storing nothing) if a message cannot be stored.
    """
    counts: dict[str, int] = {}
    ready: list[NewMessage] = []
    for message in messages:
        if redactor is not None:
            message = _redact(redactor, message, counts)
        problem = _text_problem(message)
        if problem is not None:
            raise InputError(problem.replace("; the line is kept verbatim in quarantine", ""))
        for step in prepare:
            message = step(conversation, message)
        ready.append(message)
    appended = repos.messages.append(conversation.id, ready)
    repos.context.append_messages(conversation.id, appended.inserted)
    if counts:
        record_redactions(repos, conversation.id, counts)
    if appended.inserted:
        indexing.keep_current(repos)
    return [m.id for m in appended.inserted]


def expand_paths(paths: Iterable[Path]) -> list[Path]:
    """Files named directly, plus every .jsonl/.json file under named folders."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            for root, _dirs, files in os.walk(path):
                for name in sorted(files):
                    if name.endswith((".jsonl", ".json")):
                        found.append(Path(root) / name)
        else:
            found.append(path)
    # Parents before sub-agents: a session file sorts before its own folder.
    return sorted(dict.fromkeys(found), key=lambda p: (len(p.parts), str(p)))
