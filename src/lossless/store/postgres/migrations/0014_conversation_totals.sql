-- What each conversation holds, laid out as on SQLite (its migration 0014):
-- messages and their tokens, parts, raw lines, summaries and their tokens,
-- large files, kept by the writes themselves, so `lcm status` and the UI's
-- health page read one row per conversation instead of every message.
-- Inserts and deletes count through statement triggers over transition tables
-- (one aggregate per write, however many rows it touches: appends are
-- set-based and hold the conversation's lock). The counted columns are never
-- rewritten today (a redaction changes texts); if one is, a row trigger
-- limited to those columns counts the old row out and the new one in, so the
-- rewrites of texts (purge, gc) pay nothing.
CREATE TABLE lcm.conversation_totals (
    conversation_id bigint PRIMARY KEY REFERENCES lcm.conversations(id) ON DELETE CASCADE,
    messages        bigint NOT NULL DEFAULT 0,
    message_tokens  bigint NOT NULL DEFAULT 0,
    parts           bigint NOT NULL DEFAULT 0,
    native_records  bigint NOT NULL DEFAULT 0,
    summaries       bigint NOT NULL DEFAULT 0,
    summary_tokens  bigint NOT NULL DEFAULT 0,
    large_files     bigint NOT NULL DEFAULT 0
);
INSERT INTO lcm.conversation_totals (conversation_id, messages, message_tokens, parts,
                                     native_records, summaries, summary_tokens, large_files)
SELECT c.id, coalesce(m.n, 0), coalesce(m.tokens, 0), coalesce(p.n, 0), coalesce(r.n, 0),
       coalesce(s.n, 0), coalesce(s.tokens, 0), coalesce(f.n, 0)
FROM lcm.conversations c
LEFT JOIN (SELECT conversation_id, count(*) AS n, sum(token_count) AS tokens
           FROM lcm.messages GROUP BY conversation_id) m ON m.conversation_id = c.id
LEFT JOIN (SELECT m.conversation_id, count(*) AS n
           FROM lcm.message_parts p JOIN lcm.messages m ON m.id = p.message_id
           GROUP BY m.conversation_id) p ON p.conversation_id = c.id
LEFT JOIN (SELECT conversation_id, count(*) AS n
           FROM lcm.native_records GROUP BY conversation_id) r ON r.conversation_id = c.id
LEFT JOIN (SELECT conversation_id, count(*) AS n, sum(token_count) AS tokens
           FROM lcm.summaries GROUP BY conversation_id) s ON s.conversation_id = c.id
LEFT JOIN (SELECT conversation_id, count(*) AS n
           FROM lcm.large_files GROUP BY conversation_id) f ON f.conversation_id = c.id;

-- Statement triggers: TG_ARGV[0] is 1 for an insert (transition table of the
-- new rows) and -1 for a delete (of the old rows); both name it "changed".
CREATE FUNCTION lcm.conversation_totals_messages() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    direction bigint := TG_ARGV[0]::bigint;
BEGIN
    INSERT INTO lcm.conversation_totals AS t (conversation_id, messages, message_tokens)
    SELECT conversation_id, direction * count(*), direction * sum(token_count)
    FROM changed GROUP BY conversation_id
    ON CONFLICT (conversation_id) DO UPDATE SET
        messages = t.messages + excluded.messages,
        message_tokens = t.message_tokens + excluded.message_tokens;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER messages_counted AFTER INSERT ON lcm.messages
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.conversation_totals_messages('1');
CREATE TRIGGER messages_uncounted AFTER DELETE ON lcm.messages
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.conversation_totals_messages('-1');

-- A part names only its message: its conversation is the message's (still
-- there when a part is deleted: the foreign key keeps it until its parts go).
CREATE FUNCTION lcm.conversation_totals_parts() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    direction bigint := TG_ARGV[0]::bigint;
BEGIN
    INSERT INTO lcm.conversation_totals AS t (conversation_id, parts)
    SELECT m.conversation_id, direction * count(*)
    FROM changed p JOIN lcm.messages m ON m.id = p.message_id GROUP BY m.conversation_id
    ON CONFLICT (conversation_id) DO UPDATE SET parts = t.parts + excluded.parts;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER message_parts_counted AFTER INSERT ON lcm.message_parts
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.conversation_totals_parts('1');
CREATE TRIGGER message_parts_uncounted AFTER DELETE ON lcm.message_parts
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.conversation_totals_parts('-1');

CREATE FUNCTION lcm.conversation_totals_native_records() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    direction bigint := TG_ARGV[0]::bigint;
BEGIN
    INSERT INTO lcm.conversation_totals AS t (conversation_id, native_records)
    SELECT conversation_id, direction * count(*) FROM changed GROUP BY conversation_id
    ON CONFLICT (conversation_id) DO UPDATE SET
        native_records = t.native_records + excluded.native_records;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER native_records_counted AFTER INSERT ON lcm.native_records
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.conversation_totals_native_records('1');
CREATE TRIGGER native_records_uncounted AFTER DELETE ON lcm.native_records
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.conversation_totals_native_records('-1');

CREATE FUNCTION lcm.conversation_totals_summaries() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    direction bigint := TG_ARGV[0]::bigint;
BEGIN
    INSERT INTO lcm.conversation_totals AS t (conversation_id, summaries, summary_tokens)
    SELECT conversation_id, direction * count(*), direction * sum(token_count)
    FROM changed GROUP BY conversation_id
    ON CONFLICT (conversation_id) DO UPDATE SET
        summaries = t.summaries + excluded.summaries,
        summary_tokens = t.summary_tokens + excluded.summary_tokens;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER summaries_counted AFTER INSERT ON lcm.summaries
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.conversation_totals_summaries('1');
CREATE TRIGGER summaries_uncounted AFTER DELETE ON lcm.summaries
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.conversation_totals_summaries('-1');

CREATE FUNCTION lcm.conversation_totals_large_files() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    direction bigint := TG_ARGV[0]::bigint;
BEGIN
    INSERT INTO lcm.conversation_totals AS t (conversation_id, large_files)
    SELECT conversation_id, direction * count(*) FROM changed GROUP BY conversation_id
    ON CONFLICT (conversation_id) DO UPDATE SET large_files = t.large_files + excluded.large_files;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER large_files_counted AFTER INSERT ON lcm.large_files
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.conversation_totals_large_files('1');
CREATE TRIGGER large_files_uncounted AFTER DELETE ON lcm.large_files
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION lcm.conversation_totals_large_files('-1');

-- A counted column rewritten: the old row counted out, the new one in (row
-- triggers limited to those columns: text rewrites never fire them).
CREATE FUNCTION lcm.conversation_totals_add(
    conversation bigint, d_messages bigint, d_message_tokens bigint, d_parts bigint,
    d_native_records bigint, d_summaries bigint, d_summary_tokens bigint, d_large_files bigint
) RETURNS void LANGUAGE sql AS $fn$
    INSERT INTO lcm.conversation_totals AS t
    VALUES (conversation, d_messages, d_message_tokens, d_parts, d_native_records, d_summaries,
            d_summary_tokens, d_large_files)
    ON CONFLICT (conversation_id) DO UPDATE SET
        messages = t.messages + excluded.messages,
        message_tokens = t.message_tokens + excluded.message_tokens,
        parts = t.parts + excluded.parts,
        native_records = t.native_records + excluded.native_records,
        summaries = t.summaries + excluded.summaries,
        summary_tokens = t.summary_tokens + excluded.summary_tokens,
        large_files = t.large_files + excluded.large_files;
$fn$;
CREATE FUNCTION lcm.conversation_totals_moved() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_TABLE_NAME = 'messages' THEN
        PERFORM lcm.conversation_totals_add(OLD.conversation_id, -1, -OLD.token_count, 0, 0, 0, 0, 0);
        PERFORM lcm.conversation_totals_add(NEW.conversation_id, 1, NEW.token_count, 0, 0, 0, 0, 0);
    ELSIF TG_TABLE_NAME = 'message_parts' THEN
        PERFORM lcm.conversation_totals_add(m.conversation_id, 0, 0, -1, 0, 0, 0, 0)
        FROM lcm.messages m WHERE m.id = OLD.message_id;
        PERFORM lcm.conversation_totals_add(m.conversation_id, 0, 0, 1, 0, 0, 0, 0)
        FROM lcm.messages m WHERE m.id = NEW.message_id;
    ELSIF TG_TABLE_NAME = 'native_records' THEN
        PERFORM lcm.conversation_totals_add(OLD.conversation_id, 0, 0, 0, -1, 0, 0, 0);
        PERFORM lcm.conversation_totals_add(NEW.conversation_id, 0, 0, 0, 1, 0, 0, 0);
    ELSIF TG_TABLE_NAME = 'summaries' THEN
        PERFORM lcm.conversation_totals_add(OLD.conversation_id, 0, 0, 0, 0, -1, -OLD.token_count, 0);
        PERFORM lcm.conversation_totals_add(NEW.conversation_id, 0, 0, 0, 0, 1, NEW.token_count, 0);
    ELSIF TG_TABLE_NAME = 'large_files' THEN
        PERFORM lcm.conversation_totals_add(OLD.conversation_id, 0, 0, 0, 0, 0, 0, -1);
        PERFORM lcm.conversation_totals_add(NEW.conversation_id, 0, 0, 0, 0, 0, 0, 1);
    END IF;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER messages_recounted AFTER UPDATE OF conversation_id, token_count ON lcm.messages
    FOR EACH ROW WHEN (OLD.conversation_id IS DISTINCT FROM NEW.conversation_id
                       OR OLD.token_count IS DISTINCT FROM NEW.token_count)
    EXECUTE FUNCTION lcm.conversation_totals_moved();
CREATE TRIGGER message_parts_recounted AFTER UPDATE OF message_id ON lcm.message_parts
    FOR EACH ROW WHEN (OLD.message_id IS DISTINCT FROM NEW.message_id)
    EXECUTE FUNCTION lcm.conversation_totals_moved();
CREATE TRIGGER native_records_recounted AFTER UPDATE OF conversation_id ON lcm.native_records
    FOR EACH ROW WHEN (OLD.conversation_id IS DISTINCT FROM NEW.conversation_id)
    EXECUTE FUNCTION lcm.conversation_totals_moved();
CREATE TRIGGER summaries_recounted AFTER UPDATE OF conversation_id, token_count ON lcm.summaries
    FOR EACH ROW WHEN (OLD.conversation_id IS DISTINCT FROM NEW.conversation_id
                       OR OLD.token_count IS DISTINCT FROM NEW.token_count)
    EXECUTE FUNCTION lcm.conversation_totals_moved();
CREATE TRIGGER large_files_recounted AFTER UPDATE OF conversation_id ON lcm.large_files
    FOR EACH ROW WHEN (OLD.conversation_id IS DISTINCT FROM NEW.conversation_id)
    EXECUTE FUNCTION lcm.conversation_totals_moved();
