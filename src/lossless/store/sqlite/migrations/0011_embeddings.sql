-- Embedding vectors for semantic search (lossless.embeddings), computed by the
-- background worker. One row per (model, item, chunk); chunk 0 of an item with
-- no text has a NULL vector, so the item is not offered again. Vectors are
-- int8 (384 bytes): a unit vector scaled by 127 over its largest component;
-- cosine is recomputed from them exactly (lossless.store.vector_codec).
CREATE TABLE embeddings (
    id              INTEGER PRIMARY KEY,
    model           TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('message', 'summary', 'memory', 'file')),
    ref             TEXT NOT NULL,
    chunk           INTEGER NOT NULL CHECK (chunk >= 0),
    conversation_id INTEGER REFERENCES conversations(id),
    vector          BLOB,
    UNIQUE (model, kind, ref, chunk)
);
-- Bumped on every delete, so a process caching the vectors knows to reload.
CREATE TABLE embedding_state (deletions INTEGER NOT NULL);
INSERT INTO embedding_state (deletions) VALUES (0);
-- Items embedded per model and kind (their chunk 0), so the backlog is known
-- without counting a million rows on every search.
CREATE TABLE embedding_counts (
    model TEXT NOT NULL,
    kind  TEXT NOT NULL,
    items INTEGER NOT NULL,
    PRIMARY KEY (model, kind)
);
CREATE TRIGGER embeddings_counted AFTER INSERT ON embeddings WHEN new.chunk = 0 BEGIN
    INSERT INTO embedding_counts (model, kind, items) VALUES (new.model, new.kind, 1)
    ON CONFLICT (model, kind) DO UPDATE SET items = items + 1;
END;
CREATE TRIGGER embeddings_deleted AFTER DELETE ON embeddings BEGIN
    UPDATE embedding_state SET deletions = deletions + 1;
    UPDATE embedding_counts SET items = items - 1
    WHERE old.chunk = 0 AND model = old.model AND kind = old.kind;
END;
-- A rewritten text (lcm sensitive purge) drops the vectors of the old one.
CREATE TRIGGER embeddings_message_rewritten AFTER UPDATE OF content ON messages
WHEN old.content IS NOT new.content BEGIN
    DELETE FROM embeddings WHERE kind = 'message' AND ref = CAST(old.id AS TEXT);
END;
CREATE TRIGGER embeddings_summary_rewritten AFTER UPDATE OF content ON summaries
WHEN old.content IS NOT new.content BEGIN
    DELETE FROM embeddings WHERE kind = 'summary' AND ref = old.id;
END;
CREATE TRIGGER embeddings_memory_rewritten AFTER UPDATE OF text, tags ON memories
WHEN old.text IS NOT new.text OR old.tags IS NOT new.tags BEGIN
    DELETE FROM embeddings WHERE kind = 'memory' AND ref = old.id;
END;
CREATE TRIGGER embeddings_memory_deleted AFTER DELETE ON memories BEGIN
    DELETE FROM embeddings WHERE kind = 'memory' AND ref = old.id;
END;
CREATE TRIGGER embeddings_file_rewritten AFTER UPDATE OF sha256, exploration_summary ON large_files
WHEN old.sha256 IS NOT new.sha256 OR old.exploration_summary IS NOT new.exploration_summary BEGIN
    DELETE FROM embeddings WHERE kind = 'file' AND ref = old.id;
END;
