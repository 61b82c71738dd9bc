"""PostgreSQL's ``Coordination`` (``lossless.store.contract``): the job queue and receipts.

The job queue is shared by workers on many machines.

``claim`` takes the oldest due job with ``FOR UPDATE SKIP LOCKED``: N workers
claiming at once get N different jobs and never wait on each other. A claim
expires by the database clock; a worker that dies mid-job leaves its job to
be claimed again (up to ``max_attempts``), and the new claim carries a new
fencing token, so the dead worker's late ``complete`` or ``fail`` is refused
with ``LeaseLostError`` instead of overwriting the retry's outcome.

A ready job for a conversation is not handed out while another job of the
same kind for that conversation is running: N workers compact N different
conversations. (The conversation's compaction lease still guards the writes
themselves.)
"""

from __future__ import annotations

import builtins
import json
from typing import TYPE_CHECKING, Any

from lossless.errors import LeaseLostError
from lossless.models import JSON
from lossless.store.contract import DEFAULT_JOB_ATTEMPTS, Job
from lossless.store.rows import check_text

if TYPE_CHECKING:
    from lossless.store.postgres.store import PostgresStore

MAX_RETRY_DELAY_S = 300.0


_RETURNING = (
    "RETURNING id, kind, conversation_id, payload, attempts, max_attempts, claimed_by, fence, "
    "extract(epoch FROM claim_expires_at)::float8 AS expires"
)


def _job(row: dict[str, Any]) -> Job:
    return Job(
        id=int(row["id"]),
        kind=row["kind"],
        conversation_id=row["conversation_id"],
        payload=row["payload"],
        attempts=int(row["attempts"]),
        max_attempts=int(row["max_attempts"]),
        owner=row["claimed_by"],
        fence=int(row["fence"]),
        expires_at=float(row["expires"]),
    )


class Jobs:
    def __init__(self, store: PostgresStore) -> None:
        self.s = store

    def enqueue(
        self,
        kind: str,
        conversation_id: int | None = None,
        payload: JSON | None = None,
        *,
        delay_s: float = 0.0,
        max_attempts: int = DEFAULT_JOB_ATTEMPTS,
    ) -> int | None:
        """Add a job; None if one of this kind already waits for the conversation."""
        check_text(kind, "job kind")
        text = json.dumps(payload or {}, ensure_ascii=False, separators=(",", ":"))
        check_text(text, "job payload")
        with self.s._atomic() as conn:
            row = conn.execute(
                "INSERT INTO jobs(kind, conversation_id, payload, max_attempts, run_after) "
                "VALUES (%s, %s, %s::json, %s, clock_timestamp() + make_interval(secs => %s)) "
                "ON CONFLICT (kind, conversation_id) WHERE state = 'ready' DO NOTHING "
                "RETURNING id",
                [kind, conversation_id, text, max_attempts, delay_s],
            ).fetchone()
        return None if row is None else int(row["id"])

    def claim(
        self, owner: str, ttl_s: float, *, kinds: builtins.list[str] | None = None
    ) -> Job | None:
        """The oldest due job (or one whose claim expired), claimed for ``ttl_s`` seconds."""
        check_text(owner, "job owner")
        with self.s._atomic() as conn:
            # Claims that expired on their last allowed attempt are over.
            conn.execute(
                "UPDATE jobs SET state = 'failed', finished_at = clock_timestamp(), "
                "last_error = concat_ws('; ', last_error, "
                "'claim by ' || claimed_by || ' expired on attempt ' || attempts) "
                "WHERE state = 'running' AND claim_expires_at <= clock_timestamp() "
                "AND attempts >= max_attempts"
            )
            row = conn.execute(
                "SELECT j.id FROM jobs j "
                "WHERE ((j.state = 'ready' AND j.run_after <= clock_timestamp()) "
                "OR (j.state = 'running' AND j.claim_expires_at <= clock_timestamp())) "
                "AND (%s::text[] IS NULL OR j.kind = ANY(%s::text[])) "
                "AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.state = 'running' "
                "AND r.kind = j.kind AND r.conversation_id = j.conversation_id "
                "AND r.id <> j.id AND r.claim_expires_at > clock_timestamp()) "
                "ORDER BY j.run_after, j.id LIMIT 1 FOR UPDATE OF j SKIP LOCKED",
                [kinds, kinds],
            ).fetchone()
            if row is None:
                return None
            claimed = conn.execute(
                "UPDATE jobs SET state = 'running', claimed_by = %s, "
                "fence = nextval('lease_fences'), attempts = attempts + 1, "
                "claim_expires_at = clock_timestamp() + make_interval(secs => %s) "
                f"WHERE id = %s {_RETURNING}",
                [owner, ttl_s, row["id"]],
            ).fetchone()
        assert claimed is not None
        return _job(claimed)

    def renew(self, job: Job, ttl_s: float) -> Job:
        """Extend a claim; ``LeaseLostError`` if the job was claimed again since."""
        with self.s._atomic() as conn:
            row = conn.execute(
                "UPDATE jobs SET claim_expires_at = clock_timestamp() + make_interval(secs => %s) "
                f"WHERE id = %s AND state = 'running' AND fence = %s {_RETURNING}",
                [ttl_s, job.id, job.fence],
            ).fetchone()
        if row is None:
            raise self._lost(job)
        return _job(row)

    def complete(self, job: Job) -> None:
        """Record the job as done; ``LeaseLostError`` if this claim was superseded.

        A claim that expired but was not taken by anyone is still honoured:
        the unchanged fence proves no one else did the work.
        """
        with self.s._atomic() as conn:
            cur = conn.execute(
                "UPDATE jobs SET state = 'done', finished_at = clock_timestamp(), "
                "claim_expires_at = NULL WHERE id = %s AND state = 'running' AND fence = %s",
                [job.id, job.fence],
            )
            if cur.rowcount != 1:
                raise self._lost(job)

    def fail(self, job: Job, error: str, *, retry_in_s: float | None = None) -> str:
        """Record a failed attempt; the job waits to be retried or, out of attempts, fails.

        Returns the job's new state (``ready`` or ``failed``).
        """
        error = error.replace("\x00", "\\x00")
        delay = retry_in_s if retry_in_s is not None else min(MAX_RETRY_DELAY_S, 2.0**job.attempts)
        with self.s._atomic() as conn:
            row = conn.execute(
                "SELECT attempts, max_attempts, EXISTS (SELECT 1 FROM jobs w WHERE "
                "w.state = 'ready' AND w.kind = j.kind AND w.conversation_id = j.conversation_id) "
                "AS superseded FROM jobs j WHERE id = %s AND state = 'running' AND fence = %s "
                "FOR UPDATE",
                [job.id, job.fence],
            ).fetchone()
            if row is None:
                raise self._lost(job)
            if row["attempts"] < row["max_attempts"] and not row["superseded"]:
                conn.execute(
                    "UPDATE jobs SET state = 'ready', claimed_by = NULL, claim_expires_at = NULL, "
                    "last_error = %s, run_after = clock_timestamp() + make_interval(secs => %s) "
                    "WHERE id = %s",
                    [error, delay, job.id],
                )
                return "ready"
            # Out of attempts, or a newer request already waits and will do the work.
            note = "" if not row["superseded"] else " (a newer job of this kind waits)"
            conn.execute(
                "UPDATE jobs SET state = 'failed', finished_at = clock_timestamp(), "
                "claim_expires_at = NULL, last_error = %s WHERE id = %s",
                [error + note, job.id],
            )
            return "failed"

    def counts(self) -> dict[str, int]:
        """Jobs per state (``ready``, ``running``, ``done``, ``failed``)."""
        found = {"ready": 0, "running": 0, "done": 0, "failed": 0}
        for r in self.s._q("SELECT state, count(*) AS n FROM jobs GROUP BY state"):
            found[r["state"]] = int(r["n"])
        return found

    def get(self, job_id: int) -> dict[str, Any] | None:
        """Everything recorded about a job (for diagnostics)."""
        row = self.s._q1(
            "SELECT id, kind, conversation_id, payload, state, attempts, max_attempts, "
            "claimed_by, fence, last_error FROM jobs WHERE id = %s",
            [job_id],
        )
        return None if row is None else dict(row)

    @staticmethod
    def _lost(job: Job) -> LeaseLostError:
        return LeaseLostError(
            f"job {job.id} (fence {job.fence}) is no longer claimed by {job.owner}: "
            "its claim expired and it was claimed again"
        )


class Receipts:
    """Delivered outbox events (``lossless.store.outbox``), in ``outbox_receipts``."""

    def __init__(self, store: PostgresStore) -> None:
        self.s = store

    def record(self, origin: str, event_id: str, kind: str, captured_at: str) -> bool:
        """Record an event as delivered; False if it already was (do not apply it again).

        Called inside the transaction that applies the event: a concurrent
        deliverer of the same event waits here for that transaction, then
        sees the receipt.
        """
        for value, what in ((origin, "origin"), (event_id, "event id"), (kind, "event kind")):
            check_text(value, what)
        with self.s._atomic() as conn:
            cur = conn.execute(
                "INSERT INTO outbox_receipts(origin, event_id, kind, captured_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (origin, event_id) DO NOTHING",
                [origin, event_id, kind, captured_at],
            )
            return cur.rowcount == 1

    def exists(self, origin: str, event_id: str) -> bool:
        check_text(origin, "origin")
        check_text(event_id, "event id")
        row = self.s._q1(
            "SELECT 1 AS found FROM outbox_receipts WHERE origin = %s AND event_id = %s",
            [origin, event_id],
        )
        return row is not None

    def count(self, origin: str | None = None) -> int:
        if origin is None:
            row = self.s._q1("SELECT count(*) AS n FROM outbox_receipts")
        else:
            row = self.s._q1(
                "SELECT count(*) AS n FROM outbox_receipts WHERE origin = %s", [origin]
            )
        return int(row["n"]) if row else 0


class PostgresCoordination:
    """The job queue and receipts of one store, bound to its connection or transaction."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    @property
    def jobs(self) -> Jobs:
        return Jobs(self._store)

    @property
    def receipts(self) -> Receipts:
        return Receipts(self._store)
