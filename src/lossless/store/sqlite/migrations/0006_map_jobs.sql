-- Map operator jobs (lcm map / lcm agentic-map): one row per job, one per input
-- item. An item is claimed with a lease (lease_expires_at, epoch seconds) and a
-- token that grows with every claim; only the newest claim may record the
-- outcome, so each item ends with exactly one. input_problem marks an input
-- line that could not be used (it fails at once and is never retried).

CREATE TABLE map_jobs (
    id              TEXT PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('llm_map', 'agentic_map')),
    status          TEXT NOT NULL CHECK (status IN ('loading', 'running', 'done', 'cancelled')),
    project         TEXT NOT NULL,
    spec            TEXT NOT NULL,
    conversation_id INTEGER REFERENCES conversations(id),
    loaded_items    INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX map_jobs_created ON map_jobs(created_at);

CREATE TABLE map_items (
    job_id           TEXT NOT NULL REFERENCES map_jobs(id),
    idx              INTEGER NOT NULL CHECK (idx >= 0),
    line_no          INTEGER NOT NULL,
    input            TEXT NOT NULL,
    input_problem    TEXT,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'running', 'ok', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    result           TEXT,
    error            TEXT,
    calls            INTEGER NOT NULL DEFAULT 0,
    input_tokens     INTEGER NOT NULL DEFAULT 0,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    message_id       INTEGER REFERENCES messages(id),
    lease_owner      TEXT,
    lease_token      INTEGER NOT NULL DEFAULT 0,
    lease_expires_at REAL NOT NULL DEFAULT 0,
    updated_at       TEXT NOT NULL,
    PRIMARY KEY (job_id, idx)
) WITHOUT ROWID;
CREATE INDEX map_items_open ON map_items(job_id, status, idx);
