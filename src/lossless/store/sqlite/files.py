"""Large files on SQLite: content kept outside the transcript, with an exploration summary."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from lossless.errors import (
    NotFoundError,
    StoreError,
)
from lossless.models import (
    LargeFile,
    NewLargeFile,
)
from lossless.store import inputs, rows
from lossless.store.rows import (
    check_text,
)
from lossless.store.rows import large_file as to_large_file
from lossless.store.sqlite.repository import Repo


class Files(Repo):
    def create(self, large_file: NewLargeFile) -> LargeFile:
        stored = rows.new_large_file(large_file)
        if not self.restore(stored):
            raise StoreError(f"large file id {stored.id} already exists")
        return stored

    def get(self, file_id: str) -> LargeFile | None:
        check_text(file_id, "file id")
        row = self.s._q1("SELECT * FROM large_files WHERE id = ?", (file_id,))
        return None if row is None else to_large_file(row)

    def list(self, conversation_id: int) -> builtins.list[LargeFile]:
        rows = self.s._q(
            "SELECT * FROM large_files WHERE conversation_id = ? ORDER BY created_at, id",
            (conversation_id,),
        )
        return [to_large_file(r) for r in rows]

    def list_all(self, conversation_ids: Sequence[int] | None = None) -> builtins.list[LargeFile]:
        if conversation_ids is None:
            return [to_large_file(r) for r in self.s._q("SELECT * FROM large_files ORDER BY id")]
        found: builtins.list[LargeFile] = []
        ids = builtins.list(dict.fromkeys(conversation_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            found.extend(
                to_large_file(r)
                for r in self.s._q(
                    "SELECT * FROM large_files WHERE conversation_id IN "
                    f"({','.join('?' * len(chunk))}) ORDER BY id",
                    chunk,
                )
            )
        return found

    def restore(self, large_file: LargeFile) -> bool:
        inputs.restored_file(large_file)
        f = large_file
        with self.s._atomic():
            cur = self.db.execute(
                "INSERT OR IGNORE INTO large_files(id, conversation_id, message_id, path, "
                "byte_size, token_count, sha256, media_type, exploration_summary, "
                "original_name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    f.id,
                    f.conversation_id,
                    f.message_id,
                    f.path,
                    f.byte_size,
                    f.token_count,
                    f.sha256,
                    f.media_type,
                    f.exploration_summary,
                    f.original_name,
                    f.created_at,
                ),
            )
            return cur.rowcount > 0

    def rewrite(
        self,
        file_id: str,
        *,
        path: str,
        sha256: str,
        byte_size: int,
        token_count: int,
        exploration_summary: str,
    ) -> LargeFile:
        inputs.file_rewrite(
            file_id=file_id, path=path, sha256=sha256, exploration_summary=exploration_summary
        )
        with self.s._atomic():
            cur = self.db.execute(
                "UPDATE large_files SET path = ?, sha256 = ?, byte_size = ?, token_count = ?, "
                "exploration_summary = ? WHERE id = ?",
                (path, sha256, byte_size, token_count, exploration_summary, file_id),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no large file {file_id!r}")
            got = self.get(file_id)
        assert got is not None
        return got

    def paths_in_use(self, paths: Sequence[str]) -> set[str]:
        for path in paths:
            check_text(path, "path")
        found: set[str] = set()
        unique = builtins.list(dict.fromkeys(paths))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                str(r["path"])
                for r in self.s._q(
                    f"SELECT DISTINCT path FROM large_files WHERE path IN ({marks})", chunk
                )
            )
        return found
