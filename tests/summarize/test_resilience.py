from __future__ import annotations

import random
import threading

import pytest

from lossless.summarize import (
    ResilientSummarizer,
    SummarizerAuthError,
    SummarizerRefused,
    SummarizerUnavailable,
    SummaryRequest,
    SummaryResponse,
)

REQUEST = SummaryRequest(text="source", depth=0, target_tokens=10)


class Flaky:
    """Fails with the queued exceptions, then succeeds."""

    def __init__(self, *failures: BaseException) -> None:
        self.name = "flaky"
        self.failures = list(failures)
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return SummaryResponse(text="ok", input_tokens=1, output_tokens=1, model="m")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def state(resilient: ResilientSummarizer) -> str:
    # A call, not an attribute read, so type checkers do not narrow across calls.
    return resilient.state


def wrap(inner: Flaky, clock: FakeClock, **kwargs: object) -> ResilientSummarizer:
    options: dict[str, object] = {"clock": clock, "sleep": clock.sleep, "seed": 7}
    options.update(kwargs)
    return ResilientSummarizer(inner, **options)  # type: ignore[arg-type]


def test_retries_transient_failures_with_backoff() -> None:
    clock = FakeClock()
    inner = Flaky(SummarizerUnavailable("503"), SummarizerUnavailable("503"))
    resilient = wrap(inner, clock, retries=2, breaker_threshold=10)
    assert resilient.summarize(REQUEST).text == "ok"
    assert inner.calls == 3
    assert len(clock.sleeps) == 2
    # Exponential with equal jitter: [0.25, 0.5] then [0.5, 1.0].
    assert 0.25 <= clock.sleeps[0] <= 0.5
    assert 0.5 <= clock.sleeps[1] <= 1.0
    assert resilient.name == "flaky"


def test_gives_up_after_retry_budget() -> None:
    clock = FakeClock()
    inner = Flaky(*[SummarizerUnavailable(f"fail {i}") for i in range(5)])
    resilient = wrap(inner, clock, retries=2, breaker_threshold=10)
    with pytest.raises(SummarizerUnavailable, match="fail 2"):
        resilient.summarize(REQUEST)
    assert inner.calls == 3


@pytest.mark.parametrize("error", [SummarizerAuthError("401"), SummarizerRefused("empty")])
def test_non_transient_errors_are_not_retried_nor_counted(error: Exception) -> None:
    clock = FakeClock()
    inner = Flaky(error, error, error, error)
    resilient = wrap(inner, clock, retries=3, breaker_threshold=1)
    for _ in range(3):
        with pytest.raises(type(error)):
            resilient.summarize(REQUEST)
    assert inner.calls == 3
    assert clock.sleeps == []
    assert state(resilient) == "closed"


def test_backoff_is_deterministic_with_seed_and_capped() -> None:
    clock = FakeClock()
    a = wrap(Flaky(), clock, backoff_base_s=1.0, backoff_max_s=4.0, seed=42)
    b = wrap(Flaky(), clock, backoff_base_s=1.0, backoff_max_s=4.0, rng=random.Random(42))
    delays_a = [a.backoff_delay(i) for i in range(6)]
    delays_b = [b.backoff_delay(i) for i in range(6)]
    assert delays_a == delays_b
    assert all(d <= 4.0 for d in delays_a)
    assert delays_a[5] >= 2.0
    # A server's Retry-After is honoured, up to the cap.
    assert a.backoff_delay(0, retry_after_s=3.0) == 3.0
    assert a.backoff_delay(0, retry_after_s=300.0) == 4.0


def test_breaker_opens_fails_fast_then_half_opens() -> None:
    clock = FakeClock()
    inner = Flaky(*[SummarizerUnavailable("down") for _ in range(3)])
    resilient = wrap(inner, clock, retries=0, breaker_threshold=3, breaker_cooldown_s=60)
    for _ in range(3):
        with pytest.raises(SummarizerUnavailable, match="down"):
            resilient.summarize(REQUEST)
    assert state(resilient) == "open"
    assert inner.calls == 3

    # Open: fail fast without touching the provider.
    clock.now += 20
    with pytest.raises(SummarizerUnavailable, match=r"circuit open .* retry after 40s") as info:
        resilient.summarize(REQUEST)
    assert info.value.retry_after_s == pytest.approx(40)
    assert inner.calls == 3

    # After the cooldown one trial goes through; success closes the circuit.
    clock.now += 40
    assert state(resilient) == "half-open"
    assert resilient.summarize(REQUEST).text == "ok"
    assert state(resilient) == "closed"
    assert inner.calls == 4


def test_failed_trial_reopens_for_a_full_cooldown() -> None:
    clock = FakeClock()
    inner = Flaky(*[SummarizerUnavailable("down") for _ in range(4)])
    resilient = wrap(inner, clock, retries=0, breaker_threshold=3, breaker_cooldown_s=60)
    for _ in range(3):
        with pytest.raises(SummarizerUnavailable):
            resilient.summarize(REQUEST)
    clock.now += 61
    with pytest.raises(SummarizerUnavailable, match="down"):
        resilient.summarize(REQUEST)  # the trial, which fails
    assert state(resilient) == "open"
    clock.now += 59
    with pytest.raises(SummarizerUnavailable, match="circuit open"):
        resilient.summarize(REQUEST)
    clock.now += 1
    assert resilient.summarize(REQUEST).text == "ok"


def test_breaker_stops_retrying_once_open() -> None:
    clock = FakeClock()
    inner = Flaky(*[SummarizerUnavailable("down") for _ in range(10)])
    resilient = wrap(inner, clock, retries=5, breaker_threshold=2)
    with pytest.raises(SummarizerUnavailable, match="down"):
        resilient.summarize(REQUEST)
    assert inner.calls == 2
    assert state(resilient) == "open"


def test_success_resets_failure_count() -> None:
    clock = FakeClock()
    inner = Flaky(SummarizerUnavailable("a"), SummarizerUnavailable("b"))
    resilient = wrap(inner, clock, retries=0, breaker_threshold=3)
    for _ in range(2):
        with pytest.raises(SummarizerUnavailable):
            resilient.summarize(REQUEST)
    assert resilient.summarize(REQUEST).text == "ok"
    inner.failures = [SummarizerUnavailable("c"), SummarizerUnavailable("d")]
    for _ in range(2):
        with pytest.raises(SummarizerUnavailable):
            resilient.summarize(REQUEST)
    assert state(resilient) == "closed"


def test_half_open_admits_a_single_trial_across_threads() -> None:
    clock = FakeClock()
    started = threading.Event()
    release = threading.Event()

    class Slow:
        name = "slow"
        calls = 0

        def summarize(self, request: SummaryRequest) -> SummaryResponse:
            Slow.calls += 1
            if Slow.calls <= 1:
                raise SummarizerUnavailable("down")
            started.set()
            release.wait(5)
            return SummaryResponse(text="ok", input_tokens=1, output_tokens=1)

    resilient = ResilientSummarizer(
        Slow(),
        retries=0,
        breaker_threshold=1,
        breaker_cooldown_s=10,
        clock=clock,
        sleep=clock.sleep,
    )
    with pytest.raises(SummarizerUnavailable):
        resilient.summarize(REQUEST)
    clock.now += 10
    results: list[str] = []
    trial = threading.Thread(target=lambda: results.append(resilient.summarize(REQUEST).text))
    trial.start()
    assert started.wait(5)
    with pytest.raises(SummarizerUnavailable, match="circuit open"):
        resilient.summarize(REQUEST)
    release.set()
    trial.join(5)
    assert results == ["ok"]
    assert state(resilient) == "closed"


def test_validation() -> None:
    with pytest.raises(ValueError):
        ResilientSummarizer(Flaky(), retries=-1)
    with pytest.raises(ValueError):
        ResilientSummarizer(Flaky(), breaker_threshold=0)
