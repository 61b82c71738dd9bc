"""Numbered SQL migrations with a checksum ledger, shared by every backend.

A backend keeps its migrations as ``NNNN_name.sql`` files. Each applied
migration is recorded with the SHA-256 of its text; on open the recorded
history must be a prefix of the files on disk, unchanged. Anything else (a
changed file, a missing file, a database migrated by a newer lossless) is a
``MigrationError`` that says what differs, never a silent repair.
"""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lossless.errors import MigrationError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    """One ``NNNN_name.sql`` file of a backend."""

    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return _sha256_hex(self.sql.encode("utf-8"))


@dataclass(frozen=True, slots=True)
class AppliedMigration:
    """One migration as the database's ledger recorded it."""

    version: int
    name: str
    checksum: str


def _sha256_hex(data: bytes) -> str:
    """SHA-256 in hex from the interpreter's own implementation, the digest
    hashlib gives: every store opening checks the checksums of the migration
    files, and hashlib's OpenSSL binding (~2 ms to load) would be most of what
    that costs a read command."""
    global _sha256
    if _sha256 is None:
        _sha256 = _builtin_sha256()
    return str(_sha256(data).hexdigest())


_sha256: Any = None


def _builtin_sha256() -> Any:
    """``_sha256.sha256`` (``_sha2`` from Python 3.12); hashlib's where it is not built."""
    # Looked up once: a module that is not there is searched for on every import.
    try:
        return importlib.import_module("_sha2" if sys.version_info >= (3, 12) else "_sha256").sha256
    except (ImportError, AttributeError):
        import hashlib

        return hashlib.sha256


def load_migrations(package: str) -> list[Migration]:
    """Read the ``migrations/`` folder of ``package``, ordered by version."""
    folder = _migrations_folder(package)
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match is None:
            continue
        found.append(Migration(int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise MigrationError(
                f"migration files of {package} are not numbered 1..N without gaps: "
                f"expected {expected:04d}, found {migration.version:04d}_{migration.name}.sql"
            )
    return found


def _migrations_folder(package: str) -> Traversable:
    # Every store opening (every hook) reads these files. A package on disk
    # is read as a plain folder, which spares it importlib.resources and its
    # zipfile reader; only a package in a zip archive needs them.
    for location in getattr(importlib.import_module(package), "__path__", ()):
        folder = Path(location) / "migrations"
        if folder.is_dir():
            return folder
    from importlib import resources

    return resources.files(package).joinpath("migrations")


def pending_migrations(
    available: list[Migration], applied: list[AppliedMigration], *, where: str
) -> list[Migration]:
    """Check the recorded history against the files and return what is left to apply."""
    by_version = {m.version: m for m in available}
    for position, record in enumerate(sorted(applied, key=lambda a: a.version), start=1):
        if record.version != position:
            raise MigrationError(
                f"{where}: migration history has a gap or is out of order at "
                f"{record.version:04d}_{record.name} (expected {position:04d})"
            )
        migration = by_version.get(record.version)
        if migration is None:
            raise MigrationError(
                f"{where}: database has migration {record.version:04d}_{record.name}, "
                "which this version of lossless does not know; it was written by a newer "
                "lossless: upgrade lossless-context"
            )
        if migration.checksum != record.checksum:
            raise MigrationError(
                f"{where}: applied migration {record.version:04d}_{record.name} was changed "
                f"after it was applied (recorded sha256 {record.checksum[:12]}, file "
                f"{migration.checksum[:12]}); applied migrations are immutable: add a new one"
            )
    return [m for m in available if m.version > len(applied)]


def split_statements(script: str) -> list[str]:
    """Split a SQL script into statements, keeping trigger bodies whole."""
    import sqlite3

    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        if not buffer and (not line.strip() or line.lstrip().startswith("--")):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        raise MigrationError(f"incomplete SQL statement at end of migration: {buffer[:80]!r}")
    return statements
