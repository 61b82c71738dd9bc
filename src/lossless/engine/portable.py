"""Portable export and import: everything in a store as one versioned JSONL stream.

``lcm export`` writes, and ``lcm import --from-export`` reads, a stream that
moves history between machines and backends (SQLite <-> PostgreSQL) with
nothing lost::

    {"format": "lossless-export", "version": 1}
    {"type": "conversation", ...}      then, for that conversation:
    {"type": "message", ...}           in seq order, with parts and native records
    {"type": "native_record", ...}     records of no message
    {"type": "large_file", ...}        metadata and content (text, or base64)
    {"type": "summary", ...}           in creation order, with their sources
    {"type": "context", ...}           the context items; closes the conversation
    {"type": "memory", ...}            after every conversation
    {"type": "quarantine", ...}
    {"type": "end", "counts": {...}}   a stream without it was cut short

Records refer to each other by stable keys, never by database ids: a
conversation is ``[project, client, session_id]``, a message is its
conversation plus ``seq``; summaries, large files and memories keep their
``sum_``/``file_``/``mem_`` ids. Ids and every timestamp are preserved, so
exporting what an import stored gives back the same stream, byte for byte.
Cursors are local bookkeeping and are not exported.

Import is idempotent (what is already stored is skipped) and atomic per
conversation: a broken line (invalid JSON, a missing field, a stream cut
short) is reported as ``file:line``, and the conversation it belongs to is
not stored at all; conversations completed before it stay.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from lossless.config import Config
from lossless.engine.large_files import _write_private, large_file_path
from lossless.errors import InputError, LosslessError
from lossless.models import (
    JSON,
    ContextItem,
    Conversation,
    LargeFile,
    NewMessage,
    NewNativeRecord,
    NewPart,
    Summary,
)
from lossless.store.contract import Memory, Repositories, Store, memory_text_hash

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "ExportReport",
    "ImportReport",
    "export_store",
    "import_export",
]

EXPORT_FORMAT = "lossless-export"
EXPORT_VERSION = 1

Key = tuple[str, str, str]
Progress = Callable[[int], None]


def _line(record: JSON) -> str:
    # Compact, key order as built, non-ASCII kept: deterministic output is
    # what makes export(import(export)) == export comparable byte for byte.
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def _key(conversation: Conversation) -> list[str]:
    return [conversation.project, conversation.client, conversation.session_id]


@dataclass
class ExportReport:
    """How many records of each type were written."""

    counts: dict[str, int] = field(default_factory=dict)
    missing_files: list[str] = field(default_factory=list)

    def add(self, kind: str, n: int = 1) -> None:
        if n:
            self.counts[kind] = self.counts.get(kind, 0) + n


@dataclass
class ImportReport:
    """What an import added, and what it found already stored."""

    added: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, n: int = 1) -> None:
        if n:
            self.added[kind] = self.added.get(kind, 0) + n

    def skip(self, kind: str, n: int = 1) -> None:
        if n:
            self.skipped[kind] = self.skipped.get(kind, 0) + n


# ---------------------------------------------------------------- export


def export_store(
    store: Store,
    config: Config,
    out: IO[str],
    *,
    project: str | None = None,
    progress: Progress | None = None,
) -> ExportReport:
    """Write the stream described in the module docstring to ``out``.

    With ``project``, only that project's conversations and memories, and
    the quarantined lines of its transcripts. ``progress`` is called with the
    number of messages written, after each conversation.
    """
    report = ExportReport()
    out.write(_line({"format": EXPORT_FORMAT, "version": EXPORT_VERSION}))
    conversations = store.conversations.list(project=project)
    by_id = {c.id: c for c in store.conversations.list()}
    for conversation in conversations:
        before = report.counts.get("message", 0)
        for record in _conversation_records(store, config, conversation, by_id, report):
            out.write(_line(record))
        if progress is not None:
            progress(report.counts.get("message", 0) - before)
    exported_ids = {c.id for c in conversations}
    for memory in store.memory.list(project=project, include_archived=True):
        source = by_id.get(memory.source_conversation_id or -1)
        out.write(
            _line(
                {
                    "type": "memory",
                    "id": memory.id,
                    "project": memory.project,
                    "text": memory.text,
                    "tags": list(memory.tags),
                    "confidence": memory.confidence,
                    "source_summary_id": memory.source_summary_id,
                    "source_conversation": _key(source) if source is not None else None,
                    "created_at": memory.created_at,
                    "last_surfaced_at": memory.last_surfaced_at,
                    "last_used_at": memory.last_used_at,
                    "surfaced_count": memory.surfaced_count,
                    "used_count": memory.used_count,
                    "archived": memory.archived,
                }
            )
        )
        report.add("memory")
    for line in _quarantined(store):
        if project is not None:
            cursor = store.cursors.get(line.source_path)
            if cursor is None or cursor.conversation_id not in exported_ids:
                continue
        out.write(
            _line(
                {
                    "type": "quarantine",
                    "source_path": line.source_path,
                    "line_no": line.line_no,
                    "byte_offset": line.byte_offset,
                    "error": line.error,
                    "raw": base64.b64encode(line.raw).decode("ascii"),
                    "created_at": line.created_at,
                }
            )
        )
        report.add("quarantine")
    out.write(_line({"type": "end", "counts": dict(sorted(report.counts.items()))}))
    return report


def _quarantined(store: Store) -> Iterator[Any]:
    after: int | None = None
    while True:
        page = store.quarantine.list(limit=500, after_id=after)
        if not page:
            return
        yield from page
        after = page[-1].id


def _conversation_records(
    store: Store,
    config: Config,
    conversation: Conversation,
    by_id: dict[int, Conversation],
    report: ExportReport,
) -> Iterator[JSON]:
    key = _key(conversation)
    parent = by_id.get(conversation.parent_id) if conversation.parent_id is not None else None
    yield {
        "type": "conversation",
        "conversation": key,
        "title": conversation.title,
        "parent": _key(parent) if parent is not None else None,
        "metadata": conversation.metadata,
        "created_at": conversation.created_at,
    }
    report.add("conversation")
    records_by_message: dict[int | None, list[JSON]] = {}
    for r in store.messages.native_records(conversation.id):
        records_by_message.setdefault(r.message_id, []).append(
            {
                "native_key": r.native_key,
                "record_type": r.record_type,
                "raw": r.raw,
                "source_path": r.source_path,
                "line_no": r.line_no,
                "byte_offset": r.byte_offset,
            }
        )
    seq_of: dict[int, int] = {}
    batch: list[Any] = []

    def flush() -> Iterator[JSON]:
        parts = store.messages.parts([m.id for m in batch])
        for m in batch:
            yield {
                "type": "message",
                "conversation": key,
                "seq": m.seq,
                "role": m.role,
                "content": m.content,
                "token_count": m.token_count,
                "created_at": m.created_at,
                "ingest_key": m.ingest_key,
                "metadata": m.metadata,
                "parts": [
                    {
                        "kind": p.kind,
                        "text": p.text,
                        "tool_name": p.tool_name,
                        "tool_call_id": p.tool_call_id,
                        "metadata": p.metadata,
                    }
                    for p in parts[m.id]
                ],
                "native_records": records_by_message.get(m.id, []),
            }
        report.add("message", len(batch))
        # Counted with the ones of no message, as the import counts them.
        report.add("native_record", sum(len(records_by_message.get(m.id, [])) for m in batch))
        batch.clear()

    for message in store.messages.iter_all(conversation.id):
        seq_of[message.id] = message.seq
        batch.append(message)
        if len(batch) >= 500:
            yield from flush()
    yield from flush()
    for raw in records_by_message.get(None, []):
        yield {"type": "native_record", "conversation": key, **raw}
        report.add("native_record")
    for f in store.files.list(conversation.id):
        yield _large_file_record(config, key, f, seq_of, report)
        report.add("large_file")
    for s in store.summaries.list(conversation.id):
        yield {
            "type": "summary",
            "conversation": key,
            "id": s.id,
            "kind": s.kind,
            "depth": s.depth,
            "content": s.content,
            "token_count": s.token_count,
            "earliest_at": s.earliest_at,
            "latest_at": s.latest_at,
            "descendant_count": s.descendant_count,
            "source_token_count": s.source_token_count,
            "file_ids": list(s.file_ids),
            "metadata": s.metadata,
            "created_at": s.created_at,
            "message_seqs": [
                _seq(seq_of, mid, s.id) for mid in store.summaries.source_message_ids(s.id)
            ],
            "source_summary_ids": store.summaries.source_summary_ids(s.id),
        }
        report.add("summary")
    yield {
        "type": "context",
        "conversation": key,
        "items": [
            {
                "ordinal": i.ordinal,
                "item_type": i.item_type,
                "message_seq": _seq(seq_of, i.message_id, "context") if i.message_id else None,
                "summary_id": i.summary_id,
                "token_count": i.token_count,
            }
            for i in store.context.list(conversation.id)
        ],
    }


def _seq(seq_of: dict[int, int], message_id: int, where: str) -> int:
    try:
        return seq_of[message_id]
    except KeyError:
        raise InputError(
            f"{where} refers to message {message_id} of another conversation; "
            "such links cannot be exported"
        ) from None


def _large_file_record(
    config: Config, key: list[str], f: LargeFile, seq_of: dict[int, int], report: ExportReport
) -> JSON:
    path = Path(f.path) if Path(f.path).is_absolute() else config.home / f.path
    content: str | None
    encoding = "text"
    try:
        data = path.read_bytes()
    except OSError:
        # The metadata still travels; `lcm describe` will say the content is gone.
        content = None
        report.missing_files.append(f.id)
    else:
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError:
            content = base64.b64encode(data).decode("ascii")
            encoding = "base64"
    return {
        "type": "large_file",
        "conversation": key,
        "id": f.id,
        "message_seq": _seq(seq_of, f.message_id, f.id) if f.message_id is not None else None,
        "byte_size": f.byte_size,
        "token_count": f.token_count,
        "sha256": f.sha256,
        "media_type": f.media_type,
        "exploration_summary": f.exploration_summary,
        "original_name": f.original_name,
        "created_at": f.created_at,
        "encoding": encoding,
        "content": content,
    }


# ---------------------------------------------------------------- import


class _Broken(InputError):
    pass


def import_export(
    store: Store,
    config: Config,
    lines: Iterable[str],
    *,
    source: str = "<stdin>",
    progress: Progress | None = None,
) -> ImportReport:
    """Store what an export stream holds; see the module docstring.

    Raises ``InputError`` naming ``source:line`` for an unknown format or
    version, a line that is not a valid record, or a stream cut short.
    ``progress`` is called with the number of lines consumed since its last
    call, after each conversation, memory and quarantined line.
    """
    report = ImportReport()
    numbered = enumerate(lines, start=1)
    first = next(numbered, None)
    if first is None:
        raise InputError(f"{source}: empty; not a lossless export")
    header = _parse(source, *first)
    if header.get("format") != EXPORT_FORMAT:
        raise InputError(f"{source}:1: not a lossless export (no 'format': '{EXPORT_FORMAT}')")
    if header.get("version") != EXPORT_VERSION:
        raise InputError(
            f"{source}:1: export version {header.get('version')!r} is not supported by this "
            f"lossless (it reads version {EXPORT_VERSION}); upgrade lossless-context"
        )
    group: list[tuple[int, JSON]] = []
    ended = False
    reported = 1
    for line_no, text in numbered:
        if ended:
            raise InputError(f"{source}:{line_no}: data after the end record")
        record = _parse(source, line_no, text)
        kind = record.get("type")
        if group and kind in ("conversation", "memory", "quarantine", "end"):
            raise InputError(
                f"{source}:{line_no}: conversation that started at line {group[0][0]} has no "
                "context record (the stream is cut or out of order); it was not imported"
            )
        if kind in ("conversation", "message", "native_record", "large_file", "summary"):
            if kind != "conversation" and not group:
                raise InputError(f"{source}:{line_no}: {kind} record outside a conversation")
            group.append((line_no, record))
        elif kind == "context":
            group.append((line_no, record))
            _guarded(source, group[0][0], _import_conversation, store, config, group, report)
            group = []
        elif kind == "memory":
            _guarded(source, line_no, _import_memory, store, line_no, record, report)
        elif kind == "quarantine":
            _guarded(source, line_no, _import_quarantine, store, line_no, record, report)
        elif kind == "end":
            ended = True
        else:
            raise InputError(f"{source}:{line_no}: unknown record type {kind!r}")
        if progress is not None and not group:
            progress(line_no - reported)
            reported = line_no
    if group:
        raise InputError(
            f"{source}: the stream ends inside the conversation that started at line "
            f"{group[0][0]}; it was not imported"
        )
    if not ended:
        raise InputError(f"{source}: the stream has no end record: it was cut short")
    return report


def _parse(source: str, line_no: int, text: str) -> JSON:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{source}:{line_no}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise InputError(f"{source}:{line_no}: a record must be a JSON object")
    return value


def _guarded(source: str, line_no: int, work: Callable[..., None], *args: Any) -> None:
    """Name ``file:line`` in any refusal (the record's transaction has rolled back)."""
    try:
        work(*args)
    except _Broken as exc:
        raise InputError(f"{source}:{exc}") from None
    except LosslessError as exc:
        raise InputError(f"{source}:{line_no}: not imported: {exc}") from exc


def _field(line_no: int, record: JSON, name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in record:
        raise _Broken(f"{line_no}: {record.get('type')} record has no {name!r}")
    value = record[name]
    if not isinstance(value, kind):
        raise _Broken(f"{line_no}: {record.get('type')} field {name!r} has the wrong type")
    return value


OPT_STR = (str, type(None))
OPT_INT = (int, type(None))
OPT_DICT = (dict, type(None))


def _conversation_key(line_no: int, record: JSON, name: str = "conversation") -> Key:
    value = _field(line_no, record, name, list)
    if len(value) != 3 or not all(isinstance(v, str) for v in value):
        raise _Broken(f"{line_no}: {name} must be [project, client, session_id]")
    return (value[0], value[1], value[2])


def _find(repos: Repositories, key: Key) -> Conversation | None:
    project, client, session_id = key
    for c in repos.conversations.list(project=project, client=client):
        if c.session_id == session_id:
            return c
    return None


def _import_conversation(
    store: Store, config: Config, group: list[tuple[int, JSON]], report: ImportReport
) -> None:
    line_no, head = group[0]
    key = _conversation_key(line_no, head)
    with store.transaction() as tx:
        conversation = _find(tx, key)
        is_new = conversation is None
        if conversation is None:
            parent_key = head.get("parent")
            parent_id = None
            if parent_key is not None:
                parent = _find(tx, _conversation_key(line_no, head, "parent"))
                parent_id = parent.id if parent is not None else None
            conversation = tx.conversations.get_or_create(
                project=key[0],
                client=key[1],
                session_id=key[2],
                title=_field(line_no, head, "title", OPT_STR),
                parent_id=parent_id,
                metadata=_field(line_no, head, "metadata", dict),
                created_at=_field(line_no, head, "created_at", str),
            )
            report.add("conversation")
        else:
            report.skip("conversation")
        cid = conversation.id
        stored = {m.seq: m for m in tx.messages.iter_all(cid)}
        changed = is_new
        for line_no, record in group[1:]:
            if _conversation_key(line_no, record) != key:
                raise _Broken(f"{line_no}: record belongs to another conversation")
            kind = record["type"]
            if kind == "message":
                changed |= _import_message(tx, cid, line_no, record, stored, report)
            elif kind == "native_record":
                added = tx.messages.add_native_records(cid, [_native(line_no, record)])
                report.add("native_record", added)
                report.skip("native_record", 1 - added)
            elif kind == "large_file":
                changed |= _import_file(tx, config, cid, line_no, record, stored, report)
            elif kind == "summary":
                changed |= _import_summary(tx, cid, line_no, record, stored, report)
            elif kind == "context" and changed:
                items = _field(line_no, record, "items", list)
                tx.context.restore(cid, [_context_item(cid, line_no, i, stored) for i in items])


def _message_id(stored: dict[int, Any], line_no: int, seq: Any) -> int:
    if not isinstance(seq, int) or seq not in stored:
        raise _Broken(f"{line_no}: refers to message seq {seq!r}, which the export does not hold")
    return int(stored[seq].id)


def _native(line_no: int, raw: JSON) -> NewNativeRecord:
    return NewNativeRecord(
        native_key=_field(line_no, raw, "native_key", str),
        record_type=_field(line_no, raw, "record_type", str),
        raw=_field(line_no, raw, "raw", str),
        source_path=_field(line_no, raw, "source_path", OPT_STR),
        line_no=_field(line_no, raw, "line_no", OPT_INT),
        byte_offset=_field(line_no, raw, "byte_offset", OPT_INT),
    )


def _import_message(
    tx: Repositories,
    cid: int,
    line_no: int,
    record: JSON,
    stored: dict[int, Any],
    report: ImportReport,
) -> bool:
    seq = _field(line_no, record, "seq", int)
    if seq in stored:
        report.skip("message")
        report.skip("native_record", len(_field(line_no, record, "native_records", list)))
        return False
    if seq != len(stored):
        raise _Broken(
            f"{line_no}: message seq {seq} does not follow the {len(stored)} messages stored "
            "for this conversation"
        )
    parts = tuple(
        NewPart(
            kind=_field(line_no, p, "kind", str),
            text=_field(line_no, p, "text", OPT_STR),
            tool_name=_field(line_no, p, "tool_name", OPT_STR),
            tool_call_id=_field(line_no, p, "tool_call_id", OPT_STR),
            metadata=_field(line_no, p, "metadata", OPT_DICT),
        )
        for p in _field(line_no, record, "parts", list)
    )
    records = tuple(_native(line_no, r) for r in _field(line_no, record, "native_records", list))
    message = NewMessage(
        role=_field(line_no, record, "role", str),
        content=_field(line_no, record, "content", str),
        parts=parts,
        created_at=_field(line_no, record, "created_at", str),
        ingest_key=_field(line_no, record, "ingest_key", OPT_STR),
        token_count=_field(line_no, record, "token_count", int),
        metadata=_field(line_no, record, "metadata", OPT_DICT),
        native_records=records,
    )
    result = tx.messages.append(cid, [message])
    if not result.inserted:
        raise _Broken(f"{line_no}: message seq {seq} is already stored under another seq")
    stored[seq] = result.inserted[0]
    report.add("message")
    report.add("native_record", len(records))
    return True


def _import_file(
    tx: Repositories,
    config: Config,
    cid: int,
    line_no: int,
    record: JSON,
    stored: dict[int, Any],
    report: ImportReport,
) -> bool:
    file_id = _field(line_no, record, "id", str)
    if tx.files.get(file_id) is not None:
        report.skip("large_file")
        return False
    sha256 = _field(line_no, record, "sha256", str)
    media_type = _field(line_no, record, "media_type", str)
    name = _field(line_no, record, "original_name", OPT_STR)
    path = large_file_path(config, sha256, media_type, name)
    content = _field(line_no, record, "content", OPT_STR)
    if content is not None:
        encoding = _field(line_no, record, "encoding", str)
        if encoding == "text":
            data = content.encode("utf-8")
        elif encoding == "base64":
            try:
                data = base64.b64decode(content, validate=True)
            except binascii.Error:
                raise _Broken(f"{line_no}: large file content is not valid base64") from None
        else:
            raise _Broken(f"{line_no}: unknown large file encoding {encoding!r}")
        _write_private(path, data)
    seq = _field(line_no, record, "message_seq", OPT_INT)
    tx.files.restore(
        LargeFile(
            id=file_id,
            conversation_id=cid,
            message_id=None if seq is None else _message_id(stored, line_no, seq),
            path=str(path),
            byte_size=_field(line_no, record, "byte_size", int),
            token_count=_field(line_no, record, "token_count", int),
            sha256=sha256,
            media_type=media_type,
            exploration_summary=_field(line_no, record, "exploration_summary", str),
            original_name=name,
            created_at=_field(line_no, record, "created_at", str),
        )
    )
    report.add("large_file")
    return True


def _import_summary(
    tx: Repositories,
    cid: int,
    line_no: int,
    record: JSON,
    stored: dict[int, Any],
    report: ImportReport,
) -> bool:
    summary_id = _field(line_no, record, "id", str)
    kind = _field(line_no, record, "kind", str)
    if kind not in ("leaf", "condensed"):
        raise _Broken(f"{line_no}: unknown summary kind {kind!r}")
    summary = Summary(
        id=summary_id,
        conversation_id=cid,
        kind=kind,
        depth=_field(line_no, record, "depth", int),
        content=_field(line_no, record, "content", str),
        token_count=_field(line_no, record, "token_count", int),
        earliest_at=_field(line_no, record, "earliest_at", OPT_STR),
        latest_at=_field(line_no, record, "latest_at", OPT_STR),
        descendant_count=_field(line_no, record, "descendant_count", int),
        source_token_count=_field(line_no, record, "source_token_count", int),
        created_at=_field(line_no, record, "created_at", str),
        file_ids=tuple(_field(line_no, record, "file_ids", list)),
        metadata=_field(line_no, record, "metadata", OPT_DICT),
    )
    message_ids = [
        _message_id(stored, line_no, seq) for seq in _field(line_no, record, "message_seqs", list)
    ]
    sources = _field(line_no, record, "source_summary_ids", list)
    if tx.summaries.restore(summary, message_ids=message_ids, source_summary_ids=sources):
        report.add("summary")
        return True
    report.skip("summary")
    return False


def _context_item(cid: int, line_no: int, item: Any, stored: dict[int, Any]) -> ContextItem:
    if not isinstance(item, dict):
        raise _Broken(f"{line_no}: a context item must be an object")
    item_type = _field(line_no, item, "item_type", str)
    seq = _field(line_no, item, "message_seq", OPT_INT)
    summary_id = _field(line_no, item, "summary_id", OPT_STR)
    if item_type not in ("message", "summary") or (item_type == "message") != (seq is not None):
        raise _Broken(f"{line_no}: malformed context item")
    return ContextItem(
        conversation_id=cid,
        ordinal=_field(line_no, item, "ordinal", int),
        item_type=item_type,
        message_id=None if seq is None else _message_id(stored, line_no, seq),
        summary_id=summary_id,
        token_count=_field(line_no, item, "token_count", int),
    )


def _import_memory(store: Store, line_no: int, record: JSON, report: ImportReport) -> None:
    with store.transaction() as tx:
        source_key = record.get("source_conversation")
        source = (
            _find(tx, _conversation_key(line_no, record, "source_conversation"))
            if source_key is not None
            else None
        )
        summary_id = _field(line_no, record, "source_summary_id", OPT_STR)
        if summary_id is not None and tx.summaries.get(summary_id) is None:
            summary_id = None  # exported without its conversation (--project)
        text = _field(line_no, record, "text", str)
        tags = _field(line_no, record, "tags", list)
        confidence = _field(line_no, record, "confidence", (int, float))
        memory = Memory(
            id=_field(line_no, record, "id", str),
            project=_field(line_no, record, "project", str),
            text=text,
            tags=tuple(str(t) for t in tags),
            confidence=float(confidence),
            source_summary_id=summary_id,
            source_conversation_id=source.id if source is not None else None,
            created_at=_field(line_no, record, "created_at", str),
            text_hash=memory_text_hash(text),
            last_surfaced_at=_field(line_no, record, "last_surfaced_at", OPT_STR),
            last_used_at=_field(line_no, record, "last_used_at", OPT_STR),
            surfaced_count=_field(line_no, record, "surfaced_count", int),
            used_count=_field(line_no, record, "used_count", int),
            archived=_field(line_no, record, "archived", bool),
        )
        if tx.memory.restore(memory):
            report.add("memory")
        else:
            report.skip("memory")


def _import_quarantine(store: Store, line_no: int, record: JSON, report: ImportReport) -> None:
    try:
        raw = base64.b64decode(_field(line_no, record, "raw", str), validate=True)
    except binascii.Error:
        raise _Broken(f"{line_no}: quarantined line is not valid base64") from None
    added = store.quarantine.add(
        source_path=_field(line_no, record, "source_path", str),
        line_no=_field(line_no, record, "line_no", int),
        byte_offset=_field(line_no, record, "byte_offset", int),
        error=_field(line_no, record, "error", str),
        raw=raw,
        created_at=_field(line_no, record, "created_at", str),
    )
    if added:
        report.add("quarantine")
    else:
        report.skip("quarantine")
