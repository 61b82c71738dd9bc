"""Embedding vectors on PostgreSQL (``lossless.store.contract.VectorRepository``).

pgvector's ``vector(384)`` column with an HNSW cosine index (migration
0011), laid out as on SQLite. A search asks the index for more rows than it
returns (an item's chunks count once) and, with filters, lets pgvector's
iterative scan go on until enough rows pass them. Only where the server has
pgvector (``PostgresStore.capabilities.vector_search``).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from lossless.store.contract import (
    EMBEDDING_KINDS,
    EmbeddingKind,
    EmbeddingProgress,
    EmbeddingSource,
    MessageNeighbour,
    NewVector,
    VectorHit,
)
from lossless.store.postgres.repository import Repo
from lossless.store.totals import EMBEDDABLE_SQL
from lossless.store.vector_codec import from_pg_literal, pg_literal

# Rows the HNSW scan considers per query (pgvector's default 40 is below a
# page of 50 candidates with their chunks).
EF_SEARCH = 200

_PENDING: dict[EmbeddingKind, str] = {
    "memory": (
        "SELECT m.id AS ref, m.source_conversation_id AS conversation_id, "
        "m.text || CASE WHEN m.tags_text = '' THEN '' ELSE ' ' || m.tags_text END AS text, "
        "NULL AS path FROM memories m WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
        "WHERE e.model = %s AND e.kind = 'memory' AND e.ref = m.id AND e.chunk = 0) "
        "ORDER BY m.created_at, m.id LIMIT %s"
    ),
    "summary": (
        "SELECT s.id AS ref, s.conversation_id, s.content AS text, NULL AS path "
        "FROM summaries s WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.model = %s "
        "AND e.kind = 'summary' AND e.ref = s.id AND e.chunk = 0) ORDER BY s.created_seq LIMIT %s"
    ),
    "file": (
        "SELECT f.id AS ref, f.conversation_id, f.exploration_summary AS text, f.path "
        "FROM large_files f WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.model = %s "
        "AND e.kind = 'file' AND e.ref = f.id AND e.chunk = 0) ORDER BY f.created_at, f.id LIMIT %s"
    ),
}
_PENDING_MESSAGES = (
    "SELECT m.id AS ref, m.conversation_id, m.content AS text, NULL AS path "
    "FROM messages m WHERE m.id > %s AND NOT EXISTS (SELECT 1 FROM embeddings e "
    "WHERE e.model = %s AND e.kind = 'message' AND e.ref = m.id::text AND e.chunk = 0) "
    "ORDER BY m.id LIMIT %s"
)


class Vectors(Repo):
    def pending(
        self, model: str, *, limit: int, after_message_id: int = 0
    ) -> builtins.list[EmbeddingSource]:
        found: list[EmbeddingSource] = []
        for kind, sql in _PENDING.items():
            if len(found) >= limit:
                break
            for r in self.s._q(sql, [model, limit - len(found)]):
                found.append(
                    EmbeddingSource(kind, str(r["ref"]), r["conversation_id"], r["text"], r["path"])
                )
        if len(found) < limit:
            for r in self.s._q(_PENDING_MESSAGES, [after_message_id, model, limit - len(found)]):
                found.append(
                    EmbeddingSource("message", str(r["ref"]), r["conversation_id"], r["text"])
                )
        return found

    def progress(self, model: str) -> EmbeddingProgress:
        embedded: dict[str, int] = {kind: 0 for kind in EMBEDDING_KINDS}
        for r in self.s._q("SELECT kind, items FROM embedding_counts WHERE model = %s", [model]):
            embedded[r["kind"]] = int(r["items"])
        totals = self.s._q1(EMBEDDABLE_SQL) or {}
        pending: dict[str, int] = {
            k: max(0, int(totals.get(k) or 0) - embedded[k]) for k in EMBEDDING_KINDS
        }
        return EmbeddingProgress(embedded=embedded, pending=pending)

    def add(self, model: str, vectors: Sequence[NewVector]) -> int:
        if not vectors:
            return 0
        params = [
            [
                model,
                v.kind,
                v.ref,
                v.chunk,
                v.conversation_id,
                None if v.vector is None else pg_literal(v.vector),
            ]
            for v in vectors
        ]
        added = 0
        with self.s._atomic() as conn, conn.cursor() as cur:
            for row in params:
                cur.execute(
                    "INSERT INTO embeddings (model, kind, ref, chunk, conversation_id, vector) "
                    "VALUES (%s, %s, %s, %s, %s, %s::vector) ON CONFLICT DO NOTHING",
                    row,
                )
                added += cur.rowcount
        return added

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
        wanted = [k for k in kinds if not (conversation_id is not None and k == "memory")]
        if not wanted:
            return []
        literal = pg_literal(query)
        where = "e.model = %s AND e.vector IS NOT NULL AND e.kind = ANY(%s)"
        params: list[Any] = [literal, model, wanted]
        if conversation_id is not None:
            where += " AND e.conversation_id = %s"
            params.append(conversation_id)
        # Memories: never archived ones; with a project, that project's only.
        where += (
            " AND (e.kind <> 'memory' OR EXISTS (SELECT 1 FROM memories mm WHERE mm.id = e.ref "
            "AND NOT mm.archived AND (%s::text IS NULL OR mm.project = %s)))"
        )
        params += [project, project]
        if project is not None:
            where += (
                " AND (e.kind = 'memory' OR EXISTS (SELECT 1 FROM conversations c "
                "WHERE c.id = e.conversation_id AND c.project = %s))"
            )
            params.append(project)
        found: dict[tuple[str, str], VectorHit] = {}
        with self.s._atomic() as conn:
            conn.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, limit * 4)}")
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = conn.execute(
                "SELECT e.kind, e.ref, e.conversation_id, 1 - (e.vector <=> %s::vector) AS score "
                f"FROM embeddings e WHERE {where} ORDER BY e.vector <=> %s::vector LIMIT %s",
                [*params, literal, limit * 4],
            ).fetchall()
        # relaxed_order: the index may return rows slightly out of order.
        for r in sorted(rows, key=lambda r: -float(r["score"])):
            key = (r["kind"], r["ref"])
            if key not in found:
                found[key] = VectorHit(r["kind"], r["ref"], r["conversation_id"], float(r["score"]))
        return list(found.values())[:limit]

    def similarities(
        self, model: str, query: Sequence[float], items: Sequence[tuple[EmbeddingKind, str]]
    ) -> dict[tuple[EmbeddingKind, str], float]:
        if not items:
            return {}
        rows = self.s._q(
            "SELECT e.kind, e.ref, max(1 - (e.vector <=> %s::vector)) AS score "
            "FROM embeddings e JOIN unnest(%s::text[], %s::text[]) AS w(kind, ref) "
            "ON e.kind = w.kind AND e.ref = w.ref "
            "WHERE e.model = %s AND e.vector IS NOT NULL GROUP BY e.kind, e.ref",
            [pg_literal(query), [k for k, _ in items], [r for _, r in items], model],
        )
        return {(r["kind"], r["ref"]): float(r["score"]) for r in rows}

    def neighbourhoods(
        self, model: str, message_ids: Sequence[int], *, before: int, after: int
    ) -> dict[int, builtins.list[MessageNeighbour]]:
        if not message_ids or before < 0 or after < 0:
            return {}
        found: dict[int, list[MessageNeighbour]] = {}
        for r in self.s._q(
            "SELECT m.id AS origin, n.seq - m.seq AS delta, n.id, e.vector::text AS vector "
            "FROM messages m JOIN messages n ON n.conversation_id = m.conversation_id "
            "AND n.seq BETWEEN m.seq - %s AND m.seq + %s "
            "JOIN embeddings e ON e.model = %s AND e.kind = 'message' "
            "AND e.ref = n.id::text AND e.chunk = 0 "
            "WHERE m.id = ANY(%s) AND e.vector IS NOT NULL ORDER BY m.id, n.seq",
            [before, after, model, sorted(set(message_ids))],
        ):
            found.setdefault(int(r["origin"]), []).append(
                MessageNeighbour(int(r["delta"]), int(r["id"]), from_pg_literal(r["vector"]))
            )
        return found
