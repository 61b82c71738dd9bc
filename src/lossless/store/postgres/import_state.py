"""What import keeps about its sources on PostgreSQL: quarantined lines and per-file cursors."""

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
from lossless.store.postgres.repository import Repo
from lossless.store.rows import (
    check_text,
)
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
        # The raw bytes are kept exactly (bytea); the error is a diagnostic
        # that may quote the offending line, so a NUL in it is spelled out
        # rather than refusing to quarantine the line at all.
        error = error.replace("\x00", "\\x00")
        with self.s._atomic() as conn:
            cur = conn.execute(
                "INSERT INTO quarantine(source_path, line_no, byte_offset, error, raw, "
                "raw_sha256, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (source_path, line_no, raw_sha256) DO NOTHING",
                [
                    source_path,
                    line_no,
                    byte_offset,
                    error,
                    raw,
                    hashlib.sha256(raw).hexdigest(),
                    created_at or utc_now_iso(),
                ],
            )
            return cur.rowcount > 0

    def list(
        self, *, source_path: str | None = None, limit: int = 100, after_id: int | None = None
    ) -> builtins.list[QuarantinedLine]:
        check_text(source_path, "source path")
        sql = "SELECT * FROM quarantine WHERE id > %s"
        params: list[Any] = [-1 if after_id is None else after_id]
        if source_path is not None:
            sql += " AND source_path = %s"
            params.append(source_path)
        sql += " ORDER BY id"
        if limit >= 0:
            sql += " LIMIT %s"
            params.append(limit)
        return [rows.quarantined_line(r) for r in self.s._q(sql, params)]

    def count(self) -> int:
        row = self.s._q1("SELECT count(*) AS n FROM quarantine")
        return int(row["n"]) if row else 0

    def rewrite(self, line_id: int, raw: bytes) -> None:
        digest = hashlib.sha256(raw).hexdigest()
        with self.s._atomic() as conn:
            row = conn.execute(
                "SELECT source_path, line_no FROM quarantine WHERE id = %s FOR UPDATE", [line_id]
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no quarantined line {line_id}")
            twin = conn.execute(
                "SELECT id FROM quarantine WHERE source_path = %s AND line_no = %s "
                "AND raw_sha256 = %s AND id <> %s",
                [row["source_path"], row["line_no"], digest, line_id],
            ).fetchone()
            if twin is not None:
                conn.execute("DELETE FROM quarantine WHERE id = %s", [line_id])
                return
            conn.execute(
                "UPDATE quarantine SET raw = %s, raw_sha256 = %s WHERE id = %s",
                [raw, digest, line_id],
            )


class Cursors(Repo):
    def get(self, source_path: str) -> SourceCursor | None:
        check_text(source_path, "source path")
        r = self.s._q1("SELECT * FROM source_cursors WHERE source_path = %s", [source_path])
        if r is None:
            return None
        return rows.source_cursor(r)

    def put(self, cursor: SourceCursor) -> None:
        inputs.cursor(cursor)
        with self.s._atomic() as conn:
            conn.execute(
                "INSERT INTO source_cursors(source_path, conversation_id, byte_offset, line_no, "
                "anchor_key, anchor_sha256, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (source_path) DO UPDATE SET "
                "conversation_id = excluded.conversation_id, "
                "byte_offset = excluded.byte_offset, line_no = excluded.line_no, "
                "anchor_key = excluded.anchor_key, anchor_sha256 = excluded.anchor_sha256, "
                "updated_at = excluded.updated_at",
                [
                    cursor.source_path,
                    cursor.conversation_id,
                    cursor.byte_offset,
                    cursor.line_no,
                    cursor.anchor_key,
                    cursor.anchor_sha256,
                    cursor.updated_at,
                ],
            )
