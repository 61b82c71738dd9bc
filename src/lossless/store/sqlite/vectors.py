"""Embedding vectors on SQLite (``lossless.store.contract.VectorRepository``).

Vectors live in the store's own file (table ``embeddings``, int8 blobs) and
are searched in memory (``lossless.store.vector_matrix``: exact up to 20,000
chunks, pruned by sign codes beyond, every returned score exact): this
Python's sqlite3 cannot load a vector extension. The matrix is cached on
the store and brought up to date before each search from the rows added
since (row ids only grow); a delete (a rewritten text) reloads it.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lossless.store.contract import (
    EMBEDDING_KINDS,
    EmbeddingKind,
    EmbeddingProgress,
    EmbeddingSource,
    MessageNeighbour,
    NewVector,
    VectorHit,
)
from lossless.store.sqlite.repository import Repo
from lossless.store.totals import EMBEDDABLE_SQL
from lossless.store.vector_codec import to_int8

if TYPE_CHECKING:
    from lossless.store.vector_matrix import VectorMatrix

# Items without vectors, per kind, as (ref, conversation_id, text, path).
_PENDING: dict[EmbeddingKind, str] = {
    "memory": (
        "SELECT m.id AS ref, m.source_conversation_id AS conversation_id, "
        "m.text || CASE WHEN m.tags_text = '' THEN '' ELSE ' ' || m.tags_text END AS text, "
        "NULL AS path FROM memories m WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
        "WHERE e.model = ? AND e.kind = 'memory' AND e.ref = m.id AND e.chunk = 0) "
        "ORDER BY m.seq LIMIT ?"
    ),
    "summary": (
        "SELECT s.id AS ref, s.conversation_id, s.content AS text, NULL AS path "
        "FROM summaries s WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.model = ? "
        "AND e.kind = 'summary' AND e.ref = s.id AND e.chunk = 0) ORDER BY s.rowid LIMIT ?"
    ),
    "file": (
        "SELECT f.id AS ref, f.conversation_id, f.exploration_summary AS text, f.path "
        "FROM large_files f WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.model = ? "
        "AND e.kind = 'file' AND e.ref = f.id AND e.chunk = 0) ORDER BY f.rowid LIMIT ?"
    ),
}
_PENDING_MESSAGES = (
    "SELECT m.id AS ref, m.conversation_id, m.content AS text, NULL AS path "
    "FROM messages m WHERE m.id > ? AND NOT EXISTS (SELECT 1 FROM embeddings e "
    "WHERE e.model = ? AND e.kind = 'message' AND e.ref = CAST(m.id AS TEXT) AND e.chunk = 0) "
    "ORDER BY m.id LIMIT ?"
)


# The rows a cached matrix lacks, in row-id order. NOT INDEXED: without
# sqlite_stat1 for ``embeddings`` (a store whose searching process never
# closed, or one filled by an import) SQLite preferred the (model, ...) unique
# index, read every row of the model and sorted them in a temporary B-tree:
# measured 7 ms a search at 100,000 vectors, for a refresh that finds nothing
# new. The rowid range is the plan wanted whatever the statistics.
MATRIX_ROWS_SQL = (
    "SELECT e.id, e.kind, e.ref, e.conversation_id, e.vector, e.chunk, m.seq "
    "FROM embeddings e NOT INDEXED LEFT JOIN messages m ON e.kind = 'message' "
    "AND m.id = CAST(e.ref AS INTEGER) "
    "WHERE e.model = ? AND e.id > ? AND e.vector IS NOT NULL ORDER BY e.id"
)
# A first load takes the messages' seqs apart (``MESSAGE_PLACES_SQL``): the
# join above, for every row, read each message's row in the table, 1.8 GB of
# pages at a million generated messages, where the (conversation_id, seq)
# index that holds every id and seq is a few dozen MB. A refresh of a few
# rows keeps the join.
MATRIX_FIRST_LOAD_SQL = (
    "SELECT e.id, e.kind, e.ref, e.conversation_id, e.vector, e.chunk, NULL "
    "FROM embeddings e NOT INDEXED "
    "WHERE e.model = ? AND e.id > ? AND e.vector IS NOT NULL ORDER BY e.id"
)
MESSAGE_PLACES_SQL = "SELECT id, seq FROM messages"


class Vectors(Repo):
    def pending(
        self, model: str, *, limit: int, after_message_id: int = 0
    ) -> builtins.list[EmbeddingSource]:
        found: list[EmbeddingSource] = []
        for kind, sql in _PENDING.items():
            if len(found) >= limit:
                break
            for r in self.s._q(sql, (model, limit - len(found))):
                found.append(
                    EmbeddingSource(kind, str(r["ref"]), r["conversation_id"], r["text"], r["path"])
                )
        if len(found) < limit:
            for r in self.s._q(_PENDING_MESSAGES, (after_message_id, model, limit - len(found))):
                found.append(
                    EmbeddingSource("message", str(r["ref"]), r["conversation_id"], r["text"])
                )
        return found

    def progress(self, model: str) -> EmbeddingProgress:
        embedded: dict[str, int] = {kind: 0 for kind in EMBEDDING_KINDS}
        for r in self.s._q(
            "SELECT kind, items AS n FROM embedding_counts WHERE model = ?",
            (model,),
        ):
            embedded[r["kind"]] = int(r["n"])
        totals = self.s._q1(EMBEDDABLE_SQL)
        pending: dict[str, int] = {
            k: max(0, int(totals[k] if totals else 0) - embedded[k]) for k in EMBEDDING_KINDS
        }
        return EmbeddingProgress(embedded=embedded, pending=pending)

    def add(self, model: str, vectors: Sequence[NewVector]) -> int:
        if not vectors:
            return 0
        encoded = [
            (
                model,
                v.kind,
                v.ref,
                v.chunk,
                v.conversation_id,
                None if v.vector is None else to_int8(v.vector),
            )
            for v in vectors
        ]
        with self.s._atomic():
            # rowcount, not total_changes: the counting trigger's writes are not additions.
            cursor = self.db.executemany(
                "INSERT OR IGNORE INTO embeddings (model, kind, ref, chunk, conversation_id, "
                "vector) VALUES (?, ?, ?, ?, ?, ?)",
                encoded,
            )
            return max(0, cursor.rowcount)

    def nearest(
        self,
        model: str,
        query: Sequence[float],
        *,
        limit: int,
        kinds: Sequence[EmbeddingKind] = EMBEDDING_KINDS,
        conversation_id: int | None = None,
        project: str | None = None,
    ) -> builtins.list[VectorHit]:
        if limit <= 0:
            return []
        matrix = self._matrix(model)
        if not len(matrix):
            return []
        conversations: list[int] | None = None
        if conversation_id is not None:
            conversations = [conversation_id]
        elif project is not None:
            conversations = [
                int(r[0])
                for r in self.s._q("SELECT id FROM conversations WHERE project = ?", (project,))
            ]
        skip = self._unsearchable_memories(project) if "memory" in kinds else set()
        kept = kinds
        if conversation_id is not None:
            kept = [k for k in kinds if k != "memory"]  # a memory belongs to a project
        hits = matrix.best(query, limit, matrix.mask(kept, conversations), skip)
        return [VectorHit(k, ref, conv, score) for k, ref, conv, score in hits]  # type: ignore[arg-type]

    def similarities(
        self, model: str, query: Sequence[float], items: Sequence[tuple[EmbeddingKind, str]]
    ) -> dict[tuple[EmbeddingKind, str], float]:
        if not items:
            return {}
        found = self._matrix(model).similarity_of(query, items)
        return {(k, r): v for (k, r), v in found.items()}  # type: ignore[misc]

    def neighbourhoods(
        self, model: str, message_ids: Sequence[int], *, before: int, after: int
    ) -> dict[int, builtins.list[MessageNeighbour]]:
        if not message_ids or before < 0 or after < 0:
            return {}
        # The origins' places from SQLite (an origin need not have a vector),
        # their neighbours' vectors from the matrix: the join of messages to
        # embeddings this replaced cost a search at 100,000 messages ~13 ms.
        origins = [
            (int(r[0]), int(r[1]), int(r[2]))
            for r in self.s._q(
                "SELECT m.id, m.conversation_id, m.seq FROM json_each(?) j "
                "CROSS JOIN messages m ON m.id = j.value ORDER BY m.id",
                (json.dumps(sorted(set(message_ids))),),
            )
        ]
        if not origins:
            return {}
        return self._matrix(model).neighbours(origins, before, after)

    def _unsearchable_memories(self, project: str | None) -> set[tuple[str, str]]:
        """Archived memories, and (with a project) other projects' ones."""
        sql = "SELECT id FROM memories WHERE archived != 0"
        params: list[Any] = []
        if project is not None:
            sql += " OR project != ?"
            params.append(project)
        return {("memory", str(r[0])) for r in self.s._q(sql, params)}

    def _matrix(self, model: str) -> VectorMatrix:
        from lossless.store.vector_matrix import LOAD_BLOCK, VectorMatrix

        cache: dict[str, VectorMatrix] = self.s.vector_matrices
        state = self.s._q1("SELECT deletions FROM embedding_state")
        deletions = int(state[0]) if state else 0
        matrix = cache.get(model)
        if matrix is None or matrix.deletions != deletions:
            matrix = VectorMatrix()
            matrix.deletions = deletions
            cache[model] = matrix
        with self.s._lock:
            self.s._check_open()
            if not len(matrix):
                # From the (model, ...) index alone: a few rows without a vector
                # are counted too, which costs their room and no blob reads.
                counted = self.db.execute(
                    "SELECT count(*) FROM embeddings WHERE model = ?", (model,)
                ).fetchone()
                matrix.reserve(int(counted[0]))
            # Plain tuples in blocks: sqlite3.Row objects (or a MatrixRow each)
            # cost seconds at a million rows, and fetching them all at once
            # would hold them twice.
            cursor = self.db.cursor()
            cursor.row_factory = None
            first = not len(matrix)
            cursor.execute(
                MATRIX_FIRST_LOAD_SQL if first else MATRIX_ROWS_SQL, (model, matrix.last_row_id)
            )
            while block := cursor.fetchmany(LOAD_BLOCK):
                matrix.append_block(block)
            if first and len(matrix):
                self._place_messages(matrix)
        return matrix

    def _place_messages(self, matrix: VectorMatrix) -> None:
        """Every message row's seq, from the (conversation_id, seq) index."""
        import numpy as np

        from lossless.store.vector_matrix import LOAD_BLOCK

        cursor = self.db.cursor()
        cursor.row_factory = None
        cursor.execute(MESSAGE_PLACES_SQL)
        # Arrays a block at a time: a million ids and seqs as Python ints cost ~100 MB.
        parts = [np.zeros((0, 2), dtype=np.int64)]
        while block := cursor.fetchmany(LOAD_BLOCK):
            parts.append(np.asarray(block, dtype=np.int64))
        places = np.concatenate(parts)
        matrix.place_messages(places[:, 0], places[:, 1])
