-- Durable (promoted) memory, as in the SQLite backend's 0002_memory: short
-- facts kept per project with usage feedback. text_hash (SHA-256 of the
-- normalized text, see contract.normalize_memory_text) makes near-duplicates
-- one row per project. tags is the exact JSON array; tags_text the same tags
-- space-joined for the index, where a tag weighs twice a word of the text
-- (SQLite: bm25 weights 1.0 and 2.0).

CREATE TABLE lcm.memories (
    id                     text COLLATE "C" PRIMARY KEY,
    project                text NOT NULL,
    text                   text NOT NULL,
    text_hash              text NOT NULL,
    tags                   json NOT NULL DEFAULT '[]',
    tags_text              text NOT NULL DEFAULT '',
    confidence             float8 NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    source_summary_id      text COLLATE "C" REFERENCES lcm.summaries(id),
    source_conversation_id bigint REFERENCES lcm.conversations(id),
    created_at             text COLLATE "C" NOT NULL,
    last_surfaced_at       text COLLATE "C",
    last_used_at           text COLLATE "C",
    surfaced_count         bigint NOT NULL DEFAULT 0 CHECK (surfaced_count >= 0),
    used_count             bigint NOT NULL DEFAULT 0 CHECK (used_count >= 0),
    archived               boolean NOT NULL DEFAULT false,
    search_document        tsvector GENERATED ALWAYS AS (
        setweight(lcm.search_document(text), 'B') || setweight(lcm.search_document(tags_text), 'A')
    ) STORED,
    UNIQUE (project, text_hash)
);
CREATE INDEX memories_project ON lcm.memories (project, archived, created_at, id);
CREATE INDEX memories_search ON lcm.memories USING gin (search_document);
CREATE INDEX memories_text_trgm ON lcm.memories USING gin (text gin_trgm_ops);
