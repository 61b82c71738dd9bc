"""What import keeps about its sources on SQLite: quarantined lines and per-file cursors."""

from __future__ import annotations

import builtins
import hashlib
from typing import Any

from lossless.errors import (
    NotFoundError,
)
from lossless.models import (
    QuarantinedLine,
    SourceCursor,
)
from lossless.store import inputs, rows
from lossless.store.rows import check_text
from lossless.store.sqlite.repository import Repo
from lossless.timeutil import utc_now_iso


class Quarantine(Repo):
    def add(
        self,
        *,
        source_path: str,
        line_no: int,
        byte_offset: int,
        error: str,
        raw: bytes,
        created_at: str | None = None,
    ) -> bool:
        check_text(source_path, "source path")
        check_text(created_at, "created_at")
        with self.s._atomic():
            cur = self.db.execute(
                "INSERT OR IGNORE INTO quarantine(source_path, line_no, byte_offset, error, raw, "
                "raw_sha256, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    source_path,
                    line_no,
                    byte_offset,
                    error,
                    raw,
                    hashlib.sha256(raw).hexdigest(),
                    created_at or utc_now_iso(),
                ),
            )
            return cur.rowcount > 0

    def list(
        self, *, source_path: str | None = None, limit: int = 100, after_id: int | None = None
    ) -> builtins.list[QuarantinedLine]:
        check_text(source_path, "source path")
        sql = "SELECT * FROM quarantine WHERE id > ?"
        params: list[Any] = [-1 if after_id is None else after_id]
        if source_path is not None:
            sql += " AND source_path = ?"
            params.append(source_path)
        sql += " ORDER BY id LIMIT ?"
        params.append(limit)
        return [rows.quarantined_line(r) for r in self.s._q(sql, params)]

    def count(self) -> int:
        row = self.s._q1("SELECT count(*) AS n FROM quarantine")
        return int(row["n"]) if row else 0

    def rewrite(self, line_id: int, raw: bytes) -> None:
        with self.s._atomic():
            row = self.s._q1("SELECT source_path, line_no FROM quarantine WHERE id = ?", (line_id,))
            if row is None:
                raise NotFoundError(f"no quarantined line {line_id}")
            digest = hashlib.sha256(raw).hexdigest()
            twin = self.s._q1(
                "SELECT id FROM quarantine WHERE source_path = ? AND line_no = ? "
                "AND raw_sha256 = ? AND id <> ?",
                (row["source_path"], row["line_no"], digest, line_id),
            )
            if twin is not None:
                self.db.execute("DELETE FROM quarantine WHERE id = ?", (line_id,))
                return
            self.db.execute(
                "UPDATE quarantine SET raw = ?, raw_sha256 = ? WHERE id = ?",
                (raw, digest, line_id),
            )


class Cursors(Repo):
    def get(self, source_path: str) -> SourceCursor | None:
        check_text(source_path, "source path")
        r = self.s._q1("SELECT * FROM source_cursors WHERE source_path = ?", (source_path,))
        if r is None:
            return None
        return rows.source_cursor(r)

    def put(self, cursor: SourceCursor) -> None:
        inputs.cursor(cursor)
        with self.s._atomic():
            self.db.execute(
                "INSERT INTO source_cursors(source_path, conversation_id, byte_offset, line_no, "
                "anchor_key, anchor_sha256, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(source_path) DO UPDATE SET conversation_id = excluded.conversation_id, "
                "byte_offset = excluded.byte_offset, line_no = excluded.line_no, "
                "anchor_key = excluded.anchor_key, anchor_sha256 = excluded.anchor_sha256, "
                "updated_at = excluded.updated_at",
                (
                    cursor.source_path,
                    cursor.conversation_id,
                    cursor.byte_offset,
                    cursor.line_no,
                    cursor.anchor_key,
                    cursor.anchor_sha256,
                    cursor.updated_at,
                ),
            )
