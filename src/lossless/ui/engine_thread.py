"""One thread that owns the UI's Engine: every store read runs there, in turn.

The SQLite store holds one connection; the server's event loop must not block
on it, and two threads must not use it at once. So requests hand their work
to this single thread and await the result.
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


class EngineThread:
    """Runs ``fn(engine)`` on the thread that opened the engine."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lcm-ui-store")
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    def _engine_here(self) -> Engine:
        with self._lock:
            if self._engine is None:
                self._engine = Engine.open(config=self.config)
            return self._engine

    def call(self, fn: Callable[[Engine], T]) -> T:
        """Run ``fn`` now, blocking (for start-up checks and tests)."""
        return self._executor.submit(lambda: fn(self._engine_here())).result()

    async def run(self, fn: Callable[[Engine], T]) -> T:
        future = self._executor.submit(lambda: fn(self._engine_here()))
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        def shut() -> None:
            with self._lock:
                if self._engine is not None:
                    self._engine.close()
                    self._engine = None

        self._executor.submit(shut).result()
        self._executor.shutdown(wait=True)
