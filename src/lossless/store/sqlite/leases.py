"""Per-conversation compaction leases with fencing tokens on SQLite."""

from __future__ import annotations

import time

from lossless.errors import (
    LeaseLostError,
)
from lossless.store.contract import (
    Lease,
    LeaseHolder,
)
from lossless.store.rows import check_text
from lossless.store.sqlite.repository import Repo


class Leases(Repo):
    def acquire(self, conversation_id: int, owner: str, ttl_s: float) -> Lease | None:
        check_text(owner, "lease owner")
        now = time.time()
        with self.s._atomic():
            row = self.s._q1(
                "SELECT owner, fence, expires_at FROM leases WHERE conversation_id = ?",
                (conversation_id,),
            )
            if row is None:
                fence = 1
                self.db.execute(
                    "INSERT INTO leases(conversation_id, owner, fence, expires_at, acquired_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (conversation_id, owner, fence, now + ttl_s, now),
                )
            elif row["owner"] == owner and row["expires_at"] > now:
                fence = int(row["fence"])
                self.db.execute(
                    "UPDATE leases SET expires_at = ? WHERE conversation_id = ?",
                    (now + ttl_s, conversation_id),
                )
            elif row["owner"] is None or row["expires_at"] <= now:
                fence = int(row["fence"]) + 1
                self.db.execute(
                    "UPDATE leases SET owner = ?, fence = ?, expires_at = ?, acquired_at = ? "
                    "WHERE conversation_id = ?",
                    (owner, fence, now + ttl_s, now, conversation_id),
                )
            else:
                return None
        return Lease(conversation_id, owner, fence, now + ttl_s)

    def renew(self, lease: Lease, ttl_s: float) -> Lease:
        expires = time.time() + ttl_s
        with self.s._atomic():
            self.check(lease)
            self.db.execute(
                "UPDATE leases SET expires_at = ? WHERE conversation_id = ?",
                (expires, lease.conversation_id),
            )
        return Lease(lease.conversation_id, lease.owner, lease.fence, expires)

    def release(self, lease: Lease) -> None:
        with self.s._atomic():
            self.db.execute(
                "UPDATE leases SET owner = NULL, expires_at = 0 "
                "WHERE conversation_id = ? AND owner = ? AND fence = ?",
                (lease.conversation_id, lease.owner, lease.fence),
            )

    def holder(self, conversation_id: int) -> LeaseHolder | None:
        row = self.s._q1(
            "SELECT owner, fence, acquired_at, expires_at FROM leases "
            "WHERE conversation_id = ? AND owner IS NOT NULL AND expires_at > ?",
            (conversation_id, time.time()),
        )
        if row is None:
            return None
        return LeaseHolder(
            row["owner"], int(row["fence"]), row["acquired_at"], float(row["expires_at"])
        )

    def take_over(
        self, conversation_id: int, holder: LeaseHolder, owner: str, ttl_s: float
    ) -> Lease | None:
        check_text(owner, "lease owner")
        now = time.time()
        with self.s._atomic():
            # Compare and swap on (owner, fence): only the holder judged dead is replaced.
            taken = self.db.execute(
                "UPDATE leases SET owner = ?, fence = fence + 1, expires_at = ?, acquired_at = ? "
                "WHERE conversation_id = ? AND owner = ? AND fence = ? RETURNING fence",
                (owner, now + ttl_s, now, conversation_id, holder.owner, holder.fence),
            ).fetchone()
        if taken is None:
            return None
        return Lease(conversation_id, owner, int(taken[0]), now + ttl_s)

    def check(self, lease: Lease) -> None:
        row = self.s._q1(
            "SELECT owner, fence, expires_at FROM leases WHERE conversation_id = ?",
            (lease.conversation_id,),
        )
        if (
            row is None
            or row["owner"] != lease.owner
            or row["fence"] != lease.fence
            or row["expires_at"] <= time.time()
        ):
            raise LeaseLostError(
                f"lease on conversation {lease.conversation_id} (fence {lease.fence}) "
                "is no longer held by this worker"
            )
