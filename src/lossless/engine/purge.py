"""Re-redact what is already stored: ``lcm sensitive purge``.

Redaction normally happens before anything is stored. When a user adds a
pattern later (an internal hostname, a customer id), the history stored before
it still holds those values. ``purge`` re-scans every stored text with today's
redactors and rewrites only the rows where something matched, in place
(the store's ``rewrite`` methods): message content, metadata and parts, native
records, summaries and quarantined lines. Nothing else changes: ids, order,
token counts and the summary DAG stay as they were.

Work is done in batches, each its own transaction. Redaction is idempotent (a
placeholder is never matched again), so an interrupted purge is finished by
running it again: committed batches find nothing left, the rest are done.
Each batch adds its counts to the conversation's ``metadata["redactions"]``
tally in the same transaction, so a re-run never counts a secret twice.

Rewriting leaves the old text in free database pages and old index segments;
``Store.scrub()`` (``lcm sensitive purge`` runs it unless ``--dry-run``)
removes those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lossless.engine.ingest import record_redactions
from lossless.engine.sensitive import Redactors, redact_raw_line
from lossless.models import Conversation, Message, NativeRecord, Part, QuarantinedLine, Summary
from lossless.redact import Redactor
from lossless.redact.redactor import merge_counts
from lossless.store.contract import PartRewrite, Repositories, Store

__all__ = ["PURGE_TABLES", "PurgeReport", "TableReport", "purge", "purge_total"]

# The places a secret can sit in stored history, in the order they are scanned.
PURGE_TABLES = ("messages", "message_parts", "native_records", "summaries", "quarantine")

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
    return stats.messages + stats.parts + stats.native_records + stats.summaries + stats.quarantined


def purge(
    store: Store,
    redactors: Redactors,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
    batch_size: int = BATCH_SIZE,
) -> PurgeReport:
    """Redact stored history with today's patterns; see the module docstring.

    ``progress`` is called after each committed batch with the number of rows
    it scanned (whatever it raises aborts the purge after that batch).
    """
    report = PurgeReport(dry_run=dry_run)
    step: Progress = progress if progress is not None else (lambda _n: None)
    for conversation in store.conversations.list():
        redactor = redactors.for_conversation(conversation)
        changed = _purge_messages(store, conversation, redactor, report, dry_run, step, batch_size)
        changed |= _purge_loose_records(
            store, conversation, redactor, report, dry_run, step, batch_size
        )
        changed |= _purge_summaries(
            store, conversation, redactor, report, dry_run, step, batch_size
        )
        report.conversations_changed += int(changed)
    _purge_quarantine(store, redactors, report, dry_run, step, batch_size)
    return report


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
