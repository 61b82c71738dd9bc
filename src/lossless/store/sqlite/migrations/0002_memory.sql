-- Durable (promoted) memory: short facts kept per project, with usage
-- feedback for recall. ``text_hash`` is the SHA-256 of the normalized text
-- (see contract.normalize_memory_text) and makes near-duplicates one row.
-- ``tags`` is a JSON array (exact order); ``tags_text`` is the same tags
-- space-joined, only so the full-text index can see them.

CREATE TABLE memories (
    seq                    INTEGER PRIMARY KEY,
    id                     TEXT NOT NULL UNIQUE,
    project                TEXT NOT NULL,
    text                   TEXT NOT NULL,
    text_hash              TEXT NOT NULL,
    tags                   TEXT NOT NULL DEFAULT '[]',
    tags_text              TEXT NOT NULL DEFAULT '',
    confidence             REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    source_summary_id      TEXT REFERENCES summaries(id),
    source_conversation_id INTEGER REFERENCES conversations(id),
    created_at             TEXT NOT NULL,
    last_surfaced_at       TEXT,
    last_used_at           TEXT,
    surfaced_count         INTEGER NOT NULL DEFAULT 0 CHECK (surfaced_count >= 0),
    used_count             INTEGER NOT NULL DEFAULT 0 CHECK (used_count >= 0),
    archived               INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
    UNIQUE (project, text_hash)
);
CREATE INDEX memories_project ON memories(project, archived, created_at);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    text, tags_text, content='memories', content_rowid='seq',
    tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, text, tags_text) VALUES (new.seq, new.text, new.tags_text);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, tags_text)
        VALUES ('delete', old.seq, old.text, old.tags_text);
END;
CREATE TRIGGER memories_au AFTER UPDATE OF text, tags_text ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, tags_text)
        VALUES ('delete', old.seq, old.text, old.tags_text);
    INSERT INTO memories_fts(rowid, text, tags_text) VALUES (new.seq, new.text, new.tags_text);
END;
