"""Per-conversation compaction leases with fencing tokens on PostgreSQL."""

from __future__ import annotations

from lossless.errors import (
    LeaseLostError,
)
from lossless.store.contract import (
    Lease,
    LeaseHolder,
)
from lossless.store.postgres.repository import Conn, Repo
from lossless.store.rows import (
    check_text,
)


class Leases(Repo):
    """Per-conversation leases, judged by the database clock, fenced by a sequence."""

    def acquire(self, conversation_id: int, owner: str, ttl_s: float) -> Lease | None:
        check_text(owner, "lease owner")
        with self.s._atomic() as conn:
            # Make sure the row exists, then lock it: every contender for
            # this conversation queues on the same row lock.
            conn.execute(
                "INSERT INTO leases(conversation_id, owner, fence, expires_at) "
                "VALUES (%s, NULL, 0, '-infinity') ON CONFLICT (conversation_id) DO NOTHING",
                [conversation_id],
            )
            row = conn.execute(
                "SELECT owner, fence, expires_at > clock_timestamp() AS live FROM leases "
                "WHERE conversation_id = %s FOR UPDATE",
                [conversation_id],
            ).fetchone()
            assert row is not None
            if row["owner"] == owner and row["live"]:
                fence_sql, since_sql = "fence", "acquired_at"
            elif row["owner"] is None or not row["live"]:
                fence_sql, since_sql = "nextval('lease_fences')", "clock_timestamp()"
            else:
                return None
            updated = conn.execute(
                f"UPDATE leases SET owner = %s, fence = {fence_sql}, acquired_at = {since_sql}, "
                "expires_at = clock_timestamp() + make_interval(secs => %s) "
                "WHERE conversation_id = %s "
                "RETURNING fence, extract(epoch FROM expires_at)::float8 AS expires",
                [owner, ttl_s, conversation_id],
            ).fetchone()
            assert updated is not None
        return Lease(conversation_id, owner, int(updated["fence"]), float(updated["expires"]))

    def renew(self, lease: Lease, ttl_s: float) -> Lease:
        with self.s._atomic() as conn:
            self._check(conn, lease)
            row = conn.execute(
                "UPDATE leases SET expires_at = clock_timestamp() + make_interval(secs => %s) "
                "WHERE conversation_id = %s "
                "RETURNING extract(epoch FROM expires_at)::float8 AS expires",
                [ttl_s, lease.conversation_id],
            ).fetchone()
            assert row is not None
        return Lease(lease.conversation_id, lease.owner, lease.fence, float(row["expires"]))

    def release(self, lease: Lease) -> None:
        with self.s._atomic() as conn:
            conn.execute(
                "UPDATE leases SET owner = NULL, expires_at = '-infinity' "
                "WHERE conversation_id = %s AND owner = %s AND fence = %s",
                [lease.conversation_id, lease.owner, lease.fence],
            )

    def holder(self, conversation_id: int) -> LeaseHolder | None:
        row = self.s._q1(
            "SELECT owner, fence, extract(epoch FROM acquired_at)::float8 AS since, "
            "extract(epoch FROM expires_at)::float8 AS expires FROM leases "
            "WHERE conversation_id = %s AND owner IS NOT NULL AND expires_at > clock_timestamp()",
            [conversation_id],
        )
        if row is None:
            return None
        return LeaseHolder(row["owner"], int(row["fence"]), row["since"], float(row["expires"]))

    def take_over(
        self, conversation_id: int, holder: LeaseHolder, owner: str, ttl_s: float
    ) -> Lease | None:
        check_text(owner, "lease owner")
        with self.s._atomic() as conn:
            # Compare and swap on (owner, fence): only the holder judged dead is replaced.
            taken = conn.execute(
                "UPDATE leases SET owner = %s, fence = nextval('lease_fences'), "
                "acquired_at = clock_timestamp(), "
                "expires_at = clock_timestamp() + make_interval(secs => %s) "
                "WHERE conversation_id = %s AND owner = %s AND fence = %s "
                "RETURNING fence, extract(epoch FROM expires_at)::float8 AS expires",
                [owner, ttl_s, conversation_id, holder.owner, holder.fence],
            ).fetchone()
        if taken is None:
            return None
        return Lease(conversation_id, owner, int(taken["fence"]), float(taken["expires"]))

    def check(self, lease: Lease) -> None:
        # Inside a transaction the row lock is held until commit, so no one
        # can take the lease over between this check and the fenced writes.
        with self.s._atomic() as conn:
            self._check(conn, lease)

    def _check(self, conn: Conn, lease: Lease) -> None:
        row = conn.execute(
            "SELECT owner, fence, expires_at > clock_timestamp() AS live FROM leases "
            "WHERE conversation_id = %s FOR UPDATE",
            [lease.conversation_id],
        ).fetchone()
        if (
            row is None
            or row["owner"] != lease.owner
            or row["fence"] != lease.fence
            or not row["live"]
        ):
            raise LeaseLostError(
                f"lease on conversation {lease.conversation_id} (fence {lease.fence}) "
                "is no longer held by this worker"
            )
