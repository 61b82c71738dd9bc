"""Helpers shared by the parser tests (imported by name: tests/sources is on sys.path)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from lossless.models import NewMessage, NewNativeRecord
from lossless.sources import parser_for
from lossless.sources.base import ParseEvent, ParseProblem, ParseProgress, SessionInfo, SourceKind


@dataclass
class Parsed:
    info: SessionInfo
    events: list[ParseEvent]
    progress: ParseProgress

    @property
    def messages(self) -> list[NewMessage]:
        return [e for e in self.events if isinstance(e, NewMessage)]

    @property
    def standalone(self) -> list[NewNativeRecord]:
        return [e for e in self.events if isinstance(e, NewNativeRecord)]

    @property
    def problems(self) -> list[ParseProblem]:
        return [e for e in self.events if isinstance(e, ParseProblem)]

    @property
    def records(self) -> list[NewNativeRecord]:
        """Every native record, inside messages or standalone."""
        out: list[NewNativeRecord] = []
        for event in self.events:
            if isinstance(event, NewMessage):
                out.extend(event.native_records)
            elif isinstance(event, NewNativeRecord):
                out.append(event)
        return out

    def accounted_lines(self) -> list[int]:
        """Line numbers of every record and problem, in emission order."""
        lines = [r.line_no for r in self.records if r.line_no is not None]
        lines += [p.line_no for p in self.problems]
        return lines

    def part_kinds(self) -> Counter[str]:
        return Counter(p.kind for m in self.messages for p in m.parts)

    def tool_names(self) -> Counter[str]:
        return Counter(
            p.tool_name or "" for m in self.messages for p in m.parts if p.kind == "tool_use"
        )


def parse(
    kind: SourceKind,
    path: Path,
    *,
    start_offset: int = 0,
    start_line: int = 0,
    final: bool = True,
) -> Parsed:
    events_iter, progress = parser_for(kind).parse(
        path, start_offset=start_offset, start_line=start_line, final=final
    )
    events = list(events_iter)
    infos = [e for e in events if isinstance(e, SessionInfo)]
    assert len(infos) == 1, "exactly one SessionInfo per parse"
    assert events[0] is infos[0], "SessionInfo comes first"
    return Parsed(infos[0], events[1:], progress)


def file_lines(path: Path) -> list[bytes]:
    """The file's lines without newlines (a trailing partial line included)."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def assert_every_line_once(parsed: Parsed, expected_lines: int) -> None:
    lines = parsed.accounted_lines()
    assert sorted(lines) == list(range(1, expected_lines + 1)), "each line exactly once"


def assert_raw_exact(parsed: Parsed, path: Path) -> None:
    """Each native record's raw is its line decoded, at its stated offset."""
    data = path.read_bytes()
    lines = file_lines(path)
    for record in parsed.records:
        assert record.line_no is not None and record.byte_offset is not None
        raw = record.raw.encode("utf-8")
        assert lines[record.line_no - 1] == raw
        assert data[record.byte_offset : record.byte_offset + len(raw)] == raw
        assert record.source_path == str(path)
