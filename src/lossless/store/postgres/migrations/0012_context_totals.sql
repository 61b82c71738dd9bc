-- The active context's counts per conversation, laid out as on SQLite (its
-- migration 0012): kept by the context writes themselves, so assembling reads
-- only the newest items whatever the length of the conversation. Statement
-- triggers over transition tables: one aggregate per write, however many rows
-- it touches (context writes are set-based and hold the conversation's lock).
CREATE TABLE lcm.context_totals (
    conversation_id bigint PRIMARY KEY REFERENCES lcm.conversations(id) ON DELETE CASCADE,
    items           bigint NOT NULL,
    tokens          bigint NOT NULL,
    summaries       bigint NOT NULL,
    message_tokens  bigint NOT NULL
);
INSERT INTO lcm.context_totals (conversation_id, items, tokens, summaries, message_tokens)
SELECT conversation_id, count(*), sum(token_count), count(*) FILTER (WHERE item_type = 'summary'),
       coalesce(sum(token_count) FILTER (WHERE item_type = 'message'), 0)
FROM lcm.context_items GROUP BY conversation_id;

CREATE FUNCTION lcm.context_totals_add() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO lcm.context_totals AS t (conversation_id, items, tokens, summaries, message_tokens)
    SELECT conversation_id, count(*), sum(token_count),
           count(*) FILTER (WHERE item_type = 'summary'),
           coalesce(sum(token_count) FILTER (WHERE item_type = 'message'), 0)
    FROM added GROUP BY conversation_id
    ON CONFLICT (conversation_id) DO UPDATE SET
        items = t.items + excluded.items,
        tokens = t.tokens + excluded.tokens,
        summaries = t.summaries + excluded.summaries,
        message_tokens = t.message_tokens + excluded.message_tokens;
    RETURN NULL;
END
$fn$;

CREATE FUNCTION lcm.context_totals_remove() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    UPDATE lcm.context_totals t SET
        items = t.items - r.items,
        tokens = t.tokens - r.tokens,
        summaries = t.summaries - r.summaries,
        message_tokens = t.message_tokens - r.message_tokens
    FROM (
        SELECT conversation_id, count(*) AS items, sum(token_count) AS tokens,
               count(*) FILTER (WHERE item_type = 'summary') AS summaries,
               coalesce(sum(token_count) FILTER (WHERE item_type = 'message'), 0)
                   AS message_tokens
        FROM removed GROUP BY conversation_id
    ) r
    WHERE t.conversation_id = r.conversation_id;
    RETURN NULL;
END
$fn$;

CREATE TRIGGER context_items_counted AFTER INSERT ON lcm.context_items
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.context_totals_add();
CREATE TRIGGER context_items_uncounted AFTER DELETE ON lcm.context_items
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.context_totals_remove();
-- Nothing updates a context row today; if something does, it counts as the
-- old rows removed and the new ones added (their conversation may change too).
CREATE TRIGGER context_items_recounted_out AFTER UPDATE ON lcm.context_items
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.context_totals_remove();
CREATE TRIGGER context_items_recounted_in AFTER UPDATE ON lcm.context_items
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.context_totals_add();
