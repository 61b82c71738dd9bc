"""A spend cap for paid summarizers: calls and tokens per hour and per day.

Runaway summarizer calls cost real money, and lossless calls the model from
hooks, the worker and the CLI, in several processes at once. Every call to a
paid provider (anthropic, openai) is recorded in one small SQLite ledger in the
data folder (``summarizer-spend.db``), shared by those processes. Past a cap,
summaries come from the offline extractive summarizer (marked in the summary's
``model``, so compaction and ``lcm status`` say so) and free-form answers
(``expand_query``) fail as unavailable, until the window has room again.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lossless.summarize.completion import Completion, CompletionRequest, LanguageModel
from lossless.summarize.errors import SummarizerUnavailable
from lossless.summarize.protocol import Summarizer, SummaryRequest, SummaryResponse

if TYPE_CHECKING:
    from lossless.config import SpendCaps

LEDGER_FILE = "summarizer-spend.db"
# What a summary written in place of the paid model carries as its model.
OFFLINE_MODEL_PREFIX = "extractive (spend cap reached"
HOUR_S = 3600.0
DAY_S = 86400.0
PAID_PROVIDERS = ("anthropic", "openai")


@dataclass(frozen=True, slots=True)
class SpendUse:
    """Calls and tokens recorded in the last hour and the last 24 hours."""

    calls_hour: int = 0
    calls_day: int = 0
    tokens_hour: int = 0
    tokens_day: int = 0

    def over(self, caps: SpendCaps) -> str | None:
        """The first cap reached, in words; None while every cap has room."""
        checks = (
            (caps.calls_per_hour, self.calls_hour, "calls per hour"),
            (caps.calls_per_day, self.calls_day, "calls per day"),
            (caps.tokens_per_hour, self.tokens_hour, "tokens per hour"),
            (caps.tokens_per_day, self.tokens_day, "tokens per day"),
        )
        for cap, used, what in checks:
            if cap > 0 and used >= cap:
                return f"{used:,} of {cap:,} {what}"
        return None


class SpendLedger:
    """The calls of paid providers, one row each, in a SQLite file (any process)."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        db = sqlite3.connect(self.path, timeout=10.0)
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("CREATE TABLE IF NOT EXISTS calls (at REAL NOT NULL, tokens INTEGER NOT NULL)")
        return db

    def record(self, tokens: int) -> None:
        """One call that used ``tokens`` (input + output); rows older than a day go."""
        now = self._clock()
        with self._lock:
            db = self._connect()
            try:
                with db:
                    db.execute("INSERT INTO calls(at, tokens) VALUES (?, ?)", (now, tokens))
                    db.execute("DELETE FROM calls WHERE at < ?", (now - DAY_S,))
            finally:
                db.close()

    def use(self) -> SpendUse:
        if not self.path.exists():
            return SpendUse()
        now = self._clock()
        with self._lock:
            db = self._connect()
            try:
                row = db.execute(
                    "SELECT count(*), coalesce(sum(tokens), 0), "
                    "coalesce(sum(at >= ?), 0), coalesce(sum(CASE WHEN at >= ? THEN tokens END), 0) "
                    "FROM calls WHERE at >= ?",
                    (now - HOUR_S, now - HOUR_S, now - DAY_S),
                ).fetchone()
            finally:
                db.close()
        calls_day, tokens_day, calls_hour, tokens_hour = (int(v) for v in row)
        return SpendUse(calls_hour, calls_day, tokens_hour, tokens_day)


class SpendCappedSummarizer:
    """Records every call of ``inner`` (a paid provider) and, past ``caps``,
    summarizes with ``offline`` instead and refuses free-form completions."""

    def __init__(
        self, inner: Summarizer, ledger: SpendLedger, caps: SpendCaps, offline: Summarizer
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.ledger = ledger
        self.caps = caps
        self.offline = offline

    def _over(self) -> str | None:
        return self.ledger.use().over(self.caps) if self.caps.any else None

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        reached = self._over()
        if reached is not None:
            answer = self.offline.summarize(request)
            return SummaryResponse(
                text=answer.text,
                input_tokens=0,
                output_tokens=0,
                model=f"{OFFLINE_MODEL_PREFIX}: {reached})",
            )
        response = self.inner.summarize(request)
        self.ledger.record(response.input_tokens + response.output_tokens)
        return response

    def complete(self, request: CompletionRequest) -> Completion:
        inner = self.inner
        if not isinstance(inner, LanguageModel):
            raise TypeError(f"summarizer {self.name!r} cannot answer free-form prompts")
        reached = self._over()
        if reached is not None:
            raise SummarizerUnavailable(
                f"{self.name}: spend cap reached ({reached}); raise summarizer.max_* "
                "or wait for the window to pass"
            )
        answer = inner.complete(request)
        self.ledger.record(answer.input_tokens + answer.output_tokens)
        return answer
