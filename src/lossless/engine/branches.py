"""Transcript branches: after a rewind, the abandoned messages leave the context.

Claude Code writes a conversation as a tree: every record names the record it
follows through ``parentUuid``. Rewinding (``/rewind``, Esc Esc, editing an
earlier prompt) or restoring a transcript cut back to an earlier point goes on
from an earlier record, and the client itself resumes from the newest record's
chain of parents. The messages after the fork point belong to a branch the
agent no longer sees; lossless keeps them stored and searchable (history is
never lost) but takes them out of the active context, so assembly and
compaction follow the branch the agent is on.

Not every ``parentUuid`` that skips the previous message is a rewind. The
parent is often a record that is not a message (a progress or telemetry line:
the chain is followed through those), and the results of parallel tool calls
point at the tool call each answers. A fork is therefore only taken when the
new message's nearest message ancestor is an earlier message *and* at least
one prompt or reply (not only tool results) lies between them.

Codex has no parent links; its rollouts record a rollback (Esc Esc
"backtrack", ``thread/rollback``) as an ``event_msg`` of type
``thread_rolled_back`` naming how many of the newest user turns are
discarded; the lines stay in the file. ``follow_rollbacks`` takes those turns
out the same way. A turn is counted by its ``user_message`` event, as Codex
counts it, and turns an earlier rollback discarded do not count again.

The abandoned messages' positions (``seq`` ranges) are recorded in the
conversation's metadata under ``ABANDONED_KEY``, which is how ``lcm verify``
knows that their absence from the context is intended. A message already
folded into a summary before the rewind stays where it is: the summary is a
record of what happened, and rewriting summaries would break their provenance.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from lossless.models import Message, NativeRecord, NewNativeRecord
from lossless.store.contract import Repositories

ABANDONED_KEY = "abandoned_seqs"
# How many non-message records (progress, telemetry) a parent chain may pass
# through before giving up; real transcripts need one or two.
MAX_HOPS = 64


@dataclass(frozen=True, slots=True)
class Rewind:
    """One fork: the new branch continues from ``fork_seq`` at ``new_seq``
    (None: a rollback, whatever comes next continues from ``fork_seq``)."""

    fork_seq: int
    new_seq: int | None
    abandoned: int
    already_summarized: int

    def describe(self) -> str:
        where = (
            f"rewind: message {self.new_seq} continues from message {self.fork_seq}"
            if self.new_seq is not None
            else f"rollback to message {self.fork_seq}"
        )
        text = (
            f"{where}; {self.abandoned} message(s) of the abandoned branch taken out of the "
            "active context (still stored and searchable)"
        )
        if self.already_summarized:
            text += f", {self.already_summarized} already in summaries left there"
        return text


def abandoned_seqs(metadata: object) -> list[tuple[int, int]]:
    """The recorded ``(first, last)`` seq ranges of abandoned messages."""
    if not isinstance(metadata, dict):
        return []
    ranges = metadata.get(ABANDONED_KEY)
    if not isinstance(ranges, list):
        return []
    return [
        (int(r[0]), int(r[1]))
        for r in ranges
        if isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) for x in r)
    ]


def is_abandoned(seq: int, ranges: Sequence[tuple[int, int]]) -> bool:
    return any(first <= seq <= last for first, last in ranges)


def follow_rewinds(
    repos: Repositories,
    conversation_id: int,
    before: Message | None,
    inserted: Sequence[Message],
) -> list[Rewind]:
    """Take the messages of branches abandoned by ``inserted`` out of the context.

    ``before`` is the conversation's last message before ``inserted`` were
    appended. Call inside the transaction that appended them, after their
    native records (and the loose ones read with them) are stored.
    """
    by_uuid: dict[str, Message] = {}
    for message in inserted:
        for uuid in _uuids(message):
            by_uuid[uuid] = message
    rewinds: list[Rewind] = []
    previous = before
    for message in inserted:
        meta = message.metadata or {}
        if meta.get("is_sidechain"):
            continue
        parent = meta.get("parent_uuid")
        if (
            isinstance(parent, str)
            and message.role != "tool"
            and previous is not None
            and parent not in _uuids(previous)
        ):
            fork = _nearest_message(repos, conversation_id, parent, by_uuid)
            if fork is not None and fork.seq < previous.seq:
                rewind = _abandon(repos, conversation_id, fork, message)
                if rewind is not None:
                    rewinds.append(rewind)
        previous = message
    return rewinds


ROLLBACK_EVENT = "thread_rolled_back"


def follow_rollbacks(
    repos: Repositories, conversation_id: int, records: Sequence[NewNativeRecord]
) -> list[Rewind]:
    """Take the user turns discarded by Codex rollbacks among ``records`` out of the
    context. Call inside the transaction that stored ``records`` and their messages."""
    rewinds: list[Rewind] = []
    for record in records:
        turns = _rollback_turns(record)
        if turns is None or record.line_no is None:
            continue
        rewind = _roll_back(repos, conversation_id, record, turns)
        if rewind is not None:
            rewinds.append(rewind)
    return rewinds


def _rollback_turns(record: NewNativeRecord) -> int | None:
    if record.record_type != "event_msg" or ROLLBACK_EVENT not in record.raw:
        return None
    payload = _payload(record.raw)
    if payload is None or payload.get("type") != ROLLBACK_EVENT:
        return None
    turns = payload.get("num_turns")
    return turns if isinstance(turns, int) and not isinstance(turns, bool) and turns > 0 else None


def _payload(raw: str) -> dict[str, object] | None:
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    payload = data.get("payload") if isinstance(data, dict) else None
    return payload if isinstance(payload, dict) else None


def _roll_back(
    repos: Repositories, conversation_id: int, rollback: NewNativeRecord, turns: int
) -> Rewind | None:
    line = rollback.line_no or 0
    earlier = [
        r
        for r in repos.messages.native_records(conversation_id)
        if r.source_path == rollback.source_path and r.line_no is not None and r.line_no < line
    ]
    earlier.sort(key=lambda r: r.line_no or 0)
    messages = {
        m.id: m for m in repos.messages.get_many([r.message_id for r in earlier if r.message_id])
    }
    conversation = repos.conversations.get(conversation_id)
    gone = abandoned_seqs(conversation.metadata if conversation else None)
    # Each user turn starts at its prompt: the user message at or just before
    # its user_message event (the event mirrors the prompt's response item).
    starts: list[Message] = []
    last_user: Message | None = None
    for record in earlier:
        message = messages.get(record.message_id) if record.message_id else None
        if message is not None and message.role == "user":
            last_user = message
        if (
            _is_user_turn(record)
            and last_user is not None
            and not is_abandoned(last_user.seq, gone)
            and last_user not in starts
        ):
            starts.append(last_user)
    if not starts:
        return None
    first = starts[-min(turns, len(starts))]
    between = sorted(
        {m.id: m for m in messages.values() if m.seq >= first.seq}.values(), key=lambda m: m.seq
    )
    if not between:
        return None
    return _take_out(repos, conversation_id, between, fork_seq=first.seq - 1, new_seq=None)


def _is_user_turn(record: NativeRecord) -> bool:
    if record.record_type != "event_msg" or "user_message" not in record.raw:
        return False
    payload = _payload(record.raw)
    return payload is not None and payload.get("type") == "user_message"


def _uuids(message: Message) -> list[str]:
    meta = message.metadata or {}
    found = [meta["uuid"]] if isinstance(meta.get("uuid"), str) else []
    more = meta.get("uuids")
    if isinstance(more, list):
        found.extend(u for u in more if isinstance(u, str))
    return found


def _nearest_message(
    repos: Repositories, conversation_id: int, uuid: str, batch: dict[str, Message]
) -> Message | None:
    """The message ``uuid`` names, or the nearest one up its parent chain."""
    current: str | None = uuid
    for _ in range(MAX_HOPS):
        if current is None:
            return None
        if current in batch:
            return batch[current]
        record = repos.messages.native_records_by_key(conversation_id, [current]).get(current)
        if record is None:
            return None
        if record.message_id is not None:
            return repos.messages.get(record.message_id)
        current = _parent_of(record.raw)
    return None


def _parent_of(raw: str) -> str | None:
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    parent = data.get("parentUuid") or data.get("logicalParentUuid")
    return parent if isinstance(parent, str) else None


def _abandon(
    repos: Repositories, conversation_id: int, fork: Message, new: Message
) -> Rewind | None:
    between = repos.messages.list(
        conversation_id, after_seq=fork.seq, limit=max(0, new.seq - fork.seq - 1)
    )
    between = [m for m in between if m.seq < new.seq and not (m.metadata or {}).get("is_sidechain")]
    if not any(m.role != "tool" for m in between):
        # Only tool results in between: parallel tool calls, not a rewind.
        return None
    return _take_out(repos, conversation_id, between, fork_seq=fork.seq, new_seq=new.seq)


def _take_out(
    repos: Repositories,
    conversation_id: int,
    between: Sequence[Message],
    *,
    fork_seq: int,
    new_seq: int | None,
) -> Rewind:
    removed = set(repos.context.remove_messages(conversation_id, [m.id for m in between]))
    seqs = sorted(m.seq for m in between if m.id in removed)
    conversation = repos.conversations.get(conversation_id)
    ranges = abandoned_seqs(conversation.metadata if conversation else None)
    ranges = _merge(ranges, _runs(seqs))
    count = int((conversation.metadata or {}).get("rewinds", 0) if conversation else 0)
    repos.conversations.update_metadata(
        conversation_id,
        {ABANDONED_KEY: [list(r) for r in ranges], "rewinds": count + 1},
    )
    return Rewind(
        fork_seq=fork_seq,
        new_seq=new_seq,
        abandoned=len(seqs),
        already_summarized=len(between) - len(seqs),
    )


def _runs(seqs: Sequence[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for seq in seqs:
        if runs and runs[-1][1] == seq - 1:
            runs[-1] = (runs[-1][0], seq)
        else:
            runs.append((seq, seq))
    return runs


def _merge(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for first, last in sorted([*a, *b]):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(last, merged[-1][1]))
        else:
            merged.append((first, last))
    return merged
