"""Map operator throughput, memory and exactness against a local model server.

    .venv/bin/python benchmarks/bench_map.py [--seconds 4] [--rss-items 100000] [--oolong 3000]

1. Throughput vs concurrency (1, 4, 16, 64): every call takes a fixed 200 ms
   on the server (the real OpenAI SDK and the real store in between), so the
   ideal rate is concurrency / 0.2 s; the table shows the share reached.
2. Peak RSS of ``lcm map`` (a child process) over a large input answered at
   once by the server: the input is streamed, so memory stays flat.
3. An OOLONG-style aggregation: thousands of generated support messages, each
   classified by a scripted model; counting the results file per label must
   give exactly the generated counts (nothing lost, nothing twice).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import common

sys.path.insert(0, str(common.REPO))

from tests.operators.model_server import Reply, Request, serving

LATENCY_S = 0.2
LABELS = ("billing", "outage", "login", "feature", "praise")
_WORDS = {
    "billing": ["invoice", "charged twice", "refund", "VAT number"],
    "outage": ["is down", "503 errors", "cannot reach the API", "status page"],
    "login": ["password reset", "2FA code", "locked out", "SSO"],
    "feature": ["would love", "please add", "dark mode", "export to CSV"],
    "praise": ["thank you", "great job", "love the new", "works perfectly"],
}


def _answer_parity(request: Request) -> Reply:
    item = json.loads(request.item or "{}")
    return Reply(json.dumps({"n": item.get("n", 0), "even": item.get("n", 0) % 2 == 0}))


def throughput(seconds: float) -> list[list[object]]:
    from lossless.config import load_config
    from lossless.engine.engine import Engine
    from lossless.engine.operators import jobs
    from lossless.engine.operators.spec import MapSpec

    rows: list[list[object]] = []

    def slow(request: Request) -> Reply:
        reply = _answer_parity(request)
        reply.delay_s = LATENCY_S
        return reply

    with serving(slow) as server, tempfile.TemporaryDirectory() as tmp:
        engine = Engine.open(config=load_config(Path(tmp) / "home"))
        try:
            for concurrency in (1, 4, 16, 64):
                ideal = concurrency / LATENCY_S
                count = max(concurrency * 2, int(ideal * seconds))
                spec = MapSpec(
                    kind="llm_map",
                    prompt="Is n even?",
                    provider="openai",
                    base_url=server.openai_url,
                    model="bench",
                    concurrency=concurrency,
                )
                job = jobs.start(
                    engine, spec, project="bench", items=[{"n": n} for n in range(count)]
                )
                model = jobs.model_for(engine, spec)
                start = time.perf_counter()
                report = jobs.run(engine, job.id, model=model)
                wall = time.perf_counter() - start
                assert report.counts.ok == count, report.counts
                rate = count / wall
                rows.append(
                    [concurrency, count, round(wall, 2), round(rate, 1), round(ideal, 1),
                     f"{100 * rate / ideal:.0f}%"]
                )  # fmt: skip
        finally:
            engine.close()
    return rows


def peak_rss(items: int) -> list[list[object]]:
    rows: list[list[object]] = []
    with serving(_answer_parity) as server, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "items.jsonl"
        with path.open("w") as f:
            for n in range(items):
                f.write(json.dumps({"n": n, "text": "x" * 200}) + "\n")
        out = Path(tmp) / "out.jsonl"
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "lossless", "--home", str(Path(tmp) / "home"), "map",
             "--input", str(path), "--output", str(out), "--prompt", "Is n even?",
             "--provider", "openai", "--base-url", server.openai_url, "--model", "bench",
             "--concurrency", "16", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ),
        )  # fmt: skip
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "lcm map failed")
        lines = sum(1 for _ in out.open())
        rows.append(
            [items, lines, round(wall, 1), round(items / wall, 1),
             round(usage.ru_maxrss / 1024, 1)]
        )  # fmt: skip
    return rows


def oolong(items: int, seed: int = 7) -> list[list[object]]:
    from lossless.config import load_config
    from lossless.engine.engine import Engine

    rng = random.Random(seed)
    generated = []
    for n in range(items):
        label = rng.choice(LABELS)
        phrase = rng.choice(_WORDS[label])
        generated.append(
            {"id": n, "text": f"Ticket {n}: hello, {phrase} since {rng.randint(1, 9)}h"}
        )
    truth = Counter(
        next(lb for lb in LABELS if any(p in g["text"] for p in _WORDS[lb])) for g in generated
    )

    def classify(request: Request) -> Reply:
        text = json.loads(request.item or "{}").get("text", "")
        label = next((lb for lb in LABELS if any(p in text for p in _WORDS[lb])), "other")
        return Reply(json.dumps({"label": label}))

    schema = {"type": "object", "properties": {"label": {"enum": list(LABELS)}},
              "required": ["label"]}  # fmt: skip
    with serving(classify) as server, tempfile.TemporaryDirectory() as tmp:
        engine = Engine.open(config=load_config(Path(tmp) / "home"))
        try:
            start = time.perf_counter()
            report = engine.map(
                generated, "Classify the support ticket.", schema=schema, provider="openai",
                base_url=server.openai_url, model="bench", concurrency=16,
            )  # fmt: skip
            wall = time.perf_counter() - start
            counted = Counter(
                r["result"]["label"]
                for r in engine.map_results(report.job.id)
                if r["status"] == "ok"
            )
        finally:
            engine.close()
    return [
        [
            label,
            truth[label],
            counted[label],
            "exact" if truth[label] == counted[label] else "WRONG",
        ]
        for label in LABELS
    ] + [["(all)", items, sum(counted.values()), f"{wall:.1f} s"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="target run per level")
    parser.add_argument("--rss-items", type=int, default=100_000)
    parser.add_argument("--oolong", type=int, default=3_000)
    args = parser.parse_args()
    common.print_machine()
    common.print_table(
        ["concurrency", "items", "wall s", "items/s", "ideal/s", "of ideal"],
        throughput(args.seconds),
        title=f"Throughput, {LATENCY_S * 1000:.0f} ms per call on the server",
    )
    common.print_table(
        ["label", "generated", "counted from results", "verdict"],
        oolong(args.oolong),
        title=f"OOLONG-style aggregation over {args.oolong} generated tickets",
    )
    if args.rss_items:
        common.print_table(
            ["input items", "result lines", "wall s", "items/s", "peak RSS MiB"],
            peak_rss(args.rss_items),
            title="lcm map over a large input (server answers at once), concurrency 16",
        )


if __name__ == "__main__":
    main()
