"""Retries with backoff and a circuit breaker around any summarizer or language model.

Only ``SummarizerUnavailable`` is retried and only it counts towards the
breaker: an auth error will not fix itself, a refusal would be repeated, and
neither says anything about whether the service is up.

The breaker counts failed *attempts*, so a single call that exhausts its
retries against a dead endpoint can open it; once open, remaining retries are
abandoned and callers fail fast instead of each waiting out a timeout. After
the cooldown one trial call is let through (half-open); its outcome closes or
re-opens the circuit.
"""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from collections.abc import Callable
from typing import Literal, TypeVar

from lossless.summarize.completion import Completion, CompletionRequest, LanguageModel
from lossless.summarize.errors import SummarizerUnavailable
from lossless.summarize.protocol import Summarizer, SummaryRequest, SummaryResponse

BreakerState = Literal["closed", "open", "half-open"]
_T = TypeVar("_T")


class ResilientSummarizer:
    """Wraps ``inner`` with retries (exponential backoff + jitter) and a breaker.

    ``clock``/``sleep``/``rng`` are injectable so tests run instantly and
    deterministically. Thread-safe: breaker state is guarded by a lock, and the
    lock is never held while calling the inner summarizer or sleeping.
    """

    def __init__(
        self,
        inner: Summarizer,
        *,
        retries: int = 2,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 8.0,
        breaker_threshold: int = 3,
        breaker_cooldown_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        seed: int | None = None,
    ) -> None:
        if retries < 0:
            raise ValueError("retries must be >= 0")
        if breaker_threshold < 1:
            raise ValueError("breaker_threshold must be >= 1")
        self.inner = inner
        self.name = inner.name
        self.retries = retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.breaker_threshold = breaker_threshold
        self.breaker_cooldown_s = breaker_cooldown_s
        self._clock = clock
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random(seed)
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_in_flight = False

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state_locked()

    def _state_locked(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self.breaker_cooldown_s:
            return "half-open"
        return "open"

    def _admit(self) -> bool:
        """Reserve the right to make one attempt; return whether it is the half-open trial."""
        with self._lock:
            state = self._state_locked()
            if state == "closed":
                return False
            if state == "half-open" and not self._trial_in_flight:
                self._trial_in_flight = True
                return True
            assert self._opened_at is not None
            remaining = max(0.0, self.breaker_cooldown_s - (self._clock() - self._opened_at))
            if state == "half-open":
                # Another thread holds the single trial slot; do not pile on.
                remaining = 0.0
            raise SummarizerUnavailable(
                f"{self.name}: circuit open after {self._failures} consecutive failures; "
                f"retry after {remaining:.0f}s",
                retry_after_s=remaining,
            )

    def _record_success(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._trial_in_flight = False

    def _record_failure(self, trial: bool) -> bool:
        """Count a transient failure; return True if the circuit is now open."""
        with self._lock:
            self._failures += 1
            if trial:
                self._trial_in_flight = False
            if trial or self._failures >= self.breaker_threshold:
                self._opened_at = self._clock()
                return True
            return False

    def _release_trial(self, trial: bool) -> None:
        if trial:
            with self._lock:
                self._trial_in_flight = False

    def backoff_delay(self, attempt: int, retry_after_s: float | None = None) -> float:
        """Delay before retry number ``attempt`` (0-based): capped exponential, jittered.

        "Equal jitter" keeps at least half the nominal delay so retries from
        many workers spread out without collapsing to zero. A server's
        ``Retry-After`` is honoured up to ``backoff_max_s``.
        """
        nominal = min(self.backoff_max_s, self.backoff_base_s * (2.0**attempt))
        with self._lock:
            jitter = self._rng.uniform(0.5, 1.0)
        delay = nominal * jitter
        if retry_after_s is not None:
            delay = max(delay, min(retry_after_s, self.backoff_max_s))
        return delay

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        return self._with_retries(lambda _remaining: self.inner.summarize(request), None)

    def complete(self, request: CompletionRequest) -> Completion:
        """The inner provider's completion, under the same retries and breaker.

        ``request.timeout_s`` bounds the whole call: each attempt gets what is
        left of it, and no retry starts whose backoff would outlast it.
        """
        inner = self.inner
        if not isinstance(inner, LanguageModel):
            raise TypeError(f"summarizer {self.name!r} cannot answer free-form prompts")
        deadline = None if request.timeout_s is None else self._clock() + request.timeout_s

        def attempt(remaining: float | None) -> Completion:
            if remaining is None:
                return inner.complete(request)
            return inner.complete(dataclasses.replace(request, timeout_s=remaining))

        return self._with_retries(attempt, deadline)

    def _with_retries(self, call: Callable[[float | None], _T], deadline: float | None) -> _T:
        attempt = 0
        while True:
            remaining = None if deadline is None else deadline - self._clock()
            if remaining is not None and remaining <= 0:
                raise SummarizerUnavailable(f"{self.name}: no time left for another attempt")
            trial = self._admit()
            try:
                response = call(remaining)
            except SummarizerUnavailable as exc:
                opened = self._record_failure(trial)
                if opened or attempt >= self.retries:
                    raise
                delay = self.backoff_delay(attempt, exc.retry_after_s)
                if deadline is not None and self._clock() + delay >= deadline:
                    raise
                self._sleep(delay)
                attempt += 1
                continue
            except BaseException:
                # Not a sign the service is down (auth, refusal, bug): leave the
                # breaker as it was, but free the trial slot for the next caller.
                self._release_trial(trial)
                raise
            self._record_success()
            return response
