"""Map operator jobs on SQLite: the ``MapJobRepository`` of ``lossless.store.map_jobs``.

One database file has one writer at a time, so a claim is a plain
``UPDATE … RETURNING`` inside the store's write lock; leases use this
machine's clock (every claimer of a SQLite store runs on this machine).
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

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
from lossless.store.sqlite.repository import Repo
from lossless.timeutil import utc_now_iso


def _to_job(row: sqlite3.Row) -> MapJob:
    return rows.map_job(row, json.loads)


_JOB_COLUMNS = (
    "id, kind, status, project, spec, conversation_id, loaded_items, created_at, updated_at"
)
_ITEM_COLUMNS = (
    "job_id, idx, line_no, input, status, attempts, result, error, calls, input_tokens, "
    "output_tokens, message_id, updated_at"
)


class MapJobs(Repo):
    def _q(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[sqlite3.Row]:
        return self.s._q(sql, params)

    def create(self, job: NewMapJob) -> MapJob:
        inputs.map_job(job)
        spec = json.dumps(job.spec, ensure_ascii=False, sort_keys=True)
        with self.s._atomic():
            try:
                self.db.execute(
                    f"INSERT INTO map_jobs({_JOB_COLUMNS}) VALUES (?, ?, 'loading', ?, ?, ?, 0, ?, ?)",
                    (
                        job.id,
                        job.kind,
                        job.project,
                        spec,
                        job.conversation_id,
                        job.created_at,
                        job.created_at,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise InputError(f"map job {job.id} cannot be created: {exc}") from None
        created = self.get(job.id)
        assert created is not None
        return created

    def get(self, job_id: str) -> MapJob | None:
        found = self.s._q1(f"SELECT {_JOB_COLUMNS} FROM map_jobs WHERE id = ?", (job_id,))
        return _to_job(found) if found is not None else None

    def list(self, *, limit: int = 50) -> builtins.list[MapJob]:
        return [
            _to_job(r)
            for r in self._q(
                f"SELECT {_JOB_COLUMNS} FROM map_jobs ORDER BY created_at DESC, id DESC LIMIT ?",
                (limit,),
            )
        ]

    def _require(self, job_id: str) -> None:
        if self.s._q1("SELECT 1 FROM map_jobs WHERE id = ?", (job_id,)) is None:
            raise NotFoundError(f"no map job {job_id}")

    def add_items(self, job_id: str, items: Sequence[NewMapItem]) -> int:
        if not items:
            return 0
        now = utc_now_iso()
        inputs.map_items(items)
        with self.s._atomic():
            self._require(job_id)
            before = self.db.total_changes
            self.db.executemany(
                "INSERT OR IGNORE INTO map_items(job_id, idx, line_no, input, input_problem, "
                "status, error, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        job_id,
                        item.index,
                        item.line_no,
                        item.input,
                        item.problem,
                        "failed" if item.problem else "pending",
                        item.problem,
                        now,
                    )
                    for item in items
                ],
            )
            added = self.db.total_changes - before
            self.db.execute(
                "UPDATE map_jobs SET loaded_items = max(loaded_items, ?), updated_at = ? "
                "WHERE id = ?",
                (max(item.index for item in items) + 1, now, job_id),
            )
        return added

    def set_status(self, job_id: str, status: MapJobStatus) -> None:
        with self.s._atomic():
            self._require(job_id)
            self.db.execute(
                "UPDATE map_jobs SET status = ?, updated_at = ? WHERE id = ?",
                (status, utc_now_iso(), job_id),
            )

    def update_spec(self, job_id: str, spec: Any) -> None:
        text = json.dumps(spec, ensure_ascii=False, sort_keys=True)
        rows.check_text(text, "job spec")
        with self.s._atomic():
            self._require(job_id)
            self.db.execute(
                "UPDATE map_jobs SET spec = ?, updated_at = ? WHERE id = ?",
                (text, utc_now_iso(), job_id),
            )

    def claim(
        self, job_id: str, owner: str, *, limit: int, ttl_s: float
    ) -> builtins.list[MapClaim]:
        if limit <= 0:
            return []
        now = time.time()
        with self.s._atomic():
            claimed = self.db.execute(
                "UPDATE map_items SET status = 'running', lease_owner = ?, "
                "lease_token = lease_token + 1, lease_expires_at = ?, updated_at = ? "
                "WHERE job_id = ? AND idx IN ("
                "  SELECT idx FROM map_items WHERE job_id = ? AND (status = 'pending' "
                "    OR (status = 'running' AND lease_expires_at <= ?)) ORDER BY idx LIMIT ?) "
                "RETURNING idx, line_no, input, attempts, lease_token",
                (owner, now + ttl_s, utc_now_iso(), job_id, job_id, now, limit),
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
        with self.s._atomic():
            cursor = self.db.execute(
                "UPDATE map_items SET lease_expires_at = ? "
                "WHERE job_id = ? AND lease_owner = ? AND status = 'running'",
                (time.time() + ttl_s, job_id, owner),
            )
        return cursor.rowcount

    def complete(self, claim: MapClaim, outcome: MapOutcome) -> bool:
        inputs.map_outcome(outcome)
        with self.s._atomic():
            cursor = self.db.execute(
                "UPDATE map_items SET status = ?, attempts = ?, result = ?, error = ?, "
                "calls = calls + ?, input_tokens = input_tokens + ?, "
                "output_tokens = output_tokens + ?, message_id = ?, lease_owner = NULL, "
                "lease_expires_at = 0, updated_at = ? "
                "WHERE job_id = ? AND idx = ? AND lease_token = ? AND status = 'running'",
                (
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
                ),
            )
        return cursor.rowcount == 1

    def release(self, claims: Sequence[MapClaim]) -> None:
        if not claims:
            return
        with self.s._atomic():
            self.db.executemany(
                "UPDATE map_items SET status = 'pending', lease_owner = NULL, "
                "lease_expires_at = 0 "
                "WHERE job_id = ? AND idx = ? AND lease_token = ? AND status = 'running'",
                [(c.job_id, c.index, c.token) for c in claims],
            )

    def holders(self, job_id: str) -> builtins.list[str]:
        return [
            r["lease_owner"]
            for r in self._q(
                "SELECT DISTINCT lease_owner FROM map_items "
                "WHERE job_id = ? AND status = 'running' AND lease_owner IS NOT NULL",
                (job_id,),
            )
        ]

    def release_holder(self, job_id: str, owner: str) -> int:
        with self.s._atomic():
            cursor = self.db.execute(
                "UPDATE map_items SET status = 'pending', lease_owner = NULL, "
                "lease_expires_at = 0 WHERE job_id = ? AND lease_owner = ? AND status = 'running'",
                (job_id, owner),
            )
        return cursor.rowcount

    def requeue_failed(self, job_id: str) -> int:
        with self.s._atomic():
            self._require(job_id)
            cursor = self.db.execute(
                "UPDATE map_items SET status = 'pending', error = NULL, updated_at = ? "
                "WHERE job_id = ? AND status = 'failed' AND input_problem IS NULL",
                (utc_now_iso(), job_id),
            )
        return cursor.rowcount

    def counts(self, job_id: str) -> MapCounts:
        by_status = {
            r["status"]: int(r["n"])
            for r in self._q(
                "SELECT status, count(*) AS n FROM map_items WHERE job_id = ? GROUP BY status",
                (job_id,),
            )
        }
        usage = self.s._q1(
            "SELECT coalesce(sum(calls), 0) AS calls, coalesce(sum(input_tokens), 0) AS i, "
            "coalesce(sum(output_tokens), 0) AS o FROM map_items WHERE job_id = ?",
            (job_id,),
        )
        assert usage is not None
        return MapCounts(
            pending=by_status.get("pending", 0),
            running=by_status.get("running", 0),
            ok=by_status.get("ok", 0),
            failed=by_status.get("failed", 0),
            calls=int(usage["calls"]),
            input_tokens=int(usage["i"]),
            output_tokens=int(usage["o"]),
        )

    def items(self, job_id: str, *, after: int = -1, limit: int = 500) -> builtins.list[MapItem]:
        return [
            rows.map_item(r)
            for r in self._q(
                f"SELECT {_ITEM_COLUMNS} FROM map_items WHERE job_id = ? AND idx > ? "
                "ORDER BY idx LIMIT ?",
                (job_id, after, limit),
            )
        ]
