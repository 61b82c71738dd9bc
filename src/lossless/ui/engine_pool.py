"""The UI's store readers: a few threads, each owning an Engine of its own.

A store connection must not be used by two threads at once, and the
server's event loop must not block on a query. So each request hands its
work to one of these threads and awaits the result. There are several, each
with its own connection (SQLite in WAL mode and PostgreSQL both let readers
run side by side), so one slow request (a first assembly of a long
conversation, a regex over the whole history) does not hold up the others:
the next requests go to the threads still free.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from lossless.config import Config
from lossless.engine.engine import Engine

T = TypeVar("T")

# Requests served at once. Beyond this a request waits for a free reader; the
# machine's cores bound what more threads would gain.
READERS = 4


class EnginePool:
    """Runs ``fn(engine)`` on a reader thread, with that thread's own Engine."""

    def __init__(self, config: Config, *, readers: int = READERS) -> None:
        self.config = config
        self.readers = readers
        self._executor = ThreadPoolExecutor(max_workers=readers, thread_name_prefix="lcm-ui-store")
        self._local = threading.local()
        self._opened: list[Engine] = []
        self._lock = threading.Lock()

    def _engine_here(self) -> Engine:
        engine: Engine | None = getattr(self._local, "engine", None)
        if engine is None:
            engine = Engine.open(config=self.config)
            self._local.engine = engine
            with self._lock:
                self._opened.append(engine)
        return engine

    def open_all(self) -> None:
        """Start every reader and open its engine now, so the first page's
        requests, sent together, find their connections open. Each task waits
        at a barrier until all have started: one task per thread."""
        barrier = threading.Barrier(self.readers)

        def start() -> None:
            barrier.wait(timeout=60)
            self._engine_here()

        for future in [self._executor.submit(start) for _ in range(self.readers)]:
            future.result()

    def call(self, fn: Callable[[Engine], T]) -> T:
        """Run ``fn`` now, blocking (for start-up checks and tests)."""
        return self._executor.submit(lambda: fn(self._engine_here())).result()

    async def run(self, fn: Callable[[Engine], T]) -> T:
        future = self._executor.submit(lambda: fn(self._engine_here()))
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        # After shutdown no thread uses an engine any more: close them here.
        self._executor.shutdown(wait=True)
        with self._lock:
            opened, self._opened = self._opened, []
        for engine in opened:
            engine.close()
