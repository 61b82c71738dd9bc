"""The UI's store readers: a slow request does not hold up the others."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.ui.engine_pool import READERS, EnginePool


def test_a_slow_request_does_not_block_the_next(tmp_path: Path) -> None:
    with Engine.open(tmp_path) as engine:
        engine.conversation("s1").ingest([{"role": "user", "content": "hello there"}])
    pool = EnginePool(load_config(tmp_path))
    pool.open_all()
    release = threading.Event()
    started = threading.Event()

    def slow(engine: Engine) -> int:
        started.set()
        # Holds its reader (and its connection) until released, like a long query.
        assert release.wait(timeout=30)
        return engine.store.messages.count()

    async def scenario() -> tuple[int, int]:
        first = asyncio.ensure_future(pool.run(slow))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
        # Answered by another reader, with its own connection, while `slow` holds one.
        quick = await asyncio.wait_for(
            pool.run(lambda engine: engine.store.messages.count()), timeout=10
        )
        assert not first.done()
        release.set()
        return quick, await first

    try:
        # On a thread of its own: Playwright's tests keep an event loop on this one.
        with ThreadPoolExecutor(max_workers=1) as runner:
            assert runner.submit(asyncio.run, scenario()).result(timeout=60) == (1, 1)
        # Every reader has an engine of its own: as many connections as readers.
        engines = [pool.call(lambda engine: id(engine))]
        assert len(pool._opened) == READERS
        assert len({id(e) for e in pool._opened}) == READERS
        assert engines[0] in {id(e) for e in pool._opened}
    finally:
        release.set()
        pool.close()
