"""Claude Code transcripts: ``~/.claude/projects/<dir>/<session>.jsonl``.

Claude Code writes one record per line and splits one API response into
several ``assistant`` records (one per content block) that share
``message.id``; consecutive ones are merged back into one message. Sub-agent
transcripts live in ``<dir>/<session>/subagents/agent-<id>.jsonl`` and carry
the *parent's* ``sessionId``, so they get a session id of their own here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lossless.models import NewMessage, NewNativeRecord, NewPart, Role
from lossless.sources.base import (
    LineError,
    ParseEvent,
    ParseProblem,
    ParseProgress,
    RawLine,
    SessionInfo,
    SourceKind,
    decode_json_line,
    line_key,
)
from lossless.sources.lines import (
    ScannedLine,
    check_readable,
    head_records,
    mark_consumed,
    native_record,
    scan_lines,
    start_progress,
    str_field,
)
from lossless.sources.parts import block_to_part, render_content

__all__ = ["ClaudeCodeParser", "claude_session_info"]


def _record_key(line: ScannedLine) -> str:
    assert line.data is not None
    uuid = line.data.get("uuid")
    return uuid if isinstance(uuid, str) and uuid else line.line_key


def _raw_key(raw: RawLine) -> str:
    """Native key of an undecoded line (the anchor line before a resume point)."""
    try:
        uuid = decode_json_line(raw).get("uuid")
    except LineError:
        uuid = None
    return uuid if isinstance(uuid, str) and uuid else line_key(raw.line_no, raw.data)


def _subagent_from_path(path: Path) -> tuple[str, str] | None:
    """(parent session id, agent id) for ``<session>/subagents/agent-<id>.jsonl``."""
    if path.parent.name == "subagents" and path.stem.startswith("agent-"):
        return path.parent.parent.name, path.stem[len("agent-") :]
    return None


def _text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


def claude_session_info(path: Path) -> SessionInfo:
    """Session facts from the head of the file (so a resumed parse gets the same)."""
    session_id: str | None = None
    cwd = started = version = branch = agent_id = None
    sidechain = False
    for data in head_records(path):
        started = started or _text(data, "timestamp")
        cwd = cwd or _text(data, "cwd")
        version = version or _text(data, "version")
        branch = branch or _text(data, "gitBranch")
        if session_id is None and _text(data, "sessionId"):
            # Whether this is a sub-agent is decided by the first session
            # record only: old main transcripts interleave sidechain records.
            session_id = _text(data, "sessionId")
            sidechain = data.get("isSidechain") is True
            agent_id = _text(data, "agentId")
    metadata: dict[str, Any] = {}
    if version:
        metadata["version"] = version
    if branch:
        metadata["git_branch"] = branch
    parent: str | None = None
    sub = _subagent_from_path(path)
    if sub is not None:
        parent, path_agent = sub
        agent_id = agent_id or path_agent
    elif sidechain and agent_id and session_id:
        parent = session_id
    else:
        agent_id = None
    if parent is not None and agent_id is not None:
        own_id = f"{parent}/agent-{agent_id}"
    else:
        own_id = session_id or path.stem
    return SessionInfo(
        client="claude-code",
        session_id=own_id,
        project=cwd,
        parent_session_id=parent,
        agent_id=agent_id,
        started_at=started,
        metadata=metadata,
    )


def _content_parts(message: object, what: str) -> tuple[list[NewPart], str | None] | str:
    """(parts, plain string or None) of ``message.content``, or an error naming the field."""
    if not isinstance(message, dict):
        return f"{what} record: field 'message' is missing or not an object"
    content = message.get("content")
    if isinstance(content, str):
        return [NewPart("text", text=content)], content
    if isinstance(content, list):
        return [block_to_part(block) for block in content], None
    return (
        f"{what} record: field 'message.content' must be a string or a list,"
        f" got {type(content).__name__}"
    )


def _common_metadata(data: dict[str, Any], coerced: list[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    uuid = str_field(data, "uuid", coerced)
    if uuid:
        meta["uuid"] = uuid
    parent = str_field(data, "parentUuid", coerced)
    if parent:
        meta["parent_uuid"] = parent
    if data.get("isSidechain") is True:
        meta["is_sidechain"] = True
    if data.get("isMeta") is True:
        meta["is_meta"] = True
    return meta


@dataclass(slots=True)
class _Group:
    """Assistant records sharing one ``message.id`` (one API response)."""

    message_id: str | None
    lines: list[ScannedLine] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    parts: list[NewPart] = field(default_factory=list)
    plain: list[str | None] = field(default_factory=list)
    records: list[NewNativeRecord] = field(default_factory=list)
    coerced: list[str] = field(default_factory=list)

    def build(self) -> NewMessage:
        first = self.lines[0].data
        last = self.lines[-1].data
        assert first is not None and last is not None
        coerced = self.coerced
        meta = _common_metadata(first, coerced)
        if len(self.keys) > 1:
            # Children point at the *last* record's uuid through parentUuid.
            meta["uuids"] = [
                line.data["uuid"]
                for line in self.lines
                if line.data is not None and isinstance(line.data.get("uuid"), str)
            ]
        if self.message_id:
            meta["message_id"] = self.message_id
        message = last.get("message")
        if isinstance(message, dict):
            for src, dst in (
                ("model", "model"),
                ("usage", "usage"),
                ("stop_reason", "stop_reason"),
            ):
                if message.get(src) is not None:
                    meta[dst] = message[src]
        request_id = str_field(last, "requestId", coerced)
        if request_id:
            meta["request_id"] = request_id
        if any(
            line.data is not None and line.data.get("isSidechain") is True for line in self.lines
        ):
            meta["is_sidechain"] = True
        created = str_field(first, "timestamp", coerced)
        if coerced:
            meta["coerced"] = list(coerced)
        if len(self.plain) == 1 and self.plain[0] is not None:
            content = self.plain[0]
        else:
            content = render_content(self.parts)
        return NewMessage(
            role="assistant",
            content=content,
            parts=tuple(self.parts),
            created_at=created,
            ingest_key=self.keys[0],
            metadata=meta,
            native_records=tuple(self.records),
        )


class ClaudeCodeParser:
    """Parser for Claude Code session and sub-agent transcripts."""

    kind: SourceKind = "claude-code"

    def parse(
        self, path: Path, *, start_offset: int = 0, start_line: int = 0, final: bool = True
    ) -> tuple[Iterator[ParseEvent], ParseProgress]:
        check_readable(path)
        progress, _ = start_progress(path, start_offset, start_line, _raw_key)
        return self._events(path, start_offset, start_line, final, progress), progress

    def _events(
        self, path: Path, start_offset: int, start_line: int, final: bool, progress: ParseProgress
    ) -> Iterator[ParseEvent]:
        yield claude_session_info(path)
        source = str(path)
        group: _Group | None = None
        # While a group is open, everything else is held and emitted right after
        # the group's message, so progress never has to skip over an unemitted
        # line and a held-back group leaves nothing half-emitted behind it.
        held: list[ParseEvent] = []
        held_last: tuple[ScannedLine, str] | None = None

        def flush() -> Iterator[ParseEvent]:
            nonlocal group, held, held_last
            assert group is not None and held_last is not None
            events: list[ParseEvent] = [group.build(), *held]
            mark_consumed(progress, *held_last)
            group, held, held_last = None, [], None
            yield from events

        for line in scan_lines(path, start_offset, start_line, progress):
            event: ParseEvent
            if line.problem is not None:
                key = line.line_key
                event = line.problem
            else:
                data = line.data
                assert data is not None
                key = _record_key(line)
                rtype = data.get("type")
                record = native_record(line, key, rtype, source)
                if rtype == "assistant":
                    added = self._add_assistant(group, line, key, record)
                    if isinstance(added, _Group):
                        if group is not None and added is not group:
                            yield from flush()
                        group = added
                        held_last = (line, key)
                        continue
                    event = added
                elif rtype in ("user", "system"):
                    if group is not None:
                        yield from flush()
                    event = self._user_or_system(line, key, record, rtype)
                else:
                    event = record
            if group is not None:
                held.append(event)
                held_last = (line, key)
                continue
            mark_consumed(progress, line, key)
            yield event
        if group is not None and final:
            yield from flush()

    def _add_assistant(
        self, group: _Group | None, line: ScannedLine, key: str, record: NewNativeRecord
    ) -> _Group | ParseProblem:
        """The group this record belongs to (the open one or a new one), or a problem."""
        data = line.data
        assert data is not None
        message = data.get("message")
        found = _content_parts(message, "assistant")
        if isinstance(found, str):
            return ParseProblem(
                record.source_path or "",
                line.raw.line_no,
                line.raw.byte_offset,
                found,
                line.raw.data,
            )
        parts, plain = found
        coerced: list[str] = []
        assert isinstance(message, dict)
        message_id = str_field(message, "id", coerced, "message.id")
        if group is None or message_id is None or group.message_id != message_id:
            group = _Group(message_id)
        group.lines.append(line)
        group.keys.append(key)
        group.parts.extend(parts)
        group.plain.append(plain)
        group.records.append(record)
        group.coerced.extend(coerced)
        return group

    def _user_or_system(
        self, line: ScannedLine, key: str, record: NewNativeRecord, rtype: str
    ) -> ParseEvent:
        data = line.data
        assert data is not None
        coerced: list[str] = []
        meta = _common_metadata(data, coerced)
        created = str_field(data, "timestamp", coerced)
        role: Role
        parts: list[NewPart]
        plain: str | None
        if rtype == "system":
            subtype = data.get("subtype")
            content = data.get("content")
            if subtype != "compact_boundary" and not isinstance(content, str):
                # turn_duration, stop_hook_summary...: telemetry without text,
                # kept verbatim as a record rather than an empty system message.
                return record
            text = content if isinstance(content, str) else ""
            parts, plain = [NewPart("text", text=text)], text
            role = "system"
            if isinstance(subtype, str):
                meta["subtype"] = subtype
            if subtype == "compact_boundary":
                compact = data.get("compactMetadata")
                meta["compact_boundary"] = compact if isinstance(compact, dict) else {}
                logical = str_field(data, "logicalParentUuid", coerced)
                if logical:
                    meta["logical_parent_uuid"] = logical
        else:
            found = _content_parts(data.get("message"), "user")
            if isinstance(found, str):
                return ParseProblem(
                    record.source_path or "",
                    line.raw.line_no,
                    line.raw.byte_offset,
                    found,
                    line.raw.data,
                )
            parts, plain = found
            only_results = bool(parts) and all(p.kind == "tool_result" for p in parts)
            role = "tool" if only_results else "user"
            if data.get("isCompactSummary") is True:
                meta["is_compact_summary"] = True
        if coerced:
            meta["coerced"] = coerced
        return NewMessage(
            role=role,
            content=plain if plain is not None else render_content(parts),
            parts=tuple(parts),
            created_at=created,
            ingest_key=key,
            metadata=meta,
            native_records=(record,),
        )
