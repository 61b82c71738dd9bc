-- Initial schema: conversations, immutable messages with parts and native
-- provenance, the summary DAG, ordered context items, large files, import
-- bookkeeping (quarantine, cursors) and per-conversation leases.

CREATE TABLE conversations (
    id          INTEGER PRIMARY KEY,
    project     TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    client      TEXT NOT NULL,
    title       TEXT,
    parent_id   INTEGER REFERENCES conversations(id),
    metadata    TEXT NOT NULL DEFAULT '{}',
    created_at  TEXT NOT NULL,
    UNIQUE (project, client, session_id)
);
CREATE INDEX conversations_session ON conversations(session_id);

CREATE TABLE messages (
    id              INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    seq             INTEGER NOT NULL CHECK (seq >= 0),
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content         TEXT NOT NULL,
    token_count     INTEGER NOT NULL CHECK (token_count >= 0),
    created_at      TEXT NOT NULL,
    ingest_key      TEXT,
    metadata        TEXT,
    UNIQUE (conversation_id, seq),
    UNIQUE (conversation_id, ingest_key)
);
CREATE INDEX messages_created ON messages(created_at);

CREATE TABLE message_parts (
    message_id   INTEGER NOT NULL REFERENCES messages(id),
    ordinal      INTEGER NOT NULL CHECK (ordinal >= 0),
    kind         TEXT NOT NULL,
    text         TEXT,
    tool_name    TEXT,
    tool_call_id TEXT,
    metadata     TEXT,
    PRIMARY KEY (message_id, ordinal)
) WITHOUT ROWID;
CREATE INDEX message_parts_tool_call ON message_parts(tool_call_id) WHERE tool_call_id IS NOT NULL;

CREATE TABLE native_records (
    id              INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    message_id      INTEGER REFERENCES messages(id),
    native_key      TEXT NOT NULL,
    record_type     TEXT NOT NULL,
    raw             TEXT NOT NULL,
    source_path     TEXT,
    line_no         INTEGER,
    byte_offset     INTEGER,
    UNIQUE (conversation_id, native_key)
);
CREATE INDEX native_records_message ON native_records(message_id) WHERE message_id IS NOT NULL;

CREATE TABLE summaries (
    id                 TEXT PRIMARY KEY,
    conversation_id    INTEGER NOT NULL REFERENCES conversations(id),
    kind               TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')),
    depth              INTEGER NOT NULL CHECK (depth >= 0),
    content            TEXT NOT NULL,
    token_count        INTEGER NOT NULL,
    earliest_at        TEXT,
    latest_at          TEXT,
    descendant_count   INTEGER NOT NULL DEFAULT 0,
    source_token_count INTEGER NOT NULL DEFAULT 0,
    file_ids           TEXT NOT NULL DEFAULT '[]',
    metadata           TEXT,
    created_at         TEXT NOT NULL
);
CREATE INDEX summaries_conversation ON summaries(conversation_id, depth);

CREATE TABLE summary_messages (
    summary_id TEXT NOT NULL REFERENCES summaries(id),
    ordinal    INTEGER NOT NULL,
    message_id INTEGER NOT NULL REFERENCES messages(id),
    PRIMARY KEY (summary_id, ordinal)
) WITHOUT ROWID;
CREATE INDEX summary_messages_message ON summary_messages(message_id);

CREATE TABLE summary_parents (
    summary_id TEXT NOT NULL REFERENCES summaries(id),
    ordinal    INTEGER NOT NULL,
    parent_id  TEXT NOT NULL REFERENCES summaries(id),
    PRIMARY KEY (summary_id, ordinal)
) WITHOUT ROWID;
CREATE INDEX summary_parents_parent ON summary_parents(parent_id);

CREATE TABLE context_items (
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    ordinal         INTEGER NOT NULL,
    item_type       TEXT NOT NULL CHECK (item_type IN ('message', 'summary')),
    message_id      INTEGER REFERENCES messages(id),
    summary_id      TEXT REFERENCES summaries(id),
    token_count     INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, ordinal),
    CHECK ((item_type = 'message') = (message_id IS NOT NULL AND summary_id IS NULL)),
    CHECK ((item_type = 'summary') = (summary_id IS NOT NULL AND message_id IS NULL))
) WITHOUT ROWID;

CREATE TABLE large_files (
    id                  TEXT PRIMARY KEY,
    conversation_id     INTEGER NOT NULL REFERENCES conversations(id),
    message_id          INTEGER REFERENCES messages(id),
    path                TEXT NOT NULL,
    byte_size           INTEGER NOT NULL,
    token_count         INTEGER NOT NULL,
    sha256              TEXT NOT NULL,
    media_type          TEXT NOT NULL,
    exploration_summary TEXT NOT NULL,
    original_name       TEXT,
    created_at          TEXT NOT NULL
);
CREATE INDEX large_files_conversation ON large_files(conversation_id);

CREATE TABLE quarantine (
    id          INTEGER PRIMARY KEY,
    source_path TEXT NOT NULL,
    line_no     INTEGER NOT NULL,
    byte_offset INTEGER NOT NULL,
    error       TEXT NOT NULL,
    raw         BLOB NOT NULL,
    raw_sha256  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    UNIQUE (source_path, line_no, raw_sha256)
);

CREATE TABLE source_cursors (
    source_path     TEXT PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    byte_offset     INTEGER NOT NULL,
    line_no         INTEGER NOT NULL,
    anchor_key      TEXT,
    anchor_sha256   TEXT,
    updated_at      TEXT NOT NULL
);

CREATE TABLE leases (
    conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id),
    owner           TEXT,
    fence           INTEGER NOT NULL,
    expires_at      REAL NOT NULL
);

-- Full-text search. Word index (unicode61, diacritics folded) for ranked
-- search; trigram index for substring, regex pre-filtering and CJK.
CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, content='messages', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE messages_trigram USING fts5(
    content, content='messages', content_rowid='id', tokenize='trigram', detail='none'
);
CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_trigram(messages_trigram, rowid, content) VALUES ('delete', old.id, old.content);
END;

CREATE TABLE summary_rowids (
    rowid      INTEGER PRIMARY KEY,
    summary_id TEXT NOT NULL UNIQUE REFERENCES summaries(id)
);
CREATE VIRTUAL TABLE summaries_fts USING fts5(
    content, tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE summaries_trigram USING fts5(
    content, tokenize='trigram', detail='none'
);
CREATE TRIGGER summaries_ai AFTER INSERT ON summaries BEGIN
    INSERT INTO summary_rowids(summary_id) VALUES (new.id);
    INSERT INTO summaries_fts(rowid, content)
        SELECT rowid, new.content FROM summary_rowids WHERE summary_id = new.id;
    INSERT INTO summaries_trigram(rowid, content)
        SELECT rowid, new.content FROM summary_rowids WHERE summary_id = new.id;
END;
