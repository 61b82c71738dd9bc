"""Snapshot what search returns on a kept store, to show a change keeps the ranking.

Writes, for each query, the hits of ``search_all`` hybrid (kind, id, score's
repr, why it matched, text, time, covering summary, place), of ``search_all``
full text only, and of ``grep`` full text (ids, ranks, snippets), at a fixed
``now``. The query vectors are computed once into ``--vectors`` and reused,
so two code trees compare on the same vectors. Queries: ``bench_semantic``'s
latency questions, the first 25 questions of each LoCoMo conversation, and a
few short ones (286). ``--compare A B`` prints how many hit lists differ.

Usage (the tree before a change exported to /tmp/before)::

    cd /tmp/before && PYTHONPATH=src python benchmarks/search_snapshot.py STORE before.json --vectors v.json
    .venv/bin/python benchmarks/search_snapshot.py STORE after.json --vectors v.json
    .venv/bin/python benchmarks/search_snapshot.py --compare before.json after.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bench_grep
import bench_semantic
import common

NOW = "2027-01-01T00:00:00.000Z"
SHORT = [
    "error",
    "the",
    "test failed again",
    "parse config file",
    "retry",
    "worker queue",
    "deploy",
    "import",
    "session token expired",
    "how does caching work",
]


def queries() -> list[str]:
    found = [*bench_semantic.QUESTIONS, *bench_grep.FULL_TEXT]
    locomo = common.DATA / "locomo" / "locomo10.json"
    for conversation in json.loads(locomo.read_text("utf-8")):
        found += [qa["question"] for qa in conversation["qa"][:25]]
    return [*found, *SHORT]


def snapshot(store_path: Path, vectors_path: Path, limit: int) -> dict[str, Any]:
    from lossless import Engine
    from lossless.engine.search import QueryVector, search_all
    from lossless.store.contract import GrepQuery

    asked = queries()
    with Engine.open(store_path) as engine:
        store, model = engine.store, engine.config.semantic_model
        if vectors_path.exists():
            vectors = json.loads(vectors_path.read_text("utf-8"))
        else:
            from lossless.embeddings.loader import load_embedder

            embedder = load_embedder(model)
            vectors = {q: list(embedder.query(q)) for q in asked}
            vectors_path.write_text(json.dumps(vectors), "utf-8")
        result: dict[str, Any] = {}
        for q in asked:
            vector = QueryVector(model, tuple(vectors[q]))
            hybrid = search_all(store, q, semantic=vector, now=NOW, limit=limit)
            lexical = search_all(store, q, now=NOW, limit=limit)
            grep = store.search.grep(GrepQuery(q, mode="full_text", scope="both", limit=50))
            result[q] = {
                "hybrid": [
                    [
                        *(h.kind, h.id, repr(h.score), list(h.matched), h.text[:80]),
                        *(h.created_at, h.covering_summary_id, h.project, h.session_id),
                    ]
                    for h in hybrid
                ],
                "lexical": [[h.kind, h.id, repr(h.score)] for h in lexical],
                "grep": [[h.kind, h.id, repr(h.rank), h.snippet] for h in grep],
            }
    return result


def compare(a: dict[str, Any], b: dict[str, Any]) -> int:
    differing = [(q, k) for q in a for k in a[q] if a[q][k] != b.get(q, {}).get(k)]
    for q, k in differing[:5]:
        print(f"differs: {k} {q!r}")
    print(f"{len(a)} queries, {len(differing)} differing hit lists")
    return 1 if differing else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("paths", nargs=2, type=Path, help="STORE OUT, or with --compare A B")
    parser.add_argument("--vectors", type=Path, help="query vectors, computed once then reused")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--compare", action="store_true")
    args = parser.parse_args(argv)
    if args.compare:
        first, second = (json.loads(p.read_text("utf-8")) for p in args.paths)
        return compare(first, second)
    if args.vectors is None:
        parser.error("--vectors is needed to snapshot")
    store, out = args.paths
    out.write_text(json.dumps(snapshot(store, args.vectors, args.limit), indent=0), "utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
