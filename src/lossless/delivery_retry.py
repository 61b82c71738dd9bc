"""The worker's attempts at work the store keeps refusing: when, and what it logs.

A delivery that fails (the server is away, or a live one refuses: a revoked
privilege, a schema from a newer lossless, a statement timeout) would fail
again at the next poll, two seconds later: trying at every poll loads the
server for nothing and writes the same line into ``logs/worker.log`` thirty
times a minute. So after a failure the next attempt waits, the wait doubling
from the poll interval up to a cap (``worker.outbox_retry_max_s``). The
outbox changing under the worker (a hook captured something new, or
delivered: the server may be usable again) makes it try at once, from the
shortest wait; a delivery that gets through ends the back-off.

The log says a failure once when it starts, again when its cause changes,
and otherwise at most once an hour ("still failing after N attempts over M
min"); once when delivery works again (with the usual "outbox: N delivered"
line, which says how many events went). ``lcm doctor`` meanwhile shows the
outbox's own note (``offline_capture``: the error, since when, how many
attempts).

The worker's own work on a shared store (compaction jobs, the substring index,
embeddings) backs off the same way when the store fails under it (the server
stopped, a connection refused): ``StoreRetry``, whose lines start with
``store:``. The worker survives such an outage instead of exiting with the
error, and delivers what hooks captured meanwhile once the server is back.

Imported by the worker, which every hook imports: stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from lossless.errors import StoreError
    from lossless.offline_capture import OutboxDelivery

# How often the log repeats a failure whose cause has not changed.
STILL_FAILING_EVERY_S = 3600.0
# An error names the event it stopped at ("event 12 (transcript): ..."); the
# same cause at another event (a hook delivered the ones before) is no news.
_EVENT_PREFIX = re.compile(r"^event \d+ \([^)]*\): ")


def cause_of(error: str) -> str:
    """What ``error`` says went wrong, without the event it happened at."""
    return _EVENT_PREFIX.sub("", error)


@dataclass(slots=True)
class Retry:
    """A run of failures in a row: the wait before the next attempt, and what to log."""

    base_s: float
    cap_s: float
    clock: Callable[[], float]
    log: Callable[[str], None]
    # When the failures in a row began (None: the last attempt got through).
    since: float | None = None
    attempts: int = 0
    # Failures since the wait last started from ``base_s``: its exponent.
    streak: int = 0
    cause: str | None = None
    next_at: float = 0.0
    said_at: float = 0.0

    @property
    def failing(self) -> bool:
        return self.since is not None

    def wait_s(self) -> float:
        """How long after the latest failure the next attempt comes."""
        return max(self.base_s, min(self.cap_s, self.base_s * 2.0 ** max(0, self.streak - 1)))

    def _count(
        self, cause: str, *, progress: bool = False
    ) -> Literal["began", "changed", "still"] | None:
        """Count a failure for ``cause`` and schedule the next attempt; which line
        it deserves (None: nothing new to say)."""
        now = self.clock()
        self.attempts += 1
        # Progress (some events went) starts the waits over.
        self.streak = 1 if progress else self.streak + 1
        self.next_at = now + self.wait_s()
        said: Literal["began", "changed", "still"] | None = None
        if self.since is None:
            self.since, said = now, "began"
        elif cause != self.cause:
            said = "changed"
        elif now - self.said_at >= STILL_FAILING_EVERY_S:
            said = "still"
        if said is not None:
            self.said_at = now
        self.cause = cause
        return said

    def _reset(self) -> None:
        self.since = self.cause = None
        self.attempts = self.streak = 0
        self.next_at = 0.0

    def _minutes(self) -> str:
        assert self.since is not None
        return f"{(self.clock() - self.since) / 60:.1f} min"


@dataclass(slots=True)
class DeliveryRetry(Retry):
    """One worker's state of a failing outbox delivery (``failing`` while it lasts)."""

    # ``Outbox.position()`` after the last attempt.
    position: tuple[int, int] | None = None

    def due(self, position: tuple[int, int] | None) -> bool:
        """Whether to attempt a delivery now, the outbox standing at ``position``."""
        if not self.failing:
            return True
        if position != self.position:
            # Someone captured or delivered since: try now, and wait little after.
            self.streak = 0
            return True
        return self.clock() >= self.next_at

    def failed(self, delivery: OutboxDelivery, position: tuple[int, int] | None) -> None:
        """An attempt stopped at ``delivery.error``; the outbox now at ``position``."""
        assert delivery.error is not None
        cause = cause_of(delivery.error)
        said = self._count(cause, progress=bool(delivery.delivered))
        self.position = position
        if delivery.delivered:
            # The count of what went must be said (the log is the record of it).
            self.log(delivery.describe())
        wait, left = self.wait_s(), delivery.remaining
        if said == "began":
            self.log(
                f"outbox: delivery failing, {left} event(s) wait: {cause}; "
                f"next attempt in {wait:g} s, then less often (at most every "
                f"{self.cap_s:g} s) until one gets through or a hook captures or "
                "delivers something (`lcm doctor` shows it meanwhile)"
            )
        elif said == "changed":
            self.log(
                f"outbox: delivery still failing after {self.attempts} attempts over "
                f"{self._minutes()}, now: {cause} ({left} event(s) wait)"
            )
        elif said == "still":
            self.log(
                f"outbox: delivery still failing after {self.attempts} attempts over "
                f"{self._minutes()}: {cause} ({left} event(s) wait; next attempt in {wait:g} s)"
            )

    def succeeded(self, delivery: OutboxDelivery) -> None:
        """An attempt got through (``delivery.error`` is None)."""
        if self.since is None:
            self.log(delivery.describe())
            return
        self.log(
            f"{delivery.describe()}: delivery works again after {self.attempts} failed "
            f"attempt(s) over {self._minutes()}"
        )
        self._reset()

    def emptied(self) -> None:
        """The outbox was found empty: someone else (a hook) delivered it all."""
        if self.since is not None:
            self.log(
                f"outbox: delivered by another process after {self.attempts} failed "
                f"attempt(s) here over {self._minutes()}"
            )
            self._reset()

    def _reset(self) -> None:
        Retry._reset(self)
        self.position = None


@dataclass(slots=True)
class StoreRetry(Retry):
    """One worker's state of its own store work failing (compaction, indexing)."""

    def due(self) -> bool:
        return not self.failing or self.clock() >= self.next_at

    def failed(self, exc: StoreError) -> None:
        cause = f"{exc.label}: {' '.join(str(exc).split())}"
        said = self._count(cause)
        wait = self.wait_s()
        if said == "began":
            self.log(
                f"store: {cause}; compaction and indexing wait: next attempt in {wait:g} s, "
                f"then less often (at most every {self.cap_s:g} s)"
            )
        elif said is not None:
            self.log(
                f"store: still failing after {self.attempts} attempts over {self._minutes()}"
                + (f", now: {cause}" if said == "changed" else f": {cause}")
            )

    def succeeded(self) -> None:
        if self.since is not None:
            self.log(
                f"store: works again after {self.attempts} failed attempt(s) over {self._minutes()}"
            )
            self._reset()
