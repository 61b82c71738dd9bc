"""Re-redact what is already stored: ``lcm sensitive purge``.

Redaction normally happens before anything is stored. When a user adds a
pattern later (an internal hostname, a customer id), the history stored before
it still holds those values. ``purge`` re-scans every stored text with today's
redactors and rewrites only the rows where something matched, in place
(the store's ``rewrite`` methods): conversation titles and metadata, message
content, metadata and parts, native records, summaries, large files (their
content on disk and their exploration summary), durable memories (text and
tags) and quarantined lines. Nothing else changes: ids, order, message token
counts and the summary DAG stay as they were. (Two memories of a project
whose redacted texts are the same become one, as ``MemoryRepository.rewrite``
describes; a memory keeps no fingerprint of its old text.)

Work is done in batches, each its own transaction. Redaction is idempotent (a
placeholder is never matched again), so an interrupted purge is finished by
running it again: committed batches find nothing left, the rest are done.
Each batch adds its counts to the conversation's ``metadata["redactions"]``
tally in the same transaction, so a re-run never counts a secret twice.

A large file is content-addressed, so redacted content is a new file: it is
written first, the row is pointed at it, and only then is the old file
deleted, if no other row still points at it. Old paths are noted in a journal
(``files/.purge-removals``) before the row changes, so the deletion of a
file whose row was committed just before a crash is done by the next run.

Rewriting leaves the old text in free database pages and old index segments;
``Store.scrub()`` (``lcm sensitive purge`` runs it unless ``--dry-run``)
removes those.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lossless.config import Config
from lossless.engine.ingest import record_redactions
from lossless.engine.large_files import _private_dir, _write_private, explore, large_file_path
from lossless.engine.sensitive import Redactors, redact_raw_line
from lossless.models import (
    Conversation,
    LargeFile,
    Message,
    NativeRecord,
    Part,
    QuarantinedLine,
    Summary,
)
from lossless.redact import Redactor
from lossless.redact.redactor import merge_counts
from lossless.store.contract import Memory, PartRewrite, Repositories, Store
from lossless.tokens import TokenEstimator, estimate_tokens

__all__ = ["PURGE_TABLES", "PurgeReport", "TableReport", "purge", "purge_total"]

# The places a secret can sit in stored history, in the order they are scanned.
PURGE_TABLES = (
    "conversations",
    "messages",
    "message_parts",
    "native_records",
    "summaries",
    "large_files",
    "memories",
    "quarantine",
)

# Under ``config.files_dir``: old large-file paths to delete once no row uses them.
REMOVALS_JOURNAL = ".purge-removals"

BATCH_SIZE = 200

Progress = Callable[[int], None]


@dataclass
class TableReport:
    """Rows scanned and changed in one table, and the secrets found, per category."""

    scanned: int = 0
    changed: int = 0
    redactions: dict[str, int] = field(default_factory=dict)

    def add(self, counts: dict[str, int]) -> None:
        self.changed += 1
        self.redactions = merge_counts(self.redactions, counts)


@dataclass
class PurgeReport:
    """What a purge changed (or, with ``dry_run``, would change)."""

    dry_run: bool
    tables: dict[str, TableReport] = field(
        default_factory=lambda: {name: TableReport() for name in PURGE_TABLES}
    )
    conversations_changed: int = 0
    # Old large-file copies deleted from disk.
    files_removed: int = 0
    # Large files whose content could not be read here (e.g. written by another
    # machine sharing a PostgreSQL store): only their summary was scanned.
    files_unreadable: list[str] = field(default_factory=list)

    @property
    def redactions(self) -> dict[str, int]:
        """Secrets found over every table, per category."""
        return dict(sorted(merge_counts(*(t.redactions for t in self.tables.values())).items()))

    @property
    def rows_changed(self) -> int:
        return sum(t.changed for t in self.tables.values())


def purge_total(store: Store) -> int:
    """How many rows ``purge`` scans (the length of a progress bar)."""
    stats = store.stats()
    return (
        stats.conversations
        + stats.messages
        + stats.parts
        + stats.native_records
        + stats.summaries
        + stats.large_files
        + len(store.memory.list(include_archived=True))
        + stats.quarantined
    )


def purge(
    store: Store,
    redactors: Redactors,
    config: Config,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
    batch_size: int = BATCH_SIZE,
    estimator: TokenEstimator = estimate_tokens,
) -> PurgeReport:
    """Redact stored history with today's patterns; see the module docstring.

    ``config`` locates the large files. ``progress`` is called after each
    committed batch with the number of rows it scanned (whatever it raises
    aborts the purge after that batch). ``estimator`` recounts the tokens of
    a rewritten large file.
    """
    report = PurgeReport(dry_run=dry_run)
    step: Progress = progress if progress is not None else (lambda _n: None)
    if not dry_run:
        report.files_removed += _finish_file_removals(store, config)
    for conversation in store.conversations.list():
        redactor = redactors.for_conversation(conversation)
        changed = _purge_conversation(store, conversation.id, redactor, report, dry_run)
        step(1)
        changed |= _purge_messages(store, conversation, redactor, report, dry_run, step, batch_size)
        changed |= _purge_loose_records(
            store, conversation, redactor, report, dry_run, step, batch_size
        )
        changed |= _purge_summaries(
            store, conversation, redactor, report, dry_run, step, batch_size
        )
        changed |= _purge_large_files(
            store, config, conversation, redactor, report, dry_run, step, batch_size, estimator
        )
        report.conversations_changed += int(changed)
    _purge_memories(store, redactors, report, dry_run, step, batch_size)
    _purge_quarantine(store, redactors, report, dry_run, step, batch_size)
    return report


def _purge_conversation(
    store: Store,
    conversation_id: int,
    redactor: Redactor,
    report: PurgeReport,
    dry_run: bool,
) -> bool:
    """The title and metadata (a session's working directory, branch ...)."""

    def apply(repos: Repositories, write: bool) -> bool:
        # Read inside the transaction: the tally in the metadata is rewritten
        # as a whole, so it must be the current one.
        conversation = repos.conversations.get(conversation_id)
        if conversation is None:
            return False
        title = conversation.title
        title_counts: dict[str, int] = {}
        if title is not None:
            result = redactor.redact_text(title)
            title, title_counts = result.text, result.counts
        metadata, meta_counts = redactor.redact_value(conversation.metadata)
        total = merge_counts(title_counts, meta_counts)
        if not total:
            return False
        report.tables["conversations"].add(total)
        if write:
            repos.conversations.rewrite(conversation_id, title=title, metadata=metadata)
            record_redactions(repos, conversation_id, total)
        return True

    changed = _run(store, apply, dry_run)
    report.tables["conversations"].scanned += 1
    return changed


def _purge_messages(
    store: Store,
    conversation: Conversation,
    redactor: Redactor,
    report: PurgeReport,
    dry_run: bool,
    step: Progress,
    batch_size: int,
) -> bool:
    records_by_message: dict[int, list[NativeRecord]] = {}
    for record in store.messages.native_records(conversation.id):
        if record.message_id is not None:
            records_by_message.setdefault(record.message_id, []).append(record)
    changed_any = False
    after = -1
    while True:
        page = store.messages.list(conversation.id, after_seq=after, limit=batch_size)
        if not page:
            return changed_any
        after = page[-1].seq
        parts = store.messages.parts([m.id for m in page])
        records = [r for m in page for r in records_by_message.get(m.id, [])]
        scanned = len(page) + sum(len(p) for p in parts.values()) + len(records)

        def apply(
            repos: Repositories,
            write: bool,
            page: list[Message] = page,
            parts: dict[int, list[Part]] = parts,
            records: list[NativeRecord] = records,
        ) -> bool:
            counts: list[dict[str, int]] = []
            for message in page:
                counts.extend(_message(repos, message, parts[message.id], redactor, report, write))
            for record in records:
                counts.extend(_record(repos, record, redactor, report, write))
            total = merge_counts(*counts)
            if total and write:
                record_redactions(repos, conversation.id, total)
            return bool(total)

        changed_any |= _run(store, apply, dry_run)
        _count_scanned(report, page, parts, records)
        step(scanned)


def _count_scanned(
    report: PurgeReport,
    page: Sequence[Message],
    parts: dict[int, list[Part]],
    records: Sequence[NativeRecord],
) -> None:
    report.tables["messages"].scanned += len(page)
    report.tables["message_parts"].scanned += sum(len(p) for p in parts.values())
    report.tables["native_records"].scanned += len(records)


def _run(store: Store, apply: Callable[[Repositories, bool], bool], dry_run: bool) -> bool:
    """One batch: read-only for a dry run, else one transaction."""
    if dry_run:
        return apply(store, False)
    with store.transaction() as tx:
        return apply(tx, True)


def _message(
    repos: Repositories,
    message: Message,
    parts: list[Part],
    redactor: Redactor,
    report: PurgeReport,
    write: bool,
) -> list[dict[str, int]]:
    content = redactor.redact_text(message.content)
    metadata, meta_counts = redactor.redact_value(message.metadata)
    message_counts = merge_counts(content.counts, meta_counts)
    rewrites: list[PartRewrite] = []
    part_counts: list[dict[str, int]] = []
    for part in parts:
        text = part.text
        counts: list[dict[str, int]] = []
        if part.text is not None:
            # A tool_use part's text is the JSON-encoded input: keep it parseable.
            result = (
                redactor.redact_json(part.text)
                if part.kind == "tool_use"
                else redactor.redact_text(part.text)
            )
            text = result.text
            counts.append(result.counts)
        part_metadata, c = redactor.redact_value(part.metadata)
        counts.append(c)
        total = merge_counts(*counts)
        if total:
            rewrites.append(PartRewrite(part.ordinal, text, part_metadata))
            report.tables["message_parts"].add(total)
            part_counts.append(total)
    if message_counts:
        report.tables["messages"].add(message_counts)
    if (message_counts or rewrites) and write:
        repos.messages.rewrite(message.id, content.text, metadata, rewrites)
    return [message_counts, *part_counts]


def _record(
    repos: Repositories,
    record: NativeRecord,
    redactor: Redactor,
    report: PurgeReport,
    write: bool,
) -> list[dict[str, int]]:
    # Raw transcript lines are JSON: keep them valid JSON.
    result = redactor.redact_json(record.raw)
    if not result.counts:
        return []
    report.tables["native_records"].add(result.counts)
    if write:
        repos.messages.rewrite_native_record(record.id, result.text)
    return [result.counts]


def _purge_loose_records(
    store: Store,
    conversation: Conversation,
    redactor: Redactor,
    report: PurgeReport,
    dry_run: bool,
    step: Progress,
    batch_size: int,
) -> bool:
    """Native records of no message (progress lines, metadata records)."""
    loose = [r for r in store.messages.native_records(conversation.id) if r.message_id is None]
    changed_any = False
    for start in range(0, len(loose), batch_size):
        batch = loose[start : start + batch_size]

        def apply(repos: Repositories, write: bool, batch: list[NativeRecord] = batch) -> bool:
            counts = [c for r in batch for c in _record(repos, r, redactor, report, write)]
            total = merge_counts(*counts)
            if total and write:
                record_redactions(repos, conversation.id, total)
            return bool(total)

        changed_any |= _run(store, apply, dry_run)
        report.tables["native_records"].scanned += len(batch)
        step(len(batch))
    return changed_any


def _purge_summaries(
    store: Store,
    conversation: Conversation,
    redactor: Redactor,
    report: PurgeReport,
    dry_run: bool,
    step: Progress,
    batch_size: int,
) -> bool:
    summaries = store.summaries.list(conversation.id)
    changed_any = False
    for start in range(0, len(summaries), batch_size):
        batch = summaries[start : start + batch_size]

        def apply(repos: Repositories, write: bool, batch: list[Summary] = batch) -> bool:
            counts: list[dict[str, int]] = []
            for summary in batch:
                result = redactor.redact_text(summary.content)
                if not result.counts:
                    continue
                report.tables["summaries"].add(result.counts)
                counts.append(result.counts)
                if write:
                    repos.summaries.rewrite(summary.id, result.text)
            total = merge_counts(*counts)
            if total and write:
                record_redactions(repos, conversation.id, total)
            return bool(total)

        changed_any |= _run(store, apply, dry_run)
        report.tables["summaries"].scanned += len(batch)
        step(len(batch))
    return changed_any


def _purge_quarantine(
    store: Store,
    redactors: Redactors,
    report: PurgeReport,
    dry_run: bool,
    step: Progress,
    batch_size: int,
) -> None:
    """Lines that could not be imported; they may not even be UTF-8."""
    after: int | None = None
    while True:
        page = store.quarantine.list(limit=batch_size, after_id=after)
        if not page:
            return
        after = page[-1].id

        def apply(repos: Repositories, write: bool, page: list[QuarantinedLine] = page) -> bool:
            tallies: dict[int, list[dict[str, int]]] = {}
            for line in page:
                # A line's project is its transcript's, if that was imported;
                # otherwise only global patterns apply.
                cursor = repos.cursors.get(line.source_path)
                conversation = (
                    repos.conversations.get(cursor.conversation_id) if cursor is not None else None
                )
                redactor = (
                    redactors.for_conversation(conversation)
                    if conversation is not None
                    else redactors.for_project(None)
                )
                new = redact_raw_line(redactor, line.raw)
                if new == line.raw:
                    continue
                counts = redactor.redact_text(line.raw.decode("latin-1")).counts
                report.tables["quarantine"].add(counts)
                if conversation is not None:
                    tallies.setdefault(conversation.id, []).append(counts)
                if write:
                    repos.quarantine.rewrite(line.id, new)
            if write:
                for conversation_id, counts_list in tallies.items():
                    record_redactions(repos, conversation_id, merge_counts(*counts_list))
            return bool(tallies)

        _run(store, apply, dry_run)
        report.tables["quarantine"].scanned += len(page)
        step(len(page))


@dataclass(frozen=True, slots=True)
class _FileRewrite:
    file: LargeFile
    path: str
    sha256: str
    byte_size: int
    token_count: int
    summary: str
    data: bytes | None  # None: the content did not change, only the summary
    counts: dict[str, int]


def _on_disk(config: Config, path: str) -> Path:
    location = Path(path)
    # As ``read_large_file``: a relative path is relative to LCM_HOME.
    return location if location.is_absolute() else config.home / location


def _plan_file(
    config: Config,
    large_file: LargeFile,
    redactor: Redactor,
    report: PurgeReport,
    estimator: TokenEstimator,
) -> _FileRewrite | None:
    """What a large file becomes once redacted; None if nothing matched."""
    f = large_file
    try:
        raw: bytes | None = _on_disk(config, f.path).read_bytes()
    except OSError:
        report.files_unreadable.append(f.id)
        raw = None
    counts: list[dict[str, int]] = []
    data: bytes | None = None
    text: str | None = None
    if raw is not None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            # Imported as base64: redacted byte for byte, like a quarantined line.
            new = redact_raw_line(redactor, raw)
            if new != raw:
                counts.append(redactor.redact_text(raw.decode("latin-1")).counts)
                data = new
        else:
            result = redactor.redact_text(text)
            if result.counts:
                counts.append(result.counts)
                text, data = result.text, result.text.encode("utf-8")
    summary = redactor.redact_text(f.exploration_summary)
    counts.append(summary.counts)
    total = merge_counts(*counts)
    if not total:
        return None
    report.tables["large_files"].add(total)
    if data is None:
        return _FileRewrite(
            f, f.path, f.sha256, f.byte_size, f.token_count, summary.text, None, total
        )
    new_summary = summary.text
    if text is not None:
        # The summary quotes the content clipped (a first row, the last
        # lines): a secret cut in half there no longer matches any pattern,
        # so the summary is rebuilt from the redacted content instead.
        new_summary = redactor.redact_text(explore(text, f.original_name).summary).text
    sha = hashlib.sha256(data).hexdigest()
    return _FileRewrite(
        f,
        str(large_file_path(config, sha, f.media_type, f.original_name)),
        sha,
        len(data),
        estimator(text) if text is not None else f.token_count,
        new_summary,
        data,
        total,
    )


def _purge_large_files(
    store: Store,
    config: Config,
    conversation: Conversation,
    redactor: Redactor,
    report: PurgeReport,
    dry_run: bool,
    step: Progress,
    batch_size: int,
    estimator: TokenEstimator,
) -> bool:
    files = store.files.list(conversation.id)
    changed_any = False
    for start in range(0, len(files), batch_size):
        batch = files[start : start + batch_size]
        plans = [
            plan
            for f in batch
            if (plan := _plan_file(config, f, redactor, report, estimator)) is not None
        ]
        if plans and not dry_run:
            for plan in plans:
                if plan.data is not None:
                    _write_private(Path(plan.path), plan.data)
            _note_removals(config, [p.file.path for p in plans if p.path != p.file.path])
            with store.transaction() as tx:
                for plan in plans:
                    tx.files.rewrite(
                        plan.file.id,
                        path=plan.path,
                        sha256=plan.sha256,
                        byte_size=plan.byte_size,
                        token_count=plan.token_count,
                        exploration_summary=plan.summary,
                    )
                record_redactions(tx, conversation.id, merge_counts(*(p.counts for p in plans)))
            report.files_removed += _finish_file_removals(store, config)
        changed_any |= bool(plans)
        report.tables["large_files"].scanned += len(batch)
        step(len(batch))
    return changed_any


def _note_removals(config: Config, paths: Sequence[str]) -> None:
    """Journal old paths durably before the rows stop pointing at them."""
    if not paths:
        return
    _private_dir(config.files_dir)
    journal = config.files_dir / REMOVALS_JOURNAL
    fd = os.open(journal, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("".join(p + "\n" for p in paths))
        fh.flush()
        os.fsync(fh.fileno())


def _finish_file_removals(store: Store, config: Config) -> int:
    """Delete the journaled files no row points at any more; how many were deleted."""
    journal = config.files_dir / REMOVALS_JOURNAL
    try:
        noted = journal.read_text("utf-8").splitlines()
    except FileNotFoundError:
        return 0
    paths = [p for p in dict.fromkeys(noted) if p]
    in_use = store.files.paths_in_use(paths)
    root = config.files_dir.resolve()
    removed = 0
    for path in paths:
        location = _on_disk(config, path)
        # A row's path comes from the database (which an import or another
        # machine may have written): never delete outside our own files folder.
        if path in in_use or not location.resolve().is_relative_to(root):
            continue
        try:
            location.unlink()
        except FileNotFoundError:
            continue
        removed += 1
    journal.unlink()
    return removed


def _purge_memories(
    store: Store,
    redactors: Redactors,
    report: PurgeReport,
    dry_run: bool,
    step: Progress,
    batch_size: int,
) -> None:
    """Durable memories, archived ones too (``revive`` would bring them back)."""
    memories = store.memory.list(include_archived=True)
    for start in range(0, len(memories), batch_size):
        batch = memories[start : start + batch_size]

        def apply(repos: Repositories, write: bool, batch: list[Memory] = batch) -> bool:
            tallies: dict[int, list[dict[str, int]]] = {}
            changed = False
            for listed in batch:
                # An earlier rewrite may have merged another memory into this
                # one (their redacted texts were the same): use what is stored.
                memory = repos.memory.get(listed.id)
                if memory is None:
                    continue
                redactor = redactors.for_project(memory.project)
                text = redactor.redact_text(memory.text)
                tags = [redactor.redact_text(tag) for tag in memory.tags]
                total = merge_counts(text.counts, *(t.counts for t in tags))
                if not total:
                    continue
                changed = True
                report.tables["memories"].add(total)
                # Counted in the tally of the conversation it was learnt from, if any.
                if memory.source_conversation_id is not None:
                    tallies.setdefault(memory.source_conversation_id, []).append(total)
                if write:
                    repos.memory.rewrite(memory.id, text.text, [t.text for t in tags])
            if write:
                for conversation_id, counts in tallies.items():
                    record_redactions(repos, conversation_id, merge_counts(*counts))
            return changed

        _run(store, apply, dry_run)
        report.tables["memories"].scanned += len(batch)
        step(len(batch))
