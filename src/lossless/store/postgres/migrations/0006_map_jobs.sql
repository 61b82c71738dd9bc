-- Map operator jobs, as in the SQLite backend's 0006_map_jobs. Leases are
-- epoch seconds by the server's clock, so workers on several machines agree
-- on when one expired; claims use FOR UPDATE SKIP LOCKED.

CREATE TABLE lcm.map_jobs (
    id              text COLLATE "C" PRIMARY KEY,
    kind            text NOT NULL CHECK (kind IN ('llm_map', 'agentic_map')),
    status          text NOT NULL CHECK (status IN ('loading', 'running', 'done', 'cancelled')),
    project         text NOT NULL,
    spec            json NOT NULL,
    conversation_id bigint REFERENCES lcm.conversations(id),
    loaded_items    bigint NOT NULL DEFAULT 0,
    created_at      text COLLATE "C" NOT NULL,
    updated_at      text COLLATE "C" NOT NULL
);
CREATE INDEX map_jobs_created ON lcm.map_jobs (created_at);

CREATE TABLE lcm.map_items (
    job_id           text COLLATE "C" NOT NULL REFERENCES lcm.map_jobs(id),
    idx              bigint NOT NULL CHECK (idx >= 0),
    line_no          bigint NOT NULL,
    input            text NOT NULL,
    input_problem    text,
    status           text NOT NULL CHECK (status IN ('pending', 'running', 'ok', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    result           text,
    error            text,
    calls            integer NOT NULL DEFAULT 0,
    input_tokens     bigint NOT NULL DEFAULT 0,
    output_tokens    bigint NOT NULL DEFAULT 0,
    message_id       bigint REFERENCES lcm.messages(id),
    lease_owner      text,
    lease_token      bigint NOT NULL DEFAULT 0,
    lease_expires_at float8 NOT NULL DEFAULT 0,
    updated_at       text COLLATE "C" NOT NULL,
    PRIMARY KEY (job_id, idx)
);
CREATE INDEX map_items_open ON lcm.map_items (job_id, status, idx);
