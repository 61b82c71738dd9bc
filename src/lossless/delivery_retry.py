"""The worker's attempts at an outbox delivery that keeps failing: when, and what it logs.

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

Imported by the worker, which every hook imports: stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
class DeliveryRetry:
    """One worker's state of a failing outbox delivery (``failing`` while it lasts)."""

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
    # ``Outbox.position()`` after the last attempt.
    position: tuple[int, int] | None = None
    said_at: float = 0.0

    @property
    def failing(self) -> bool:
        return self.since is not None

    def wait_s(self) -> float:
        """How long after the latest failure the next attempt comes."""
        return max(self.base_s, min(self.cap_s, self.base_s * 2.0 ** max(0, self.streak - 1)))

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
        now = self.clock()
        cause = cause_of(delivery.error)
        self.attempts += 1
        self.streak = 1 if delivery.delivered else self.streak + 1
        wait = self.wait_s()
        if delivery.delivered:
            # The count of what went must be said (the log is the record of it).
            self.log(delivery.describe())
        if self.since is None:
            self.since = now
            self.log(
                f"outbox: delivery failing, {delivery.remaining} event(s) wait: {cause}; "
                f"next attempt in {wait:.0f} s, then less often (at most every "
                f"{self.cap_s:.0f} s) until one gets through or a hook captures or "
                "delivers something (`lcm doctor` shows it meanwhile)"
            )
            self.said_at = now
        elif cause != self.cause:
            self.log(
                f"outbox: delivery still failing after {self.attempts} attempts over "
                f"{self._minutes(now)}, now: {cause} ({delivery.remaining} event(s) wait)"
            )
            self.said_at = now
        elif now - self.said_at >= STILL_FAILING_EVERY_S:
            self.log(
                f"outbox: delivery still failing after {self.attempts} attempts over "
                f"{self._minutes(now)}: {cause} ({delivery.remaining} event(s) wait; "
                f"next attempt in {wait:.0f} s)"
            )
            self.said_at = now
        self.cause = cause
        self.position = position
        self.next_at = now + wait

    def succeeded(self, delivery: OutboxDelivery) -> None:
        """An attempt got through (``delivery.error`` is None)."""
        if self.since is None:
            self.log(delivery.describe())
            return
        self.log(
            f"{delivery.describe()}: delivery works again after {self.attempts} failed "
            f"attempt(s) over {self._minutes(self.clock())}"
        )
        self._reset()

    def emptied(self) -> None:
        """The outbox was found empty: someone else (a hook) delivered it all."""
        if self.since is not None:
            self.log(
                f"outbox: delivered by another process after {self.attempts} failed "
                f"attempt(s) here over {self._minutes(self.clock())}"
            )
            self._reset()

    def _reset(self) -> None:
        self.since = self.cause = self.position = None
        self.attempts = self.streak = 0
        self.next_at = 0.0

    def _minutes(self, now: float) -> str:
        assert self.since is not None
        return f"{(now - self.since) / 60:.1f} min"
