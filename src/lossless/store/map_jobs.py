"""The storage contract of the map operators (``lcm map``, ``lcm agentic-map``).

A map job fans one model call (or one sub-agent) out per input item. Its state
lives in the store, so a run killed at any point resumes where it stopped and
several workers (on PostgreSQL, on several machines) can share one job:

- an item is *claimed* before it is worked on: the claim sets a lease that
  expires and a ``token`` that grows with every claim of the item;
- an item's outcome is recorded only by the holder of its newest claim
  (``complete`` is fenced by the token), so a worker whose lease expired and
  was taken over cannot write a second result;
- an item whose outcome is recorded is never handed out again.

Together: every item ends with exactly one recorded outcome, whatever dies
when. Items are numbered by their position in the input (``index``, from 0)
and read back in that order.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from lossless.models import JSON

MapKind = Literal["llm_map", "agentic_map"]
MapJobStatus = Literal["loading", "running", "done", "cancelled"]
MapItemStatus = Literal["pending", "running", "ok", "failed"]
MAP_JOB_STATUSES: tuple[MapJobStatus, ...] = ("loading", "running", "done", "cancelled")
MAP_ITEM_STATUSES: tuple[MapItemStatus, ...] = ("pending", "running", "ok", "failed")


@dataclass(frozen=True, slots=True)
class NewMapJob:
    id: str
    kind: MapKind
    project: str
    spec: JSON
    created_at: str
    conversation_id: int | None = None


@dataclass(frozen=True, slots=True)
class MapJob:
    """A job as stored. ``spec`` holds everything needed to run it again."""

    id: str
    kind: MapKind
    status: MapJobStatus
    project: str
    spec: JSON
    conversation_id: int | None
    created_at: str
    updated_at: str
    # Input lines read into items so far; final once the status leaves "loading".
    loaded_items: int


@dataclass(frozen=True, slots=True)
class NewMapItem:
    """One input line. ``problem`` set: the line is unusable and fails at once."""

    index: int
    line_no: int
    input: str
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class MapItem:
    job_id: str
    index: int
    line_no: int
    input: str
    status: MapItemStatus
    attempts: int
    result: str | None  # the validated answer, as JSON text
    error: str | None
    calls: int
    input_tokens: int
    output_tokens: int
    message_id: int | None
    updated_at: str


@dataclass(frozen=True, slots=True)
class MapClaim:
    """The right to work on one item until ``expires_at`` (the store's clock)."""

    job_id: str
    index: int
    line_no: int
    input: str
    attempts: int
    owner: str
    token: int


@dataclass(frozen=True, slots=True)
class MapOutcome:
    """What became of a claimed item."""

    status: Literal["ok", "failed"]
    attempts: int
    result: str | None = None
    error: str | None = None
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    message_id: int | None = None


@dataclass(frozen=True, slots=True)
class MapCounts:
    pending: int = 0
    running: int = 0
    ok: int = 0
    failed: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.pending + self.running + self.ok + self.failed

    @property
    def finished(self) -> int:
        return self.ok + self.failed


class MapJobRepository(Protocol):
    def create(self, job: NewMapJob) -> MapJob: ...

    def get(self, job_id: str) -> MapJob | None: ...

    def list(self, *, limit: int = 50) -> builtins.list[MapJob]:
        """Newest first."""
        ...

    def add_items(self, job_id: str, items: Sequence[NewMapItem]) -> int:
        """Add input items (idempotent on ``index``); returns how many were new.

        An item with a ``problem`` is stored as ``failed`` with that reason.
        ``loaded_items`` of the job becomes the highest index stored plus one.
        """
        ...

    def set_status(self, job_id: str, status: MapJobStatus) -> None: ...

    def update_spec(self, job_id: str, spec: JSON) -> None: ...

    def claim(
        self, job_id: str, owner: str, *, limit: int, ttl_s: float
    ) -> builtins.list[MapClaim]:
        """Up to ``limit`` items that are pending or whose lease expired, lowest index first.

        Concurrent claimers get disjoint items and do not wait for each other.
        """
        ...

    def renew(self, job_id: str, owner: str, ttl_s: float) -> int:
        """Extend every lease ``owner`` holds on the job; returns how many."""
        ...

    def complete(self, claim: MapClaim, outcome: MapOutcome) -> bool:
        """Record the item's outcome; False (nothing written) if the claim was superseded."""
        ...

    def release(self, claims: Sequence[MapClaim]) -> None:
        """Give unfinished claims back (pending again), e.g. on cancel or shutdown."""
        ...

    def holders(self, job_id: str) -> builtins.list[str]:
        """The owners of the job's running claims (expired ones included)."""
        ...

    def release_holder(self, job_id: str, owner: str) -> int:
        """Every claim ``owner`` holds on the job becomes pending again; returns how many."""
        ...

    def requeue_failed(self, job_id: str) -> int:
        """Failed items (not unusable input lines) become pending again; returns how many."""
        ...

    def counts(self, job_id: str) -> MapCounts: ...

    def items(self, job_id: str, *, after: int = -1, limit: int = 500) -> builtins.list[MapItem]:
        """Items with an index above ``after``, in input order."""
        ...
