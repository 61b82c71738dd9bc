"""Property tests: no input makes a parser raise, and every line is accounted for once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sources_helpers import Parsed, file_lines, parse

from lossless.sources.base import SourceKind

KINDS: list[SourceKind] = ["claude-code", "codex", "generic"]
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
KEY = re.compile(rb'"(content|message|timestamp|uuid|payload|role|type|id|input|name|text)":')


def check_accounting(parsed: Parsed, data: bytes) -> None:
    """Records + problems + pending tail == the file's lines, each exactly once."""
    complete = data.count(b"\n")
    unterminated = bool(data) and not data.endswith(b"\n")
    pending = parsed.progress.pending_tail
    assert not pending or unterminated
    expected = complete + (1 if unterminated and not pending else 0)
    lines = parsed.accounted_lines()
    assert sorted(lines) == list(range(1, expected + 1))
    assert parsed.progress.end_line == expected
    end = data.rfind(b"\n") + 1 if pending else len(data)
    assert parsed.progress.end_offset == end
    for record in parsed.records:
        assert record.line_no is not None and record.byte_offset is not None
        raw = record.raw.encode("utf-8")
        assert data[record.byte_offset : record.byte_offset + len(raw)] == raw


_REAL_LINES: list[bytes] = []


def real_lines(data_dir: Path) -> list[bytes]:
    """Lines of short.jsonl and the first 40 of a Codex rollout (loaded once)."""
    if not _REAL_LINES:
        codex = next((data_dir / "codex" / "codemie-code").glob("rollout-*T11-26-55-*.jsonl"))
        _REAL_LINES.extend(file_lines(data_dir / "claude-code" / "spotter" / "short.jsonl"))
        _REAL_LINES.extend(file_lines(codex)[:40])
    return _REAL_LINES


def corrupt(line: bytes, op: int, where: float, value: int) -> list[bytes]:
    """One corruption of a line; may return 0, 1 or 2 lines."""
    i = int(where * len(line))
    if op == 0:
        return [line[:i]]
    if op == 1 and line:
        j = min(i, len(line) - 1)
        return [line[:j] + bytes([line[j] ^ (value or 1)]) + line[j + 1 :]]
    if op == 2:
        return [line[:i] + b"\x00" + line[i:]]
    if op == 3:
        return [line[:i], line[i:]]  # a newline inserted: one line becomes two
    if op == 4:
        return []
    if op == 5:
        # A field of the wrong type, keeping the original beside it (still valid JSON).
        wrong = [b"5", b"null", b"[1]", b'{"x": 1}', b'"s"', b"true"][value % 6]
        return [KEY.sub(lambda m: m.group(0) + wrong + b',"_' + m.group(1) + b'":', line, 1)]
    return [line, line]


@given(data=st.binary(max_size=3000), kind=st.sampled_from(KINDS), final=st.booleans())
@SETTINGS
def test_random_bytes(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, kind: SourceKind, final: bool
) -> None:
    path = tmp_path_factory.mktemp("random") / "t.jsonl"
    path.write_bytes(data)
    parsed = parse(kind, path, final=final)
    if final or kind != "claude-code":
        check_accounting(parsed, data)


@given(
    picks=st.lists(
        st.tuples(
            st.integers(0, 10_000),
            st.integers(0, 7),
            st.floats(0, 1),
            st.integers(0, 255),
        ),
        min_size=1,
        max_size=25,
    ),
    kind=st.sampled_from(KINDS),
    cut=st.floats(0, 1),
)
@SETTINGS
def test_corrupted_real_lines(
    tmp_path_factory: pytest.TempPathFactory,
    data_dir: Path,
    picks: list[tuple[int, int, float, int]],
    kind: SourceKind,
    cut: float,
) -> None:
    pool = real_lines(data_dir)
    lines: list[bytes] = []
    for index, op, where, value in picks:
        lines.extend(corrupt(pool[index % len(pool)], op, where, value))
    data = b"".join(line + b"\n" for line in lines)
    path = tmp_path_factory.mktemp("corrupt") / "t.jsonl"
    path.write_bytes(data)
    whole = parse(kind, path)
    check_accounting(whole, data)

    # Read as a growing file cut anywhere, then resumed: the same events.
    at = int(cut * len(data))
    path.write_bytes(data[:at])
    first = parse(kind, path, final=False)
    path.write_bytes(data)
    second = parse(
        kind,
        path,
        start_offset=first.progress.end_offset,
        start_line=first.progress.end_line,
    )
    assert first.events + second.events == whole.events
