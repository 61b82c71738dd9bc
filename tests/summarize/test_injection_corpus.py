"""The injection corpus, measured on the extractive path (the model path runs
over the wire in ``test_injection_wire.py`` and ``benchmarks/bench_injection.py``).

Asserted: the corpus is as large and varied as issue 18 asks; every payload of
the development split is neutralized; at least 95% of all benign passages are
kept. The held-out splits are measured by the benchmark and reported in
docs/benchmarks.md, not asserted here.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from tests.summarize.injection_corpus import BENIGN, PAYLOADS

from lossless.injection import escape_markup, scan
from lossless.summarize import ExtractiveSummarizer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
bench = pytest.importorskip("bench_injection")


def test_corpus_is_large_and_varied() -> None:
    assert len(PAYLOADS) >= 100 and len(BENIGN) >= 100
    categories = Counter(e.category for e in PAYLOADS)
    for needed in (
        "direct",
        "tool_output",
        "web_page",
        "multilingual",
        "split",
        "code_block",
        "encoded",
        "markup",
    ):
        assert categories[needed] >= 5, needed
    assert {e.category for e in BENIGN} >= {"prompt_docs", "shell_tutorial", "security_advisory"}
    assert len({e.id for e in PAYLOADS + BENIGN}) == len(PAYLOADS) + len(BENIGN)
    for entry in PAYLOADS:
        assert entry.core in entry.text or entry.category == "split", entry.id


def test_every_development_payload_is_neutralized_on_the_extractive_path() -> None:
    summarizer = ExtractiveSummarizer()
    leaked = [
        e.id
        for e in PAYLOADS
        if e.split == "dev" and bench.reaches_context(e.core, bench.run(summarizer, e).shown)
    ]
    assert leaked == []


def test_no_payload_of_any_split_stands_in_the_instruction_position() -> None:
    """Whatever detection let through is shown quoted and attributed."""
    summarizer = ExtractiveSummarizer()
    exposed = []
    for entry in PAYLOADS:
        shown = bench.run(summarizer, entry).shown
        if bench.reaches_context(entry.core, shown) and bench.in_instruction_position(
            entry.core, shown
        ):
            exposed.append(entry.id)
    assert exposed == []


def test_benign_passages_are_kept_on_the_extractive_path() -> None:
    summarizer = ExtractiveSummarizer()
    kept = 0
    for entry in BENIGN:
        outcome = bench.run(summarizer, entry)
        with bench.detection(False):
            baseline = bench.run(summarizer, entry)
        kept += outcome.summary == baseline.summary
    assert kept / len(BENIGN) >= 0.95


@pytest.mark.parametrize("entry", [e for e in PAYLOADS if e.split == "dev"], ids=lambda e: e.id)
def test_development_payloads_are_flagged_or_escaped(entry: object) -> None:
    from tests.summarize.injection_corpus import Entry

    assert isinstance(entry, Entry)
    text = " ".join(entry.parts)
    assert scan(text) or escape_markup(entry.core) != entry.core
