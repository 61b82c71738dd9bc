"""Which secrets to redact: the built-in detectors plus the user's own patterns.

User patterns live in ``$LCM_HOME/sensitive.json``, global or scoped to one
project (a project is the working directory a session ran in). Every pattern
is validated when added (syntax, empty matches, catastrophic backtracking), so
a bad one is refused up front instead of stalling ingestion later.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from lossless.engine.status import redaction_counts
from lossless.errors import ConfigError, InputError
from lossless.models import Conversation, NewNativeRecord
from lossless.redact import Redactor, UserPattern, patterns_for_project, validate_pattern
from lossless.store.contract import Repositories

PATTERNS_FILE = "sensitive.json"


@dataclass
class PatternBook:
    """The user's redaction patterns, read from and written to one JSON file."""

    path: Path
    patterns: list[UserPattern] = field(default_factory=list)

    @classmethod
    def load(cls, home: Path) -> PatternBook:
        path = home / PATTERNS_FILE
        if not path.exists():
            return cls(path)
        try:
            data = json.loads(path.read_text("utf-8"))
            patterns = [
                UserPattern(
                    name=item["name"],
                    regex=item["regex"],
                    scope=item.get("scope", "global"),
                    project=item.get("project"),
                )
                for item in data.get("patterns", [])
            ]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"cannot read redaction patterns from {path}: {exc}") from None
        return cls(path, patterns)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        payload = {
            "patterns": [
                {"name": p.name, "regex": p.regex, "scope": p.scope, "project": p.project}
                for p in self.patterns
            ]
        }
        # Imported here, not at the top: hooks load this module to redact and
        # never save, and tempfile drags in shutil and random.
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".sensitive-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2)
            fh.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    def add(self, pattern: UserPattern) -> None:
        """Validate and add ``pattern`` (replacing one with the same name and scope)."""
        validate_pattern(pattern.regex)
        self.patterns = [p for p in self.patterns if not _same_slot(p, pattern)]
        self.patterns.append(pattern)

    def remove(self, name: str, project: str | None = None) -> UserPattern:
        for p in self.patterns:
            if p.name == name and (project is None or p.project == project):
                self.patterns.remove(p)
                return p
        where = f" for project {project}" if project else ""
        raise InputError(f"no redaction pattern named {name!r}{where}")

    def for_project(self, project: str | None) -> tuple[UserPattern, ...]:
        return patterns_for_project(self.patterns, project)


def _same_slot(a: UserPattern, b: UserPattern) -> bool:
    return a.name == b.name and a.scope == b.scope and a.project == b.project


class Redactors:
    """One ``Redactor`` per project (global patterns plus that project's own)."""

    def __init__(self, book: PatternBook, *, enabled: bool) -> None:
        self.book = book
        self.enabled = enabled
        self._by_project: dict[str | None, Redactor] = {}

    def for_project(self, project: str | None) -> Redactor:
        redactor = self._by_project.get(project)
        if redactor is None:
            redactor = Redactor(self.book.for_project(project), enabled=self.enabled)
            self._by_project[project] = redactor
        return redactor

    def for_conversation(self, conversation: Conversation) -> Redactor:
        return self.for_project(conversation.project)


def redact_records(
    redactor: Redactor, records: list[NewNativeRecord]
) -> tuple[list[NewNativeRecord], dict[str, int]]:
    """Redact standalone native records (progress lines carry tool output too)."""
    from dataclasses import replace

    counts: dict[str, int] = {}
    out: list[NewNativeRecord] = []
    for record in records:
        result = redactor.redact_json(record.raw)
        if result.counts:
            for category, n in result.counts.items():
                counts[category] = counts.get(category, 0) + n
            record = replace(record, raw=result.text)
        out.append(record)
    return out, counts


def redact_raw_line(redactor: Redactor, raw: bytes) -> bytes:
    """Redact a quarantined line, which may not even be UTF-8.

    Decoding as Latin-1 maps every byte to one character and back, so bytes
    that are not part of a secret come back exactly as they were.
    """
    text = raw.decode("latin-1")
    # Usually a JSONL line cut short: read its escapes as JSON would.
    result = redactor.redact_json(text)
    return raw if not result.counts else result.text.encode("latin-1", errors="replace")


def redaction_totals(repos: Repositories) -> dict[str, int]:
    """Secrets redacted so far, per category, over every conversation."""
    return redaction_counts(repos.conversations.list())
