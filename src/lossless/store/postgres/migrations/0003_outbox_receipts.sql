-- Receipts of events delivered from machines' local outboxes (events captured
-- while the server was unreachable). A receipt commits in the same
-- transaction as the event's effect, so an event delivered twice (its local
-- copy survived a crash after the commit) is recognised and not applied again.

CREATE TABLE lcm.outbox_receipts (
    origin       text NOT NULL,
    event_id     text NOT NULL,
    kind         text NOT NULL,
    captured_at  text COLLATE "C" NOT NULL,
    delivered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (origin, event_id)
);
