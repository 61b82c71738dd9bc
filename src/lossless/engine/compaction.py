"""Compaction: turn old context items into a DAG of summaries, never losing a message.

Vocabulary (see ``ARCHITECTURE.md``, invariants 2-4 and 6):

- A conversation's *context items* are its ordered message and summary
  references. Compaction replaces a contiguous range of items by one summary
  item; the messages themselves are never touched.
- **Leaf pass**: the oldest contiguous run of raw message items outside the
  protected tail, capped at ``leaf_chunk_tokens``, rendered with timestamps and
  summarized (depth 0) with the previous summary as continuity context.
- **Condensation**: at least ``leaf_min_fanout`` (depth 0) or
  ``condensed_min_fanout`` (depth >= 1) contiguous summaries of one depth merged
  into a summary one level deeper, with that depth's prompt.
- **Protected tail**: the last ``fresh_tail_count`` raw messages (a count,
  never widened to a whole user turn), widened only so a tool_use is never
  separated from its tool_result and a call still waiting for its result stays
  raw. Nothing in it is ever compacted; older messages of a long turn compact
  like any history, and assembly keeps the turn's prompt visible.

Every summary goes through three-level escalation (``summarize_with_escalation``)
and is accepted only if it is smaller than what it replaces, so every pass either
reduces the context or reports a no-op and why.

Concurrency: one conversation is compacted by one worker at a time, across
processes and machines, through the store's fenced lease. The slow part (the
summarizer call) runs without any database transaction; the write (summary,
links, context replacement) is one transaction that first re-checks the lease
fence, so a worker whose lease expired and was taken over cannot write a stale
summary. Different conversations have different leases and run in parallel.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from lossless import owners
from lossless.config import Config
from lossless.errors import LeaseLostError, LosslessError
from lossless.models import ContextItem, Message, NewSummary, Part, Summary
from lossless.store.contract import Lease, LeaseHolder, Repositories, Store
from lossless.summarize import (
    DEFAULT_FALLBACK_TOKENS,
    EscalationLevel,
    Summarizer,
    SummarizerFatalError,
    format_message_block,
    format_summary_block,
    join_blocks,
    summarize_with_escalation,
    truncate_for_fallback,
)
from lossless.summarize.configured import summarizer_from_config
from lossless.tokens import TokenEstimator, estimate_tokens

__all__ = [
    "CompactionError",
    "CompactionPlan",
    "CompactionResult",
    "Compactor",
    "MessageFacts",
    "PassResult",
    "blocked_cuts",
    "load_facts",
    "message_facts",
    "pending_call_scan",
    "pending_call_start",
    "protected_start",
    "summarizer_from_config",
]

log = logging.getLogger(__name__)

Mode = Literal["leaf", "condense", "incremental", "sweep", "until_under"]
_FILE_ID_RE = re.compile(r"\bfile_[0-9a-f]{16}\b")
# Fanout used by compact_until_under once normal sweeps stop making progress:
# merging pairs is the most a budget emergency can still squeeze out.
_RELAXED_FANOUT = 2
# Messages read at once to learn their facts (see ``load_facts``): large
# enough that the per-query cost vanishes, small enough to bound memory.
_FACTS_BATCH = 2_000


class CompactionError(LosslessError):
    """Compaction had to stop; nothing half-done was written.

    Raised for misconfigured summarizers (bad key, unknown model) and when the
    conversation's lease was taken over by another worker mid-write. The
    original exception is chained as ``__cause__``.
    """


# --------------------------------------------------------------------- message facts


@dataclass(frozen=True, slots=True)
class MessageFacts:
    """What compaction and assembly need to know about one stored message."""

    id: int
    role: str
    created_at: str
    token_count: int
    tool_uses: tuple[str, ...] = ()
    tool_results: tuple[str, ...] = ()
    is_prompt: bool = False


def message_facts(message: Message, parts: Sequence[Part]) -> MessageFacts:
    """Tool call ids used/answered by ``message`` and whether it opens a user turn.

    A user turn opens with a real prompt: a ``user`` message that is not only
    tool results and not client bookkeeping (Claude Code's meta records and
    its own compaction summaries are user-role but nobody typed them).
    """
    uses = tuple(p.tool_call_id for p in parts if p.kind == "tool_use" and p.tool_call_id)
    results = tuple(p.tool_call_id for p in parts if p.kind == "tool_result" and p.tool_call_id)
    meta = message.metadata or {}
    is_prompt = (
        message.role == "user"
        and not meta.get("is_meta")
        and not meta.get("is_compact_summary")
        and (any(p.kind != "tool_result" for p in parts) if parts else bool(message.content))
    )
    return MessageFacts(
        id=message.id,
        role=message.role,
        created_at=message.created_at,
        token_count=message.token_count,
        tool_uses=uses,
        tool_results=results,
        is_prompt=is_prompt,
    )


def load_facts(repos: Repositories, message_ids: Sequence[int]) -> dict[int, MessageFacts]:
    """The facts of ``message_ids``, read ``_FACTS_BATCH`` messages at a time.

    Facts are small, but reading them takes each message with its content and
    parts: all at once, a 500,000-message conversation held its whole text in
    memory (1.4 GB) just to learn its tool call ids. A batch at a time, the
    peak is the facts plus one batch's text.
    """
    facts: dict[int, MessageFacts] = {}
    for at in range(0, len(message_ids), _FACTS_BATCH):
        messages = repos.messages.get_many(message_ids[at : at + _FACTS_BATCH])
        parts = repos.messages.parts([m.id for m in messages])
        for message in messages:
            facts[message.id] = message_facts(message, parts.get(message.id, []))
    return facts


def blocked_cuts(
    items: Sequence[ContextItem],
    facts: Mapping[int, MessageFacts],
    *,
    used_before: Collection[str] = (),
) -> list[bool]:
    """``blocked[i]`` is True when a cut just before item ``i`` would separate a
    tool_use from its tool_result (``len(items) + 1`` entries; the ends are free).

    ``items`` may be only the newest part of a context: ``used_before`` names the
    calls used by older items, whose results in ``items`` then block every cut
    up to them (including the one before the first item, no end then).
    """
    n = len(items)
    use_at: dict[str, int] = dict.fromkeys(used_before, -1)
    diff = [0] * (n + 2)
    for index, item in enumerate(items):
        if item.message_id is None:
            continue
        fact = facts.get(item.message_id)
        if fact is None:
            continue
        for call_id in fact.tool_results:
            start = use_at.pop(call_id, None)
            if start is not None and start < index:
                diff[start + 1] += 1
                diff[index + 1] -= 1
        for call_id in fact.tool_uses:
            use_at[call_id] = index
    blocked = [False] * (n + 1)
    running = 0
    for i in range(n + 1):
        running += diff[i]
        blocked[i] = running > 0
    return blocked


def protected_start(
    items: Sequence[ContextItem],
    facts: Mapping[int, MessageFacts],
    fresh_tail_count: int,
    *,
    blocked: Sequence[bool] | None = None,
) -> int:
    """Index of the first item of the protected tail (``len(items)`` if none).

    The tail is the last ``fresh_tail_count`` raw messages: a count, never
    widened to a whole user turn, because one autonomous turn can run to
    hundreds of messages and must compact like any other history (the newest
    prompt stays visible through assembly, see ``newest_prompt``). It widens
    backwards only (1) to calls still waiting for their results, and (2) to
    the tool_use of any result inside the tail, so no pair straddles the
    boundary.
    """
    n = len(items)
    start = n
    seen = 0
    if fresh_tail_count > 0:
        for index in range(n - 1, -1, -1):
            if items[index].item_type == "message":
                seen += 1
                start = index
                if seen >= fresh_tail_count:
                    break
    pending = pending_call_start(items, facts)
    if pending is not None:
        start = min(start, pending)
    cuts = blocked if blocked is not None else blocked_cuts(items, facts)
    while start > 0 and cuts[start]:
        start -= 1
    return start


def pending_call_start(
    items: Sequence[ContextItem], facts: Mapping[int, MessageFacts]
) -> int | None:
    """Index of the oldest message whose tool call is still waiting for its result.

    Only calls the conversation has not moved on from count: scanning back
    from the end, the newest assistant messages whose calls are unanswered
    (parallel calls may span several records) up to the first assistant
    message that is complete or the newest prompt. A call left unanswered
    before that (an interrupted tool) will never be answered, and pinning it
    would pin everything after it.
    """
    return pending_call_scan(items, facts)[0]


def pending_call_scan(
    items: Sequence[ContextItem], facts: Mapping[int, MessageFacts]
) -> tuple[int | None, bool]:
    """``pending_call_start`` and whether its scan stopped inside ``items``.

    When ``items`` is only the newest part of a context, a scan that ran off
    its start might have gone on over older items.
    """
    answered: set[str] = set()
    found: int | None = None
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.message_id is None:
            return found, True
        fact = facts.get(item.message_id)
        if fact is None:
            continue
        answered.update(fact.tool_results)
        if fact.is_prompt:
            return found, True
        if fact.role != "assistant":
            continue
        if any(call_id not in answered for call_id in fact.tool_uses):
            found = index
            continue
        return found, True
    return found, False


# --------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class PassResult:
    """What one leaf or condensation pass did, truthfully.

    ``summary_id`` is set when a summary was written; otherwise ``noop`` says
    why nothing was done. Token figures are the conversation's context tokens
    as this worker saw them, before and after the pass.
    """

    kind: Literal["leaf", "condensed"]
    conversation_id: int
    tokens_before: int
    tokens_after: int
    summary_id: str | None = None
    depth: int | None = None
    level: EscalationLevel | None = None
    source_items: int = 0
    source_tokens: int = 0
    summary_tokens: int = 0
    noop: str | None = None
    elapsed_s: float = 0.0
    # Why the summary is not the model's first answer (the errors that forced
    # escalation to aggressive or to the truncation fallback).
    why: str | None = None
    # The model that wrote the summary (None: the offline summarizer or truncation).
    model: str | None = None

    @property
    def acted(self) -> bool:
        return self.summary_id is not None

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    def describe(self) -> str:
        if not self.acted:
            return f"{self.kind} pass: no-op: {self.noop}"
        return (
            f"{self.kind} pass: {self.source_items} items ({self.source_tokens:,} tokens) -> "
            f"{self.summary_id} depth {self.depth} ({self.summary_tokens:,} tokens, "
            f"{self.level}); context {self.tokens_before:,} -> {self.tokens_after:,}"
        )


@dataclass(slots=True)
class CompactionResult:
    """The outcome of a compaction run (several passes) on one conversation."""

    conversation_id: int
    mode: Mode
    tokens_before: int
    tokens_after: int
    passes: list[PassResult] = field(default_factory=list)
    noop: str | None = None
    error: str | None = None
    target: int | None = None

    @property
    def summaries_created(self) -> list[str]:
        return [p.summary_id for p in self.passes if p.summary_id is not None]

    @property
    def levels(self) -> dict[str, int]:
        """Summaries written at each escalation level (normal, aggressive, fallback)."""
        counts: dict[str, int] = {}
        for p in self.passes:
            if p.acted and p.level is not None:
                counts[p.level] = counts.get(p.level, 0) + 1
        return counts

    @property
    def reasons(self) -> list[str]:
        """The distinct causes of escalation, in the order they first happened."""
        return list(dict.fromkeys(p.why for p in self.passes if p.acted and p.why))

    @property
    def acted(self) -> bool:
        return bool(self.summaries_created)

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def reached_target(self) -> bool | None:
        return None if self.target is None else self.tokens_after <= self.target

    def describe(self) -> str:
        if self.error:
            head = f"error: {self.error}"
        elif not self.acted:
            head = f"no-op: {self.noop or 'nothing to compact'}"
        else:
            leaves = sum(1 for p in self.passes if p.acted and p.kind == "leaf")
            condensed = sum(1 for p in self.passes if p.acted and p.kind == "condensed")
            head = (
                f"{leaves} leaf + {condensed} condensed summaries; context "
                f"{self.tokens_before:,} -> {self.tokens_after:,} tokens (saved {self.saved:,})"
            )
            if self.noop:
                head += f"; stopped: {self.noop}"
        if self.target is not None:
            head += (
                f"; target {self.target:,} {'reached' if self.reached_target else 'not reached'}"
            )
        return head


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """What a sweep would do now, without calling a summarizer (``--dry-run``)."""

    conversation_id: int
    context_tokens: int
    context_items: int
    raw_messages: int
    protected_messages: int
    protected_tokens: int
    leaf_chunks: int
    leaf_source_tokens: int
    condensable: dict[int, int]
    estimated_tokens_after_leaves: int

    def describe(self) -> str:
        if not self.leaf_chunks and not self.condensable:
            return "nothing to compact"
        text = (
            f"{self.leaf_chunks} leaf chunk(s) ({self.leaf_source_tokens:,} tokens) -> "
            f"~{self.estimated_tokens_after_leaves:,} context tokens"
        )
        if self.condensable:
            runs = ", ".join(f"depth {d}: {n}" for d, n in sorted(self.condensable.items()))
            text += f"; condensable summaries now ({runs})"
        return text


# --------------------------------------------------------------------- the compactor


@dataclass(slots=True)
class _Chunk:
    first: int
    last: int  # inclusive index into the snapshot's items
    tokens: int


class _Snapshot:
    """One worker's view of a conversation's context, kept in sync with its own writes.

    Loading the full item list once per run (instead of once per pass) keeps a
    sweep over a huge conversation linear. Concurrent ingest only appends items
    after the snapshot's end, which the protected tail already treats as newer.
    """

    def __init__(self, repos: Repositories, conversation_id: int) -> None:
        self.repos = repos
        self.conversation_id = conversation_id
        self.items: list[ContextItem] = repos.context.list(conversation_id)
        ids = [i.message_id for i in self.items if i.message_id is not None]
        self.facts: dict[int, MessageFacts] = load_facts(repos, ids) if ids else {}
        self.summaries: dict[str, Summary] = {}
        self._blocked: list[bool] | None = None
        self.tokens = sum(i.token_count for i in self.items)

    def blocked(self) -> list[bool]:
        if self._blocked is None:
            self._blocked = blocked_cuts(self.items, self.facts)
        return self._blocked

    def summary(self, summary_id: str) -> Summary:
        found = self.summaries.get(summary_id)
        if found is None:
            found = self.repos.summaries.get(summary_id)
            if found is None:
                raise LosslessError(f"context refers to missing summary {summary_id}")
            self.summaries[summary_id] = found
        return found

    def depth_of(self, item: ContextItem) -> int | None:
        return None if item.summary_id is None else self.summary(item.summary_id).depth

    def replace(self, first: int, last: int, summary: Summary) -> None:
        """Mirror ``context.replace_range`` for items ``first..last`` (indices)."""
        self.summaries[summary.id] = summary
        self.tokens += summary.token_count - sum(
            i.token_count for i in self.items[first : last + 1]
        )
        self.items[first : last + 1] = [
            ContextItem(
                conversation_id=self.conversation_id,
                ordinal=self.items[first].ordinal,
                item_type="summary",
                message_id=None,
                summary_id=summary.id,
                token_count=summary.token_count,
            )
        ]
        if self._blocked is not None:
            # A replaced range never has a tool pair crossing its edges, so the
            # cuts outside it keep their state and the cuts inside it vanish:
            # no need to rescan the whole conversation after every pass.
            self._blocked[first + 1 : last + 1] = []


def busy_note(holder: LeaseHolder | None) -> str:
    """The no-op of a run that found the lease held: who holds it, since and until when."""
    if holder is None:
        return "busy: another worker holds this conversation's compaction lease"
    since = f" since {_utc(holder.since)}" if holder.since is not None else ""
    return (
        f"busy: {owners.describe(holder.owner)} holds this conversation's compaction "
        f"lease{since} (until {_utc(holder.expires_at)} unless it finishes first)"
    )


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


class Compactor:
    """Runs compaction passes for one store with one summarizer.

    ``owner`` names this worker in leases (default host:pid:start time:nonce:
    a lease whose holder died on this machine is taken over at once).
    ``wait_s`` is how long a run waits for another worker's lease on the same
    conversation before reporting a "busy" no-op; ``lease_ttl_s`` bounds how
    long a crashed worker can block others. ``on_pass`` is called after every
    pass (progress bars).
    """

    def __init__(
        self,
        store: Store,
        config: Config,
        summarizer: Summarizer,
        *,
        estimator: TokenEstimator = estimate_tokens,
        owner: str | None = None,
        lease_ttl_s: float | None = None,
        wait_s: float = 0.0,
        on_pass: Callable[[PassResult], None] | None = None,
    ) -> None:
        self.store = store
        self.config = config
        self.summarizer = summarizer
        self.estimate = estimator
        self.owner = owner or owners.new_owner()
        if lease_ttl_s is None:
            # Long enough for one pass at its slowest (two escalation levels,
            # each with every retry timing out), short enough that a crashed
            # worker does not block the conversation for long.
            calls = 2 * (1 + max(0, config.summarizer_retries))
            lease_ttl_s = max(120.0, calls * config.summarizer_timeout_s + 30.0)
        self.lease_ttl_s = lease_ttl_s
        self.wait_s = wait_s
        self.on_pass = on_pass

    # -- settings ---------------------------------------------------------

    def _fanout(self, depth: int) -> int:
        fanout = self.config.leaf_min_fanout if depth == 0 else self.config.condensed_min_fanout
        return max(2, fanout)

    # -- leasing ----------------------------------------------------------

    @contextmanager
    def _lease(self, conversation_id: int) -> Iterator[Lease | LeaseHolder | None]:
        """The conversation's lease, or (when busy) who holds it, None if unknown."""
        deadline = time.monotonic() + max(0.0, self.wait_s)
        got = self._try_lease(conversation_id)
        while not isinstance(got, Lease) and time.monotonic() < deadline:
            time.sleep(0.05)
            got = self._try_lease(conversation_id)
        try:
            yield got
        finally:
            if isinstance(got, Lease):
                self.store.leases.release(got)

    def _try_lease(self, conversation_id: int) -> Lease | LeaseHolder | None:
        """Acquire the lease, taking it over from a holder that died on this machine."""
        leases = self.store.leases
        lease = leases.acquire(conversation_id, self.owner, self.lease_ttl_s)
        if lease is not None:
            return lease
        holder = leases.holder(conversation_id)
        if holder is None:
            # Released between the two reads: one more try.
            return leases.acquire(conversation_id, self.owner, self.lease_ttl_s)
        if not owners.is_dead_here(holder.owner):
            return holder
        taken = leases.take_over(conversation_id, holder, self.owner, self.lease_ttl_s)
        if taken is None:
            return leases.holder(conversation_id)
        log.warning(
            "conversation %s: took over the compaction lease of %s, which is no longer running",
            conversation_id,
            owners.describe(holder.owner),
        )
        return taken

    def _renew(self, lease: Lease) -> Lease:
        try:
            return self.store.leases.renew(lease, self.lease_ttl_s)
        except LeaseLostError as exc:
            raise CompactionError(
                f"compaction of conversation {lease.conversation_id} stopped: {exc}"
            ) from exc

    # -- selection --------------------------------------------------------

    def _protected(self, snap: _Snapshot) -> int:
        return protected_start(
            snap.items,
            snap.facts,
            self.config.fresh_tail_count,
            blocked=snap.blocked(),
        )

    def _leaf_chunk(self, snap: _Snapshot, tail: int) -> tuple[_Chunk | None, str]:
        items = snap.items
        first = next((i for i in range(tail) if items[i].item_type == "message"), None)
        if first is None:
            return None, "no raw messages outside the protected tail"
        cap = max(1, self.config.leaf_chunk_tokens)
        cut = first + 1
        total = items[first].token_count
        while cut < tail and items[cut].item_type == "message":
            if total + items[cut].token_count > cap:
                break
            total += items[cut].token_count
            cut += 1
        blocked = snap.blocked()
        if blocked[cut]:
            # Prefer a smaller chunk; grow past the cap only when the first
            # tool exchange alone is larger than it.
            chosen = next((c for c in range(cut - 1, first, -1) if not blocked[c]), None)
            if chosen is None:
                forward = cut + 1
                while forward <= tail and items[forward - 1].item_type == "message":
                    if not blocked[forward]:
                        chosen = forward
                        break
                    forward += 1
            if chosen is None:
                return (
                    None,
                    "every cut of the oldest raw run would split a tool_use from its result",
                )
            cut = chosen
        tokens = sum(items[i].token_count for i in range(first, cut))
        return _Chunk(first, cut - 1, tokens), ""

    def _condense_chunk(self, snap: _Snapshot, tail: int, depth: int, fanout: int) -> _Chunk | None:
        items = snap.items
        cap = max(1, self.config.leaf_chunk_tokens)
        index = 0
        while index < tail:
            if snap.depth_of(items[index]) != depth:
                index += 1
                continue
            end = index
            while end < tail and snap.depth_of(items[end]) == depth:
                end += 1
            if end - index >= fanout:
                last = index
                total = items[index].token_count
                while last + 1 < end and (
                    last + 1 - index < fanout or total + items[last + 1].token_count <= cap
                ):
                    last += 1
                    total += items[last].token_count
                return _Chunk(index, last, total)
            index = end
        return None

    def _condensable(self, snap: _Snapshot, tail: int, relaxed: bool = False) -> dict[int, int]:
        """Depth -> number of summaries in runs long enough to condense now."""
        found: dict[int, int] = {}
        index = 0
        items = snap.items
        while index < tail:
            depth = snap.depth_of(items[index])
            if depth is None:
                index += 1
                continue
            end = index
            while end < tail and snap.depth_of(items[end]) == depth:
                end += 1
            fanout = _RELAXED_FANOUT if relaxed else self._fanout(depth)
            if end - index >= fanout:
                found[depth] = found.get(depth, 0) + end - index
            index = end
        return found

    # -- passes -----------------------------------------------------------

    def _noop(self, kind: Literal["leaf", "condensed"], snap: _Snapshot, why: str) -> PassResult:
        tokens = snap.tokens
        return PassResult(kind, snap.conversation_id, tokens, tokens, noop=why)

    def _summarize(
        self,
        text: str,
        *,
        depth: int,
        target: int,
        previous: str | None,
        limit: int,
        on_unavailable: Literal["fallback", "raise"],
    ) -> tuple[str, EscalationLevel, dict[str, object]] | None:
        """Escalate until the summary is smaller than ``limit`` tokens (the
        context tokens it replaces); None if even truncation cannot get there."""
        result = summarize_with_escalation(
            self.summarizer,
            text,
            depth=depth,
            target_tokens=max(1, target),
            previous_context=previous,
            estimate=self.estimate,
            on_unavailable=on_unavailable,
        )
        summary, level = result.text, result.level
        errors = [result.error] if result.error else []
        if self.estimate(summary) >= limit:
            if level != "fallback":
                errors.append(f"{level}: the summary was not smaller than what it replaces")
            # Escalation compares with the rendered source, which carries
            # headers; the context may count fewer tokens for the same items.
            summary = truncate_for_fallback(
                text, min(DEFAULT_FALLBACK_TOKENS, max(1, limit - 1)), estimate=self.estimate
            )
            level = "fallback"
            if not summary.strip() or self.estimate(summary) >= limit:
                return None
        meta: dict[str, object] = {
            "level": level,
            "summarizer": getattr(self.summarizer, "name", type(self.summarizer).__name__),
            "model": result.model,
            "input_tokens": result.input_tokens,
            "output_tokens": result.output_tokens,
        }
        if errors:
            meta["escalation_errors"] = "; ".join(errors)[:2000]
        return summary, level, meta

    def _previous_context(self, snap: _Snapshot, before: int) -> str | None:
        for index in range(before - 1, -1, -1):
            item = snap.items[index]
            if item.summary_id is not None:
                return snap.summary(item.summary_id).content
        return None

    def _write(
        self,
        snap: _Snapshot,
        lease: Lease,
        chunk: _Chunk,
        summary: NewSummary,
        *,
        message_ids: Sequence[int] = (),
        source_summary_ids: Sequence[str] = (),
    ) -> Summary:
        items = snap.items
        try:
            with self.store.transaction() as tx:
                # The fence check and the write share one transaction: a worker
                # whose lease was taken over while it was summarizing is
                # rejected here, before anything becomes visible.
                tx.leases.check(lease)
                created = tx.summaries.create(
                    summary, message_ids=message_ids, source_summary_ids=source_summary_ids
                )
                tx.context.replace_range(
                    snap.conversation_id,
                    items[chunk.first].ordinal,
                    items[chunk.last].ordinal,
                    created,
                )
        except LeaseLostError as exc:
            raise CompactionError(
                f"compaction of conversation {snap.conversation_id} stopped, nothing written: {exc}"
            ) from exc
        snap.replace(chunk.first, chunk.last, created)
        return created

    def _leaf_pass(
        self,
        snap: _Snapshot,
        lease: Lease,
        *,
        on_unavailable: Literal["fallback", "raise"] = "fallback",
    ) -> PassResult:
        started = time.monotonic()
        tail = self._protected(snap)
        chunk, why = self._leaf_chunk(snap, tail)
        if chunk is None:
            return self._noop("leaf", snap, why)
        items = snap.items[chunk.first : chunk.last + 1]
        ids = [i.message_id for i in items if i.message_id is not None]
        messages = snap.repos.messages.get_many(ids)
        by_id = {m.id: m for m in messages}
        ordered = [by_id[i] for i in ids]
        text = join_blocks(
            format_message_block(m.role, m.created_at, m.content, message_id=m.id) for m in ordered
        )
        previous = self._previous_context(snap, chunk.first)
        lease = self._renew(lease)
        done = self._summarize(
            text,
            depth=0,
            target=self.config.leaf_target_tokens,
            previous=previous,
            limit=chunk.tokens,
            on_unavailable=on_unavailable,
        )
        if done is None:
            return self._noop("leaf", snap, f"a {chunk.tokens}-token chunk is too small to shrink")
        content, level, meta = done
        file_ids = tuple(dict.fromkeys(f for m in ordered for f in _FILE_ID_RE.findall(m.content)))
        times = sorted(m.created_at for m in ordered)
        before = snap.tokens
        summary_tokens = self.estimate(content)
        created = self._write(
            snap,
            self._renew(lease),
            chunk,
            NewSummary(
                conversation_id=snap.conversation_id,
                kind="leaf",
                depth=0,
                content=content,
                token_count=summary_tokens,
                earliest_at=times[0],
                latest_at=times[-1],
                descendant_count=0,
                source_token_count=chunk.tokens,
                file_ids=file_ids,
                metadata=meta,
            ),
            message_ids=ids,
        )
        return PassResult(
            "leaf",
            snap.conversation_id,
            before,
            snap.tokens,
            summary_id=created.id,
            depth=0,
            level=level,
            why=_why(meta),
            model=_model(meta),
            source_items=len(items),
            source_tokens=chunk.tokens,
            summary_tokens=summary_tokens,
            elapsed_s=time.monotonic() - started,
        )

    def _condense_pass(
        self,
        snap: _Snapshot,
        lease: Lease,
        *,
        depth: int | None = None,
        relaxed: bool = False,
        on_unavailable: Literal["fallback", "raise"] = "fallback",
    ) -> PassResult:
        """Condense the oldest eligible run at ``depth`` (default: the shallowest
        depth that has one) into one summary a level deeper."""
        started = time.monotonic()
        tail = self._protected(snap)
        eligible = self._condensable(snap, tail, relaxed)
        depths = sorted(d for d in eligible if depth is None or d == depth)
        if not depths:
            where = "" if depth is None else f" at depth {depth}"
            return self._noop(
                "condensed", snap, f"no run of same-depth summaries{where} reaches the fanout"
            )
        depth = depths[0]
        fanout = _RELAXED_FANOUT if relaxed else self._fanout(depth)
        chunk = self._condense_chunk(snap, tail, depth, fanout)
        if chunk is None:  # pragma: no cover - _condensable found one
            return self._noop("condensed", snap, "no condensable run")
        sources = [
            snap.summary(i.summary_id)
            for i in snap.items[chunk.first : chunk.last + 1]
            if i.summary_id is not None
        ]
        text = join_blocks(
            format_summary_block(
                s.earliest_at, s.latest_at, s.content, summary_id=s.id, depth=s.depth
            )
            for s in sources
        )
        lease = self._renew(lease)
        done = self._summarize(
            text,
            depth=depth + 1,
            target=self.config.condensed_target_tokens,
            previous=self._previous_context(snap, chunk.first),
            limit=chunk.tokens,
            on_unavailable=on_unavailable,
        )
        if done is None:
            return self._noop(
                "condensed", snap, f"{len(sources)} summaries are too small to shrink"
            )
        content, level, meta = done
        earliest = [s.earliest_at for s in sources if s.earliest_at]
        latest = [s.latest_at for s in sources if s.latest_at]
        before = snap.tokens
        summary_tokens = self.estimate(content)
        created = self._write(
            snap,
            self._renew(lease),
            chunk,
            NewSummary(
                conversation_id=snap.conversation_id,
                kind="condensed",
                depth=depth + 1,
                content=content,
                token_count=summary_tokens,
                earliest_at=min(earliest) if earliest else None,
                latest_at=max(latest) if latest else None,
                descendant_count=sum(1 + s.descendant_count for s in sources),
                source_token_count=sum(s.source_token_count for s in sources),
                file_ids=tuple(dict.fromkeys(f for s in sources for f in s.file_ids)),
                metadata=meta,
            ),
            source_summary_ids=[s.id for s in sources],
        )
        return PassResult(
            "condensed",
            snap.conversation_id,
            before,
            snap.tokens,
            summary_id=created.id,
            depth=depth + 1,
            level=level,
            why=_why(meta),
            model=_model(meta),
            source_items=len(sources),
            source_tokens=chunk.tokens,
            summary_tokens=summary_tokens,
            elapsed_s=time.monotonic() - started,
        )

    # -- runs -------------------------------------------------------------

    def _run(
        self,
        conversation_id: int,
        mode: Mode,
        body: Callable[[_Snapshot, Lease, CompactionResult], None],
        *,
        target: int | None = None,
        best_effort: bool = False,
    ) -> CompactionResult:
        with self._lease(conversation_id) as lease:
            if not isinstance(lease, Lease):
                tokens = self.store.context.token_total(conversation_id)
                return CompactionResult(
                    conversation_id,
                    mode,
                    tokens,
                    tokens,
                    noop=busy_note(lease),
                    target=target,
                )
            snap = _Snapshot(self.store, conversation_id)
            result = CompactionResult(
                conversation_id, mode, snap.tokens, snap.tokens, target=target
            )
            try:
                body(snap, lease, result)
            except SummarizerFatalError as exc:
                # Misconfiguration: a fallback summary would be junk, so stop
                # and say so, whatever the mode.
                result.tokens_after = snap.tokens
                raise CompactionError(
                    f"compaction of conversation {conversation_id} stopped: {exc}"
                ) from exc
            except Exception as exc:
                result.tokens_after = snap.tokens
                if not best_effort:
                    raise
                log.warning(
                    "incremental compaction of conversation %s failed: %s",
                    conversation_id,
                    exc,
                    exc_info=True,
                )
                result.error = f"{type(exc).__name__}: {exc}"
                return result
            result.tokens_after = snap.tokens
            return result

    def _record(self, result: CompactionResult, outcome: PassResult) -> PassResult:
        result.passes.append(outcome)
        result.tokens_after = outcome.tokens_after
        if outcome.acted and self.on_pass is not None:
            self.on_pass(outcome)
        return outcome

    def leaf_pass(self, conversation_id: int) -> CompactionResult:
        """Run exactly one leaf pass (if any chunk is eligible)."""

        def body(snap: _Snapshot, lease: Lease, result: CompactionResult) -> None:
            outcome = self._record(result, self._leaf_pass(snap, lease))
            result.noop = outcome.noop

        return self._run(conversation_id, "leaf", body)

    def condense_pass(self, conversation_id: int, *, depth: int | None = None) -> CompactionResult:
        """Run exactly one condensation pass (at ``depth``, default the shallowest eligible)."""

        def body(snap: _Snapshot, lease: Lease, result: CompactionResult) -> None:
            outcome = self._record(result, self._condense_pass(snap, lease, depth=depth))
            result.noop = outcome.noop

        return self._run(conversation_id, "condense", body)

    def raw_tokens_outside_tail(self, conversation_id: int) -> int:
        snap = _Snapshot(self.store, conversation_id)
        tail = self._protected(snap)
        return sum(i.token_count for i in snap.items[:tail] if i.item_type == "message")

    def incremental(self, conversation_id: int) -> CompactionResult:
        """After a turn: one leaf pass if the raw tokens outside the protected
        tail exceed ``leaf_chunk_tokens``, then one condensation per depth below
        ``incremental_max_depth`` (-1: no limit, 0: none).

        Best-effort: failures are logged and returned in ``result.error``, never
        raised, except a misconfigured summarizer (``CompactionError``).
        """

        def body(snap: _Snapshot, lease: Lease, result: CompactionResult) -> None:
            tail = self._protected(snap)
            raw = sum(i.token_count for i in snap.items[:tail] if i.item_type == "message")
            threshold = self.config.leaf_chunk_tokens
            if raw <= threshold:
                result.noop = (
                    f"{raw:,} raw tokens outside the protected tail (leaf pass above {threshold:,})"
                )
            else:
                self._record(result, self._leaf_pass(snap, lease, on_unavailable="raise"))
            max_depth = self.config.incremental_max_depth
            depth = 0
            # One condensation per depth, shallowest first: a new depth-d
            # summary may complete a run at depth d, never at a shallower one.
            while max_depth < 0 or depth < max_depth:
                deepest = max(
                    (snap.depth_of(i) or 0 for i in snap.items if i.summary_id is not None),
                    default=-1,
                )
                if depth > deepest:
                    break
                outcome = self._condense_pass(snap, lease, depth=depth, on_unavailable="raise")
                if outcome.acted:
                    self._record(result, outcome)
                depth += 1
            if result.acted:
                result.noop = None

        return self._run(conversation_id, "incremental", body, best_effort=True)

    def after_turn(self, conversation_id: int, *, budget: int | None = None) -> CompactionResult:
        """What to run after each model turn.

        The incremental pass first; then, if the context is still above
        ``context_threshold`` of ``budget`` (default ``context_budget_tokens``),
        compaction down to that threshold. Best-effort like ``incremental``:
        only a misconfigured summarizer raises (``CompactionError``).
        """
        result = self.incremental(conversation_id)
        if result.error:
            return result
        window = budget if budget is not None else self.config.context_budget_tokens
        threshold = int(self.config.context_threshold * window)
        if self.store.context.token_total(conversation_id) <= threshold:
            return result
        try:
            overflow = self.compact_until_under(conversation_id, threshold)
        except CompactionError:
            raise
        except Exception as exc:
            log.warning("overflow compaction of conversation %s failed: %s", conversation_id, exc)
            result.error = f"{type(exc).__name__}: {exc}"
            return result
        result.passes.extend(overflow.passes)
        result.tokens_after = overflow.tokens_after
        result.target = threshold
        result.noop = None if result.acted else (overflow.noop or result.noop)
        return result

    def _sweep_body(
        self,
        snap: _Snapshot,
        lease: Lease,
        result: CompactionResult,
        *,
        stop_at: int | None = None,
        relaxed: bool = False,
    ) -> None:
        def under() -> bool:
            return stop_at is not None and snap.tokens <= stop_at

        leaf_noop = condense_noop = None
        while not under():
            outcome = self._leaf_pass(snap, lease)
            if not outcome.acted:
                leaf_noop = outcome.noop
                break
            self._record(result, outcome)
            if outcome.saved <= 0:
                result.noop = "a leaf pass saved nothing"
                return
        while not under():
            outcome = self._condense_pass(snap, lease, relaxed=relaxed)
            if not outcome.acted:
                condense_noop = outcome.noop
                break
            self._record(result, outcome)
            if outcome.saved <= 0:
                result.noop = "a condensation pass saved nothing"
                return
        if not result.acted:
            result.noop = "; ".join(n for n in (leaf_noop, condense_noop) if n) or None

    def sweep(self, conversation_id: int) -> CompactionResult:
        """Full sweep: leaf passes until none is eligible, then condensation
        from the shallowest depth up, stopping when a pass saves nothing."""
        return self._run(
            conversation_id,
            "sweep",
            lambda snap, lease, result: self._sweep_body(snap, lease, result),
        )

    def compact_until_under(
        self, conversation_id: int, target: int, *, max_rounds: int | None = None
    ) -> CompactionResult:
        """Compact until the context is at most ``target`` tokens, in up to
        ``max_rounds`` (default ``compact_max_rounds``) sweeps that stop as soon
        as the target is met. Once a normal sweep stops making progress, later
        rounds condense pairs of summaries (fanout 2) as a last resort. The
        protected tail is never touched, so a target below it is not reachable;
        the result says so (``reached_target``).
        """
        rounds = max_rounds if max_rounds is not None else self.config.compact_max_rounds

        def body(snap: _Snapshot, lease: Lease, result: CompactionResult) -> None:
            if snap.tokens <= target:
                result.noop = f"already at {snap.tokens:,} tokens, under the {target:,} target"
                return
            relaxed = False
            for _ in range(max(1, rounds)):
                before = snap.tokens
                self._sweep_body(snap, lease, result, stop_at=target, relaxed=relaxed)
                if snap.tokens <= target:
                    result.noop = None
                    return
                if snap.tokens >= before:
                    if relaxed:
                        break
                    relaxed = True
            if snap.tokens > target:
                tail = self._protected(snap)
                protected = sum(i.token_count for i in snap.items[tail:])
                result.noop = (
                    f"cannot get under {target:,} tokens: {snap.tokens:,} remain, "
                    f"{protected:,} of them in the protected tail"
                )

        return self._run(conversation_id, "until_under", body, target=target)

    def plan(self, conversation_id: int) -> CompactionPlan:
        """What a sweep would do now (leaf chunks and condensable runs), read-only."""
        snap = _Snapshot(self.store, conversation_id)
        before = snap.tokens
        item_count = len(snap.items)
        tail = self._protected(snap)
        protected_items = snap.items[tail:]
        condensable = self._condensable(snap, tail)
        chunks = 0
        source = 0
        after = before
        target = self.config.leaf_target_tokens
        # Simulate the leaf phase on the snapshot: each chunk becomes a
        # placeholder item of the target size (no summary is written).
        while True:
            tail = self._protected(snap)
            chunk, _ = self._leaf_chunk(snap, tail)
            if chunk is None:
                break
            chunks += 1
            source += chunk.tokens
            size = min(target, max(1, chunk.tokens - 1))
            after -= chunk.tokens - size
            snap.replace(
                chunk.first, chunk.last, _placeholder_summary(conversation_id, chunks, size)
            )
        return CompactionPlan(
            conversation_id=conversation_id,
            context_tokens=before,
            context_items=item_count,
            raw_messages=len(snap.facts),
            protected_messages=sum(1 for i in protected_items if i.item_type == "message"),
            protected_tokens=sum(i.token_count for i in protected_items),
            leaf_chunks=chunks,
            leaf_source_tokens=source,
            condensable=condensable,
            estimated_tokens_after_leaves=after,
        )


def _placeholder_summary(conversation_id: int, n: int, tokens: int) -> Summary:
    """A stand-in leaf for ``plan``'s simulation; never stored."""
    return Summary(
        id=f"planned_{n}",
        conversation_id=conversation_id,
        kind="leaf",
        depth=0,
        content="",
        token_count=tokens,
        earliest_at=None,
        latest_at=None,
        descendant_count=0,
        source_token_count=0,
        created_at="",
    )


def _why(meta: dict[str, object]) -> str | None:
    errors = meta.get("escalation_errors")
    return str(errors) if errors else None


def _model(meta: dict[str, object]) -> str | None:
    model = meta.get("model")
    return str(model) if model else None
