"""Per-conversation compaction leases with fencing tokens on SQLite."""

from __future__ import annotations

import time

from lossless.errors import (
    LeaseLostError,
)
from lossless.store.contract import (
    Lease,
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
                    "INSERT INTO leases(conversation_id, owner, fence, expires_at) "
                    "VALUES (?, ?, ?, ?)",
                    (conversation_id, owner, fence, now + ttl_s),
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
                    "UPDATE leases SET owner = ?, fence = ?, expires_at = ? WHERE conversation_id = ?",
                    (owner, fence, now + ttl_s, conversation_id),
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
