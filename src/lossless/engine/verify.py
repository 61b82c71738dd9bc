"""``lcm verify``: prove the history is whole, or say exactly what is wrong where.

Checks, per conversation, through the storage contract only:

- messages: ``seq`` runs 0..n-1 without gaps; part ordinals run 0..k-1; every
  native record that names a message names one of this conversation;
- content: the SHA-256 of every message, part and native (raw) record is
  recomputed and compared with the hash recorded when it was stored
  (``lossless.store.hashing``); each row that differs is named by its id, so
  an edit made behind the store's back (``UPDATE messages SET content=...``)
  is found, and a message whose raw transcript record was altered is named
  with it. Sanctioned rewrites (``lcm sensitive purge``) record new hashes;
- coverage (the lossless invariant): the context items, expanded recursively
  through summaries, yield every message exactly once, in order (except the
  messages of a branch abandoned by a rewind, ``engine.branches``, which stay
  stored outside the context);
- the DAG: a leaf is built from messages, a condensed summary from summaries
  one level shallower, all of the same conversation, with ordered time ranges;
  context token counts match what they point at;

plus the backend's own integrity check of its files and indexes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lossless.engine.branches import abandoned_seqs, is_abandoned
from lossless.models import Conversation, Summary
from lossless.store.contract import HashedRow, Store
from lossless.store.hashing import message_hash, part_hash, raw_hash


@dataclass(frozen=True, slots=True)
class Problem:
    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass(slots=True)
class VerifyReport:
    conversations: int = 0
    messages: int = 0
    summaries: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(
    store: Store,
    conversations: Sequence[Conversation] | None = None,
    *,
    progress: Callable[[Conversation], None] | None = None,
    check_backend: bool = True,
    check_content: bool = True,
) -> VerifyReport:
    """Check the store (or only ``conversations``); ``check_content=False`` skips
    recomputing the content hashes (the benchmark's baseline)."""
    report = VerifyReport()
    if check_backend:
        report.problems.extend(Problem("store", line) for line in store.integrity_check())
    for conversation in conversations if conversations is not None else store.conversations.list():
        _verify_conversation(store, conversation, report, check_content=check_content)
        report.conversations += 1
        if progress is not None:
            progress(conversation)
    return report


def _verify_conversation(
    store: Store, conversation: Conversation, report: VerifyReport, *, check_content: bool
) -> None:
    where = f"conversation {conversation.id} ({conversation.session_id})"

    def problem(what: str) -> None:
        report.problems.append(Problem(where, what))

    messages = list(store.messages.iter_all(conversation.id))
    report.messages += len(messages)
    for expected, message in enumerate(messages):
        if message.seq != expected:
            problem(f"message {message.id} has seq {message.seq}, expected {expected} (gap)")
            break
    message_ids = [m.id for m in messages]
    known = set(message_ids)
    hashed = store.messages.hashed_rows(conversation.id)
    if check_content:
        _verify_hashes(hashed, problem)
    # The hashed rows list every part in order: the ordinals come from them
    # instead of a second read of every part.
    part_ordinals: dict[int, list[int]] = {}
    for row in hashed:
        if row.kind == "part" and row.message_id is not None and row.ordinal is not None:
            part_ordinals.setdefault(row.message_id, []).append(row.ordinal)
    for message_id, ordinals in part_ordinals.items():
        if ordinals != list(range(len(ordinals))):
            problem(f"message {message_id} has part ordinals {ordinals}")
    for record in store.messages.native_records(conversation.id):
        if record.message_id is not None and record.message_id not in known:
            problem(
                f"native record {record.native_key} points at missing message {record.message_id}"
            )

    summaries = {s.id: s for s in store.summaries.list(conversation.id)}
    report.summaries += len(summaries)
    for summary in summaries.values():
        _verify_summary(store, summary, summaries, known, problem)

    tokens = {m.id: m.token_count for m in messages}
    covered: list[int] = []
    for item in store.context.list(conversation.id):
        if item.message_id is not None:
            if item.token_count != tokens.get(item.message_id, item.token_count):
                problem(f"context item {item.ordinal} has a stale token count")
            covered.append(item.message_id)
        elif item.summary_id is not None:
            target = summaries.get(item.summary_id)
            if target is None:
                problem(f"context item {item.ordinal} points at missing summary {item.summary_id}")
                continue
            if item.token_count != target.token_count:
                problem(f"context item {item.ordinal} has a stale token count")
            covered.extend(_leaves(store, target.id, summaries, problem))
    # Messages of a branch abandoned by a rewind are out of the context on purpose.
    abandoned = abandoned_seqs(conversation.metadata)
    in_context = (
        [m.id for m in messages if not is_abandoned(m.seq, abandoned)] if abandoned else message_ids
    )
    _check_coverage(covered, in_context, problem)


def _verify_summary(
    store: Store,
    summary: Summary,
    summaries: dict[str, Summary],
    known_messages: set[int],
    problem: Callable[[str], None],
) -> None:
    name = f"summary {summary.id}"
    if summary.earliest_at and summary.latest_at and summary.earliest_at > summary.latest_at:
        problem(f"{name} ends ({summary.latest_at}) before it starts ({summary.earliest_at})")
    if summary.kind == "leaf":
        sources = store.summaries.source_message_ids(summary.id)
        if not sources:
            problem(f"{name} is a leaf built from no messages")
        missing = [m for m in sources if m not in known_messages]
        if missing:
            problem(f"{name} is built from messages not in this conversation: {missing[:5]}")
        return
    children = store.summaries.source_summary_ids(summary.id)
    if not children:
        problem(f"{name} is condensed from no summaries")
    for child_id in children:
        child = summaries.get(child_id)
        if child is None:
            problem(f"{name} is built from {child_id}, not a summary of this conversation")
        elif child.depth != summary.depth - 1:
            problem(
                f"{name} (depth {summary.depth}) is built from {child_id} (depth {child.depth})"
            )


def _leaves(
    store: Store,
    summary_id: str,
    summaries: dict[str, Summary],
    problem: Callable[[str], None],
) -> list[int]:
    """The messages under a summary, in order (iterative, and safe on a corrupt cyclic DAG)."""
    out: list[int] = []
    stack = [summary_id]
    visited: set[str] = set()
    while stack:
        current_id = stack.pop()
        if current_id in visited:
            problem(
                f"summary {current_id} is reached twice under {summary_id} (a cycle or a shared child)"
            )
            continue
        visited.add(current_id)
        current = summaries.get(current_id)
        if current is None:
            continue
        if current.kind == "leaf":
            out.extend(store.summaries.source_message_ids(current.id))
        else:
            stack.extend(reversed(store.summaries.source_summary_ids(current.id)))
    return out


def _check_coverage(
    covered: list[int], message_ids: list[int], problem: Callable[[str], None]
) -> None:
    if covered == message_ids:
        return
    expected = set(message_ids)
    seen: set[int] = set()
    duplicates: list[int] = []
    for message_id in covered:
        if message_id in seen:
            duplicates.append(message_id)
        seen.add(message_id)
    missing = [m for m in message_ids if m not in seen]
    foreign = [m for m in covered if m not in expected]
    if missing:
        problem(
            f"{len(missing)} message(s) are not reachable from the context (first: {missing[:5]})"
        )
    if duplicates:
        problem(f"{len(duplicates)} message(s) are covered twice (first: {duplicates[:5]})")
    if foreign:
        problem(f"the context reaches messages of other conversations: {foreign[:5]}")
    if not (missing or duplicates or foreign):
        first = next(i for i, (a, b) in enumerate(zip(covered, message_ids, strict=True)) if a != b)
        problem(f"the context is out of order at position {first} (message {covered[first]})")


def _recompute(row: HashedRow) -> str:
    if row.kind == "message":
        role, content = row.fields
        return message_hash(role or "", content or "")
    if row.kind == "part":
        kind, text, tool_name, tool_call_id = row.fields
        return part_hash(kind or "", text, tool_name, tool_call_id)
    (raw,) = row.fields
    return raw_hash(raw or "")


def _row_name(row: HashedRow) -> str:
    if row.kind == "message":
        return f"message {row.message_id}"
    if row.kind == "part":
        return f"part {row.ordinal} of message {row.message_id}"
    owner = f" (of message {row.message_id})" if row.message_id is not None else ""
    return f"native record {row.record_id}{owner}"


def _verify_hashes(rows: Sequence[HashedRow], problem: Callable[[str], None]) -> None:
    for row in rows:
        if row.recorded is None:
            problem(f"{_row_name(row)} has no content hash (it was removed after ingest)")
        elif _recompute(row) != row.recorded:
            problem(
                f"{_row_name(row)}: content does not match the hash recorded when it was "
                "stored (changed outside lossless)"
            )
