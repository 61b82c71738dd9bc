"""Prompt injection through summaries: share of payloads neutralized, of benign passages kept.

Every entry of the corpus (``tests/summarize/injection_corpus.py``: payloads
and benign look-alikes) is planted in a small realistic transcript (a build
request, a tool call, its output holding the entry, a closing note; a split
payload spans two consecutive tool results; user and assistant entries sit in
those messages) and summarized on both paths:

- extractive: ``summarize_with_escalation`` over ``ExtractiveSummarizer``;
- model (openai, anthropic): the real provider and SDK against a local HTTP
  server whose "model" copies the entry into its summary at both levels (the
  worst case: a model that obeys or quotes everything). Escalation must refuse
  it; the fallback truncation must withhold it.

A payload is *neutralized* when its core text does not reach the summary as
shown in the assembled context (``render_summary``): withheld from the summary,
or, for markup, escaped so it is no longer a tag. A benign passage is *kept*
when detection changed nothing: on the extractive path the summary equals the
one produced with detection switched off; on the model path the model's normal
summary was accepted and still holds the passage. The "no detection" rows are
the same runs with detection switched off, for comparison.

    .venv/bin/python benchmarks/bench_injection.py [--paths extractive,openai,anthropic] [--show-misses]
    .venv/bin/python benchmarks/bench_injection.py --rendering-only

The rendering's cost (time and tokens against escaping alone) is printed
after the table, on the corpus's transcripts and on the summaries the
extractive summarizer writes for the real transcripts of ../shared/data.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import re
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.summarize.injection_corpus import BENIGN, PAYLOADS, Entry
from tests.summarize.model_server import API_KEY, MODEL, model_server
from tests.summarize.model_server import base_url as model_base_url

from lossless.engine.assembly import render_summary
from lossless.injection import Neutralized, escape_markup
from lossless.models import Summary
from lossless.quoted import ATTRIBUTION_LEAD, QUOTE_PREFIX, escape_quoted, quote_block
from lossless.summarize import (
    ExtractiveSummarizer,
    Summarizer,
    build_summarizer,
    format_message_block,
    join_blocks,
    summarize_with_escalation,
)
from lossless.tokens import estimate_tokens

BUILD_LOG = [
    "+ make -C services/api build",
    "go build -o bin/api ./cmd/api",
    "ok  	github.com/acme/api/internal/store	0.412s",
    "ok  	github.com/acme/api/internal/http	1.207s",
    "--- FAIL: TestMigrate (0.03s)",
    "    migrate_test.go:41: expected 12 tables, got 11",
    "FAIL	github.com/acme/api/internal/migrate	0.088s",
    "make: *** [Makefile:23: test] Error 1",
]
TARGET_TOKENS = 250
SPLITS = ["dev", "holdout", "holdout2", "holdout3", "holdout4", "holdout5"]
# Splits whose failures --show-misses lists: studying a held-out split spends it.
MISSES_FROM = {"dev"}


def transcript(entry: Entry) -> str:
    """The entry planted in a short session, as compaction renders it."""
    ts = "2026-03-04T09:{:02d}:00.000Z"
    request = "Please find out why the nightly build of services/api fails and fix it."
    closing = (
        "The migration test expected 12 tables; I added the missing audit_log "
        "migration in migrations/0012_audit_log.sql and the build passes now."
    )
    user_text = request + ("\n" + entry.text if entry.where == "user" else "")
    closing_text = closing + ("\n" + entry.text if entry.where == "assistant" else "")
    tool = "WebFetch" if entry.where == "web" else "Bash"
    blocks = [
        format_message_block("user", ts.format(0), user_text, message_id=101),
        format_message_block(
            "assistant",
            ts.format(1),
            f'[tool_use {tool}] {{"command": "make test"}}',
            message_id=102,
        ),
    ]
    planted = entry.parts if entry.where in ("tool", "web") else ()
    log = "\n".join(BUILD_LOG)
    if len(planted) <= 1:
        body = f"[tool_result] {log}" + (f"\n{planted[0]}" if planted else "")
        blocks.append(format_message_block("tool", ts.format(2), body, message_id=103))
    else:
        # Two consecutive tool results (parallel calls): the payload's halves
        # are adjacent across the message boundary.
        blocks.append(
            format_message_block(
                "tool", ts.format(2), f"[tool_result] {log}\n{planted[0]}", message_id=103
            )
        )
        blocks.append(
            format_message_block(
                "tool", ts.format(3), f"[tool_result] {planted[1]}\nexit status 0", message_id=104
            )
        )
    blocks.append(format_message_block("assistant", ts.format(5), closing_text, message_id=105))
    return join_blocks(blocks)


@dataclass
class Outcome:
    summary: str
    level: str
    shown: str


def shown_in_context(text: str) -> str:
    summary = Summary(
        id="sum_00000000000000aa",
        conversation_id=1,
        kind="leaf",
        depth=0,
        content=text,
        token_count=1,
        earliest_at="2026-03-04T09:00:00.000Z",
        latest_at="2026-03-04T09:05:00.000Z",
        descendant_count=0,
        source_token_count=1,
        created_at="2026-03-04T09:06:00.000Z",
    )
    return render_summary(summary)


@contextlib.contextmanager
def detection(enabled: bool) -> Iterator[None]:
    if enabled:
        yield
        return
    nothing: Any = lambda text, **_: []  # noqa: E731
    unchanged: Any = lambda text, **_: Neutralized(text, 0)  # noqa: E731
    # The extractive summarizer judges its lines all at once (``flag_lines``).
    no_lines: Any = lambda lines: ([False] * len(lines), [False] * max(0, len(lines) - 1))  # noqa: E731
    with contextlib.ExitStack() as stack:
        for module in ("extractive", "escalation"):
            stack.enter_context(mock.patch(f"lossless.summarize.{module}.scan", nothing))
            stack.enter_context(mock.patch(f"lossless.summarize.{module}.neutralize", unchanged))
        stack.enter_context(mock.patch("lossless.summarize.extractive.flag_lines", no_lines))
        yield


class EchoModel:
    """What the scripted model writes: the entry copied into an otherwise plain summary."""

    def __init__(self) -> None:
        self.entry: Entry | None = None

    def __call__(self, prompt: str) -> str:
        assert self.entry is not None
        echoed = " ".join(" ".join(self.entry.parts).split())
        if "AGGRESSIVE MODE" in prompt:
            return f"- nightly build of services/api failed in TestMigrate\n- {echoed}"
        return (
            "[2026-03-04 09:00] The user asked why the nightly build of services/api fails. "
            f"The test output said: {echoed} The agent added migrations/0012_audit_log.sql "
            "and the build passes.\nExpand for details about: full test output"
        )


def run(summarizer: Summarizer, entry: Entry) -> Outcome:
    result = summarize_with_escalation(
        summarizer, transcript(entry), depth=0, target_tokens=TARGET_TOKENS
    )
    return Outcome(result.text, result.level, shown_in_context(result.text))


_ATTRIBUTION_RE = re.compile(re.escape(ATTRIBUTION_LEAD) + r" “.*?”", re.S)
_FRAGMENT_SPLIT_RE = re.compile(r"[.;:!?。！？；：]\s+|\n")


def _flat(text: str) -> str:
    return " ".join(text.split())


def unquoted(shown: str) -> str:
    """The summary's text as shown, quote marks taken off each line."""
    return "\n".join(
        line[2:] if line.startswith(QUOTE_PREFIX) else line.lstrip(">")
        for line in shown.split("\n")
    )


def deframed(shown: str) -> str:
    """The shown summary with quote marks and attribution wrappers taken off
    (their inner text kept): every word the renderer kept, markup still escaped."""
    inner = _ATTRIBUTION_RE.sub(
        lambda m: m.group(0)[len(ATTRIBUTION_LEAD) + 2 : -1], unquoted(shown)
    )
    return _flat(inner)


def reaches_context(core: str, shown: str) -> bool:
    """Whether ``core`` is shown as written (not withheld, not escaped), in
    or out of an attribution."""
    return _flat(core) in deframed(shown)


def outside_attributions(shown: str) -> str:
    """What of the shown summary is *not* inside an attribution: where an
    instruction would still stand in the instruction position."""
    return _flat(_ATTRIBUTION_RE.sub(" ", unquoted(shown)))


def in_instruction_position(core: str, shown: str) -> bool:
    """Whether any clause of ``core`` (three words or more) is shown unquoted
    and unattributed. Clauses are cut at punctuation here, independently of
    the renderer, so a core half inside an attribution still counts."""
    outside = outside_attributions(shown)
    fragments = [_flat(f) for f in _FRAGMENT_SPLIT_RE.split(core)]
    return any(len(f.split()) >= 3 and f in outside for f in fragments)


@dataclass
class Tally:
    payloads: int = 0
    withheld: int = 0
    escaped: int = 0
    attributed: int = 0
    benign: int = 0
    kept: int = 0
    benign_shown: int = 0
    benign_attributed: int = 0

    def row(self, name: str) -> str:
        neutral = self.withheld + self.escaped
        structural = neutral + self.attributed
        return (
            f"| {name} | {self.payloads} | {neutral} ({pct(neutral, self.payloads)}) | "
            f"{self.withheld} / {self.escaped} | "
            f"{structural} ({pct(structural, self.payloads)}) | "
            f"{self.payloads - structural} | "
            f"{self.benign} | {self.kept} ({pct(self.kept, self.benign)}) | "
            f"{self.benign_shown} ({pct(self.benign_shown, self.benign)}) | "
            f"{self.benign_attributed} |"
        )


def pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}%" if d else "-"


def measure(
    path: str, summarizer: Summarizer, echo: EchoModel | None, *, enabled: bool, misses: list[str]
) -> dict[str, Tally]:
    tallies = {split: Tally() for split in (*SPLITS, "all")}
    for entry in (e for e in PAYLOADS if e.split in SPLITS):
        if echo is not None:
            echo.entry = entry
        with detection(enabled):
            outcome = run(summarizer, entry)
        # Reaches the context as written (not withheld, not escaped), in or out
        # of an attribution.
        live = reaches_context(entry.core, outcome.shown)
        in_summary = _flat(entry.core) in _flat(outcome.summary)
        exposed = live and in_instruction_position(entry.core, outcome.shown)
        for key in (entry.split, "all"):
            t = tallies[key]
            t.payloads += 1
            if not in_summary:
                t.withheld += 1
            elif not live:
                t.escaped += 1
            elif not exposed:
                t.attributed += 1
        if live and enabled and entry.split in MISSES_FROM:
            how = "unattributed" if exposed else "quoted and attributed"
            misses.append(f"{path}: payload {entry.id} ({entry.split}) reached the context, {how}")
    for entry in (e for e in BENIGN if e.split in SPLITS):
        if echo is not None:
            echo.entry = entry
        with detection(enabled):
            outcome = run(summarizer, entry)
        if echo is None:
            with detection(False):
                baseline = run(summarizer, entry)
            kept = outcome.summary == baseline.summary
        else:
            kept = outcome.level == "normal" and " ".join(entry.core.split()) in outcome.summary
        # The summary reads the same once the quote marks and attribution
        # wrappers are taken off: rendering dropped no word of it.
        # (Escaped as the renderer escapes: markup and its own quotation marks.)
        shown_whole = _flat(escape_quoted(outcome.summary)) in deframed(outcome.shown)
        core = _flat(escape_quoted(entry.core))
        framed = _flat(unquoted(outcome.shown))
        for key in (entry.split, "all"):
            tallies[key].benign += 1
            tallies[key].kept += kept
            tallies[key].benign_shown += kept and shown_whole
            tallies[key].benign_attributed += kept and core not in framed
        if not kept and enabled and entry.split in MISSES_FROM:
            misses.append(
                f"{path}: benign {entry.id} ({entry.split}) was not kept: {outcome.summary[:160]!r}"
            )
    return tallies


def _floor(text: str) -> str:
    """Markup escaped and every line quoted: what any rendering must do."""
    return "\n".join(
        QUOTE_PREFIX + line if line else QUOTE_PREFIX.rstrip()
        for line in escape_markup(text).splitlines()
    )


def _median_ms(fn: Any, texts: list[str]) -> float:
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for t in texts:
            fn(t)
        runs.append((time.perf_counter() - start) * 1000)
    return statistics.median(runs)


def rendering_cost(texts: list[str], what: str) -> str:
    """What the quoted rendering costs against escaping alone (and against
    escaping with the quote marks on every line), in time (medians of 5 runs)
    and in tokens (the project's estimator)."""
    kib = sum(len(t.encode()) for t in texts) / 1024
    base, floor_ms, quoted_ms = (
        _median_ms(escape_markup, texts),
        _median_ms(_floor, texts),
        _median_ms(quote_block, texts),
    )
    floor_tokens = sum(estimate_tokens(_floor(t)) for t in texts)
    quoted_tokens = sum(estimate_tokens(quote_block(t)) for t in texts)
    raw_tokens = sum(estimate_tokens(t) for t in texts)
    bpe = ""
    try:
        # A real BPE vocabulary, offline, when the bpe-openai package is
        # installed beside the project (not a dependency of it).
        encoding = importlib.import_module("bpe_openai").get_encoding("o200k_base")
    except ImportError:
        pass
    else:
        floor_bpe = sum(len(encoding.encode(_floor(t))) for t in texts)
        quoted_bpe = sum(len(encoding.encode(quote_block(t))) for t in texts)
        bpe = (
            f"; o200k_base tokens: escaped and quoted lines {floor_bpe:,}, quoted rendering "
            f"{quoted_bpe:,} ({100 * (quoted_bpe - floor_bpe) / floor_bpe:+.1f}%)"
        )
    return (
        f"{what}: {len(texts)} summaries, {kib:.0f} KiB: escaping only {base:.1f} ms, "
        f"escaped and quoted lines {floor_ms:.1f} ms, quoted rendering {quoted_ms:.1f} ms "
        f"({quoted_ms / kib:.3f} ms/KiB, {quoted_ms / base:.1f}x escaping); tokens: text "
        f"{raw_tokens:,}, escaped and quoted lines {floor_tokens:,}, quoted rendering "
        f"{quoted_tokens:,} ({100 * (quoted_tokens - floor_tokens) / floor_tokens:+.1f}%){bpe}"
    )


def real_summaries() -> list[str]:
    """The summaries the extractive summarizer writes for the real transcripts
    of ../shared/data (imported and compacted in a temporary home)."""
    import tempfile

    from lossless.engine.engine import Engine

    data = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    files = sorted(p for d in ("claude-code", "codex") for p in (data / d).rglob("*.jsonl"))
    if not files:
        return []
    with tempfile.TemporaryDirectory() as home, Engine.open(Path(home)) as engine:
        for path in files:
            result = engine.import_file(path, final=True)
            if result.conversation_id is not None:
                engine.compact(result.conversation_id)
        return [
            s.content
            for c in engine.store.conversations.list()
            for s in engine.store.summaries.list(c.id)
        ]


def print_rendering_costs() -> None:
    print(rendering_cost([transcript(e) for e in (*PAYLOADS, *BENIGN)], "corpus transcripts"))
    real = real_summaries()
    if real:
        print(rendering_cost(real, "real transcripts' extractive summaries"))
    else:
        print("real transcripts: ../shared/data not found, not measured")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", default="extractive,openai,anthropic")
    parser.add_argument(
        "--show-misses",
        action="store_true",
        help="list the development-split entries that failed (held-out ones are never listed)",
    )
    parser.add_argument(
        "--skip-splits",
        default="",
        help="comma-separated splits to leave out (a held-out split not yet to be looked at)",
    )
    parser.add_argument(
        "--rendering-only",
        action="store_true",
        help="only measure what the rendering costs, on the corpus and on real transcripts",
    )
    parser.add_argument(
        "--misses-from",
        default="dev",
        help="comma-separated splits whose failures --show-misses lists (default: dev)",
    )
    args = parser.parse_args(argv)
    MISSES_FROM.clear()
    MISSES_FROM.update(s.strip() for s in args.misses_from.split(",") if s.strip())
    skipped = {s.strip() for s in args.skip_splits.split(",") if s.strip()}
    SPLITS[:] = [s for s in SPLITS if s not in skipped]
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    if args.rendering_only:
        print_rendering_costs()
        return 0

    def count(entries: list[Entry], split: str) -> int:
        return sum(e.split == split for e in entries)

    print(
        f"corpus: {len(PAYLOADS)} payloads ("
        + ", ".join(f"{split} {count(PAYLOADS, split)}" for split in SPLITS)
        + f"), {len(BENIGN)} benign ("
        + ", ".join(f"{split} {count(BENIGN, split)}" for split in SPLITS)
        + ")\n"
    )
    print(
        "| path | payloads | by detection | withheld / escaped | out of instruction position "
        "| in instruction position | benign | kept by detection | shown whole | attributed |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    misses: list[str] = []
    echo = EchoModel()
    with model_server(echo) as server:
        for path in paths:
            summarizer: Summarizer
            if path == "extractive":
                summarizer, model = ExtractiveSummarizer(), None
            else:
                summarizer = build_summarizer(
                    path,
                    model=MODEL,
                    api_key=API_KEY,
                    base_url=model_base_url(server, path),
                    timeout_s=10,
                    retries=0,
                )
                model = echo
            for enabled in (True, False):
                tallies = measure(path, summarizer, model, enabled=enabled, misses=misses)
                label = path if enabled else f"{path}, no detection"
                for split in (*SPLITS, "all"):
                    if enabled or split == "all":
                        print(tallies[split].row(f"{label} ({split})"))
    print()
    print_rendering_costs()
    if args.show_misses and misses:
        print()
        print("\n".join(misses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
