-- A work queue for workers on many machines: jobs are claimed with
-- FOR UPDATE SKIP LOCKED (claimers never wait on each other's rows), each
-- claim has an expiry judged by the database clock and a fencing token from
-- the same sequence as leases, so a worker that died mid-job has its job
-- retried, and a late write from a stale claim is rejected.

CREATE TABLE lcm.jobs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind             text NOT NULL CHECK (kind <> ''),
    conversation_id  bigint REFERENCES lcm.conversations(id),
    payload          json NOT NULL DEFAULT '{}',
    state            text NOT NULL DEFAULT 'ready'
                     CHECK (state IN ('ready', 'running', 'done', 'failed')),
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts     integer NOT NULL DEFAULT 5 CHECK (max_attempts > 0),
    run_after        timestamptz NOT NULL DEFAULT clock_timestamp(),
    claimed_by       text,
    fence            bigint,
    claim_expires_at timestamptz,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at      timestamptz,
    CHECK (state <> 'running' OR (claimed_by IS NOT NULL AND claim_expires_at IS NOT NULL))
);

-- At most one waiting job per (kind, conversation): asking again while one
-- waits adds nothing. A job already running does not count, so work that
-- arrives during a run is done by a later one.
CREATE UNIQUE INDEX jobs_one_ready ON lcm.jobs (kind, conversation_id) WHERE state = 'ready';
CREATE INDEX jobs_ready ON lcm.jobs (run_after, id) WHERE state = 'ready';
CREATE INDEX jobs_running ON lcm.jobs (claim_expires_at) WHERE state = 'running';
CREATE INDEX jobs_running_conversation ON lcm.jobs (kind, conversation_id)
    WHERE state = 'running';
