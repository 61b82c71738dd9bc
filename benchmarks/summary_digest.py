"""The extractive summarizer's captured requests: their summaries' digest and CPU time.

A change meant to make the extractive summarizer faster must leave its
summaries byte-identical. ``capture`` records the requests the summarizer is
given during a 4,000-message generated sweep (``bench_import``'s corpus, seed
11) and sweeps of the real Claude Code and Codex transcripts in
``../shared/data``; ``digest`` summarizes each again (the normal request and
the same request in aggressive mode) and prints one SHA-256 over all the
summaries, with the CPU seconds it took. Compare the digest before and after
every change; time a before and an after tree alternately (``PYTHONPATH=...``).

Usage::

    .venv/bin/python benchmarks/summary_digest.py capture /tmp/h4/requests.json
    .venv/bin/python benchmarks/summary_digest.py digest /tmp/h4/requests.json --runs 3
    .venv/bin/python benchmarks/summary_digest.py digest /tmp/h4/requests.json --only generated
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bench_import
import common

from lossless import Engine
from lossless.summarize import extractive
from lossless.summarize.protocol import SummaryRequest, SummaryResponse

GENERATED = 4_000


def capture(out: Path) -> int:
    captured: list[dict[str, Any]] = []
    original = extractive.ExtractiveSummarizer.summarize

    def recording(
        self: extractive.ExtractiveSummarizer, request: SummaryRequest
    ) -> SummaryResponse:
        captured.append(
            {
                "text": request.text,
                "depth": request.depth,
                "target_tokens": request.target_tokens,
                "previous_context": request.previous_context,
                "mode": request.mode,
                "source": source,
            }
        )
        return original(self, request)

    extractive.ExtractiveSummarizer.summarize = recording  # type: ignore[method-assign]
    scratch = Path(tempfile.mkdtemp(prefix="lcm-summary-digest-"))
    try:
        source = "generated"
        with Engine.open(scratch / "generated", summarizer_provider="extractive") as engine:
            chat = engine.conversation("generated", project="bench")
            engine.ingest(
                chat.conversation, list(bench_import.CorpusGenerator(11).messages(GENERATED))
            )
            engine.compactor().sweep(chat.id)
        transcripts = bench_import.real_transcripts() if common.DATA.is_dir() else []
        if not transcripts:
            print(f"real transcripts not found at {common.DATA}: generated only", flush=True)
        for index, path in enumerate(transcripts):
            source = f"real:{path.name}"
            with Engine.open(scratch / f"real-{index}", summarizer_provider="extractive") as engine:
                result = engine.import_file(path, final=True)
                if result.conversation_id is not None:
                    engine.compactor().sweep(result.conversation_id)
    finally:
        extractive.ExtractiveSummarizer.summarize = original  # type: ignore[method-assign]
        shutil.rmtree(scratch, ignore_errors=True)
    out.write_text(json.dumps(captured))
    generated = sum(1 for r in captured if r["source"] == "generated")
    print(f"{len(captured)} requests ({generated} generated) written to {out}")
    return 0


def digest(path: Path, runs: int, only: str) -> int:
    raw = [r for r in json.loads(path.read_text()) if only == "all" or _kind(r) == only]
    fields = ("text", "depth", "target_tokens", "previous_context", "mode")
    requests = [SummaryRequest(**{k: r[k] for k in fields}) for r in raw]
    requests += [
        SummaryRequest(**{**{k: r[k] for k in fields}, "mode": "aggressive"})
        for r in raw
        if r["mode"] == "normal"
    ]
    summarizer = extractive.ExtractiveSummarizer()
    for _ in range(runs):
        start = time.process_time()
        outs = [summarizer.summarize_text(request) for request in requests]
        cpu = time.process_time() - start
        sha = hashlib.sha256()
        for text in outs:
            sha.update(text.encode())
            sha.update(b"\0")
        print(f"{len(requests)} requests ({only}): cpu {cpu:.2f} s, digest {sha.hexdigest()[:16]}")
    return 0


def _kind(request: dict[str, Any]) -> str:
    return "generated" if request.get("source", "generated") == "generated" else "real"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("out", type=Path)
    dig = sub.add_parser("digest")
    dig.add_argument("requests", type=Path)
    dig.add_argument("--runs", type=int, default=1)
    dig.add_argument("--only", choices=("all", "generated", "real"), default="all")
    args = parser.parse_args(argv)
    if args.command == "capture":
        return capture(args.out)
    return digest(args.requests, args.runs, args.only)


if __name__ == "__main__":
    sys.exit(main())
