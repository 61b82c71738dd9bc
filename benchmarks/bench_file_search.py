"""grep latency when large files are searched too: the cost of scanning their bodies.

Externalized large files (``engine.file_search``) are scanned, not indexed:
every grep reads the bodies in its scope. This measures what that costs: a
store of ordinary messages plus N large files of about 200 KB each, a needle
in the last file, grep in both modes through ``Engine.grep`` (store + files)
against the store's grep alone (``store.search.grep``) in the same run.

    python benchmarks/bench_file_search.py --files 50 200
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import common

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.models import NewMessage
from lossless.store.contract import GrepQuery

NEEDLE = "quokkaflux"


def body(i: int, needle: bool) -> str:
    lines = [f"file {i} line {n}: status nominal, value {n * 7 % 1000}" for n in range(4500)]
    if needle:
        lines[-3] += f" {NEEDLE} seen"
    return "\n".join(lines)


def build(home: Path, files: int) -> Engine:
    config = load_config(home, env={}, overrides={"large_file_threshold": 2000})
    engine = Engine.open(config=config)
    chat = engine.conversation("bench-files", project="bench")
    ordinary = [
        NewMessage(role="user", content=f"message {n}: the deploy went fine, nothing to report")
        for n in range(2000)
    ]
    engine.ingest(chat.conversation, ordinary)
    for i in range(files):
        text = f'<file path="dump{i}.log">{body(i, i == files - 1)}</file>'
        engine.ingest(chat.conversation, [NewMessage(role="user", content=text)])
    return engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    common.print_machine()
    rows = []
    for files in args.files:
        home = Path(tempfile.mkdtemp(prefix="lcm-bench-files-"))
        try:
            engine = build(home, files)
            megabytes = sum(f.byte_size for f in engine.store.files.list_all()) / 1e6
            for mode in ("regex", "full_text"):
                with_files: list[float] = []
                store_only: list[float] = []
                for _ in range(args.runs):
                    hits, seconds = common.timed(lambda: engine.grep(NEEDLE, mode=mode))  # noqa: B023
                    assert hits and hits[0].file_id, hits
                    with_files.append(seconds)
                    query = GrepQuery(pattern=NEEDLE, mode=mode)  # type: ignore[arg-type]
                    _, seconds = common.timed(lambda: engine.store.search.grep(query))  # noqa: B023
                    store_only.append(seconds)
                full, base = common.median(with_files), common.median(store_only)
                rows.append(
                    [
                        files,
                        round(megabytes, 1),
                        mode,
                        round(full * 1000, 1),
                        round(base * 1000, 1),
                        round(megabytes / max(full - base, 1e-9)),
                    ]
                )
            engine.close()
        finally:
            shutil.rmtree(home, ignore_errors=True)
    common.print_table(
        [
            "large files",
            "MB",
            "mode",
            "grep with files p50 (ms)",
            "store only p50 (ms)",
            "scan MB/s",
        ],
        rows,
        title=f"grep over large-file bodies, {args.runs} runs",
    )


if __name__ == "__main__":
    main()
