"""Map operator jobs on PostgreSQL: the ``MapJobRepository`` of ``lossless.store.map_jobs``.

Workers on several machines share one job: ``claim`` takes items with
``FOR UPDATE SKIP LOCKED`` (concurrent claimers get disjoint items and never
wait on each other) and leases run on the server's clock, so machines agree
on when a dead worker's lease expired. ``complete`` is fenced by the claim's
token: a worker whose lease was taken over cannot record a second outcome.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from psycopg.types.json import Json

from lossless.errors import InputError, NotFoundError
from lossless.store import inputs, rows
from lossless.store.map_jobs import (
    MapClaim,
    MapCounts,
    MapItem,
    MapJob,
    MapJobStatus,
    MapOutcome,
    NewMapItem,
    NewMapJob,
)
from lossless.store.postgres.repository import Repo, already_decoded
from lossless.timeutil import utc_now_iso


def _to_job(row: dict[str, Any]) -> MapJob:
    return rows.map_job(row, already_decoded)  # psycopg decodes json columns


_JOB_COLUMNS = (
    "id, kind, status, project, spec, conversation_id, loaded_items, created_at, updated_at"
)
_ITEM_COLUMNS = (
    "job_id, idx, line_no, input, status, attempts, result, error, calls, input_tokens, "
    "output_tokens, message_id, updated_at"
)
_NOW = "extract(epoch FROM clock_timestamp())"


class MapJobs(Repo):
    def create(self, job: NewMapJob) -> MapJob:
        inputs.map_job(job)
        with self.s._atomic() as conn:
            if conn.execute("SELECT 1 FROM map_jobs WHERE id = %s", [job.id]).fetchone():
                raise InputError(f"map job {job.id} already exists")
            conn.execute(
                f"INSERT INTO map_jobs({_JOB_COLUMNS}) "
                "VALUES (%s, %s, 'loading', %s, %s, %s, 0, %s, %s)",
                [
                    job.id,
                    job.kind,
                    job.project,
                    Json(job.spec),
                    job.conversation_id,
                    job.created_at,
                    job.created_at,
                ],
            )
        created = self.get(job.id)
        assert created is not None
        return created

    def get(self, job_id: str) -> MapJob | None:
        found = self.s._q1(f"SELECT {_JOB_COLUMNS} FROM map_jobs WHERE id = %s", [job_id])
        return _to_job(found) if found is not None else None

    def list(self, *, limit: int = 50) -> builtins.list[MapJob]:
        return [
            _to_job(r)
            for r in self.s._q(
                f"SELECT {_JOB_COLUMNS} FROM map_jobs ORDER BY created_at DESC, id DESC LIMIT %s",
                [limit],
            )
        ]

    @staticmethod
    def _require(conn: Any, job_id: str) -> None:
        if conn.execute("SELECT 1 FROM map_jobs WHERE id = %s", [job_id]).fetchone() is None:
            raise NotFoundError(f"no map job {job_id}")

    def add_items(self, job_id: str, items: Sequence[NewMapItem]) -> int:
        if not items:
            return 0
        now = utc_now_iso()
        inputs.map_items(items)
        with self.s._atomic() as conn:
            self._require(conn, job_id)
            added = conn.execute(
                "INSERT INTO map_items(job_id, idx, line_no, input, input_problem, status, "
                "error, updated_at) "
                "SELECT %s, * , %s FROM unnest(%s::bigint[], %s::bigint[], %s::text[], "
                "%s::text[], %s::text[], %s::text[]) "
                "ON CONFLICT (job_id, idx) DO NOTHING",
                [
                    job_id,
                    now,
                    [i.index for i in items],
                    [i.line_no for i in items],
                    [i.input for i in items],
                    [i.problem for i in items],
                    ["failed" if i.problem else "pending" for i in items],
                    [i.problem for i in items],
                ],
            ).rowcount
            conn.execute(
                "UPDATE map_jobs SET loaded_items = greatest(loaded_items, %s), updated_at = %s "
                "WHERE id = %s",
                [max(i.index for i in items) + 1, now, job_id],
            )
        return int(added)

    def set_status(self, job_id: str, status: MapJobStatus) -> None:
        with self.s._atomic() as conn:
            self._require(conn, job_id)
            conn.execute(
                "UPDATE map_jobs SET status = %s, updated_at = %s WHERE id = %s",
                [status, utc_now_iso(), job_id],
            )

    def update_spec(self, job_id: str, spec: Any) -> None:
        with self.s._atomic() as conn:
            self._require(conn, job_id)
            conn.execute(
                "UPDATE map_jobs SET spec = %s, updated_at = %s WHERE id = %s",
                [Json(spec), utc_now_iso(), job_id],
            )

    def claim(
        self, job_id: str, owner: str, *, limit: int, ttl_s: float
    ) -> builtins.list[MapClaim]:
        if limit <= 0:
            return []
        with self.s._atomic() as conn:
            claimed = conn.execute(
                "WITH chosen AS (SELECT job_id, idx FROM map_items "
                "  WHERE job_id = %s AND (status = 'pending' "
                f"    OR (status = 'running' AND lease_expires_at <= {_NOW})) "
                "  ORDER BY idx LIMIT %s FOR UPDATE SKIP LOCKED) "
                "UPDATE map_items m SET status = 'running', lease_owner = %s, "
                f"lease_token = m.lease_token + 1, lease_expires_at = {_NOW} + %s, "
                "updated_at = %s FROM chosen "
                "WHERE m.job_id = chosen.job_id AND m.idx = chosen.idx "
                "RETURNING m.idx, m.line_no, m.input, m.attempts, m.lease_token",
                [job_id, limit, owner, ttl_s, utc_now_iso()],
            ).fetchall()
        return sorted(
            (
                MapClaim(
                    job_id=job_id,
                    index=int(r["idx"]),
                    line_no=int(r["line_no"]),
                    input=r["input"],
                    attempts=int(r["attempts"]),
                    owner=owner,
                    token=int(r["lease_token"]),
                )
                for r in claimed
            ),
            key=lambda c: c.index,
        )

    def renew(self, job_id: str, owner: str, ttl_s: float) -> int:
        with self.s._atomic() as conn:
            count = conn.execute(
                f"UPDATE map_items SET lease_expires_at = {_NOW} + %s "
                "WHERE job_id = %s AND lease_owner = %s AND status = 'running'",
                [ttl_s, job_id, owner],
            ).rowcount
        return int(count)

    def complete(self, claim: MapClaim, outcome: MapOutcome) -> bool:
        inputs.map_outcome(outcome)
        with self.s._atomic() as conn:
            count = conn.execute(
                "UPDATE map_items SET status = %s, attempts = %s, result = %s, error = %s, "
                "calls = calls + %s, input_tokens = input_tokens + %s, "
                "output_tokens = output_tokens + %s, message_id = %s, lease_owner = NULL, "
                "lease_expires_at = 0, updated_at = %s "
                "WHERE job_id = %s AND idx = %s AND lease_token = %s AND status = 'running'",
                [
                    outcome.status,
                    outcome.attempts,
                    outcome.result,
                    outcome.error,
                    outcome.calls,
                    outcome.input_tokens,
                    outcome.output_tokens,
                    outcome.message_id,
                    utc_now_iso(),
                    claim.job_id,
                    claim.index,
                    claim.token,
                ],
            ).rowcount
        return int(count) == 1

    def release(self, claims: Sequence[MapClaim]) -> None:
        if not claims:
            return
        with self.s._atomic() as conn:
            for c in claims:
                conn.execute(
                    "UPDATE map_items SET status = 'pending', lease_owner = NULL, "
                    "lease_expires_at = 0 WHERE job_id = %s AND idx = %s "
                    "AND lease_token = %s AND status = 'running'",
                    [c.job_id, c.index, c.token],
                )

    def holders(self, job_id: str) -> builtins.list[str]:
        return [
            r["lease_owner"]
            for r in self.s._q(
                "SELECT DISTINCT lease_owner FROM map_items "
                "WHERE job_id = %s AND status = 'running' AND lease_owner IS NOT NULL",
                [job_id],
            )
        ]

    def release_holder(self, job_id: str, owner: str) -> int:
        with self.s._atomic() as conn:
            count = conn.execute(
                "UPDATE map_items SET status = 'pending', lease_owner = NULL, "
                "lease_expires_at = 0 "
                "WHERE job_id = %s AND lease_owner = %s AND status = 'running'",
                [job_id, owner],
            ).rowcount
        return int(count)

    def requeue_failed(self, job_id: str) -> int:
        with self.s._atomic() as conn:
            self._require(conn, job_id)
            count = conn.execute(
                "UPDATE map_items SET status = 'pending', error = NULL, updated_at = %s "
                "WHERE job_id = %s AND status = 'failed' AND input_problem IS NULL",
                [utc_now_iso(), job_id],
            ).rowcount
        return int(count)

    def counts(self, job_id: str) -> MapCounts:
        row = self.s._q1(
            "SELECT count(*) FILTER (WHERE status = 'pending') AS pending, "
            "count(*) FILTER (WHERE status = 'running') AS running, "
            "count(*) FILTER (WHERE status = 'ok') AS ok, "
            "count(*) FILTER (WHERE status = 'failed') AS failed, "
            "coalesce(sum(calls), 0) AS calls, coalesce(sum(input_tokens), 0) AS i, "
            "coalesce(sum(output_tokens), 0) AS o FROM map_items WHERE job_id = %s",
            [job_id],
        )
        assert row is not None
        return MapCounts(
            pending=int(row["pending"]),
            running=int(row["running"]),
            ok=int(row["ok"]),
            failed=int(row["failed"]),
            calls=int(row["calls"]),
            input_tokens=int(row["i"]),
            output_tokens=int(row["o"]),
        )

    def items(self, job_id: str, *, after: int = -1, limit: int = 500) -> builtins.list[MapItem]:
        return [
            rows.map_item(r)
            for r in self.s._q(
                f"SELECT {_ITEM_COLUMNS} FROM map_items WHERE job_id = %s AND idx > %s "
                "ORDER BY idx LIMIT %s",
                [job_id, after, limit],
            )
        ]
