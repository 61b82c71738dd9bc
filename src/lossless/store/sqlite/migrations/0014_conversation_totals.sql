-- What each conversation holds (messages and their tokens, parts, raw lines,
-- summaries and their tokens, large files), kept as the history is written,
-- so `lcm status` and the UI's health page read one row per conversation
-- instead of every message (summing message tokens read the whole table:
-- ~50 ms at 100,000 messages, seconds at a million).
--
-- Messages, parts and raw lines are added by the append itself, one
-- statement per batch (``Messages._count`` in store/sqlite/history.py, the
-- only place that inserts them): SQLite has no statement triggers, and a row
-- trigger per message, part and raw line made appends ~20% slower (measured
-- on 6,000 messages of two parts and a raw line each). Everything rarer is
-- counted by triggers, as context_totals (0012) is: summaries and large
-- files added, and any row deleted (`lcm gc` dropping raw lines) or moved to
-- another conversation. PostgreSQL counts the same with statement triggers.
CREATE TABLE conversation_totals (
    conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
    messages        INTEGER NOT NULL DEFAULT 0,
    message_tokens  INTEGER NOT NULL DEFAULT 0,
    parts           INTEGER NOT NULL DEFAULT 0,
    native_records  INTEGER NOT NULL DEFAULT 0,
    summaries       INTEGER NOT NULL DEFAULT 0,
    summary_tokens  INTEGER NOT NULL DEFAULT 0,
    large_files     INTEGER NOT NULL DEFAULT 0
);
INSERT INTO conversation_totals (conversation_id, messages, message_tokens, parts,
                                 native_records, summaries, summary_tokens, large_files)
SELECT c.id,
       (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id),
       (SELECT coalesce(sum(token_count), 0) FROM messages m WHERE m.conversation_id = c.id),
       (SELECT count(*) FROM message_parts p JOIN messages m ON m.id = p.message_id
        WHERE m.conversation_id = c.id),
       (SELECT count(*) FROM native_records r WHERE r.conversation_id = c.id),
       (SELECT count(*) FROM summaries s WHERE s.conversation_id = c.id),
       (SELECT coalesce(sum(token_count), 0) FROM summaries s WHERE s.conversation_id = c.id),
       (SELECT count(*) FROM large_files f WHERE f.conversation_id = c.id)
FROM conversations c;

CREATE TRIGGER messages_uncounted AFTER DELETE ON messages BEGIN
    UPDATE conversation_totals
    SET messages = messages - 1, message_tokens = message_tokens - old.token_count
    WHERE conversation_id = old.conversation_id;
END;
-- Rewrites (redaction) change a message's text, never these columns; if
-- something does, it counts as the old row removed and the new one added.
CREATE TRIGGER messages_recounted AFTER UPDATE OF conversation_id, token_count ON messages
WHEN old.conversation_id IS NOT new.conversation_id OR old.token_count IS NOT new.token_count
BEGIN
    UPDATE conversation_totals
    SET messages = messages - 1, message_tokens = message_tokens - old.token_count
    WHERE conversation_id = old.conversation_id;
    INSERT INTO conversation_totals (conversation_id, messages, message_tokens)
    VALUES (new.conversation_id, 1, new.token_count)
    ON CONFLICT (conversation_id) DO UPDATE SET
        messages = messages + 1, message_tokens = message_tokens + excluded.message_tokens;
END;

CREATE TRIGGER message_parts_uncounted AFTER DELETE ON message_parts BEGIN
    UPDATE conversation_totals SET parts = parts - 1
    WHERE conversation_id = (SELECT conversation_id FROM messages WHERE id = old.message_id);
END;
CREATE TRIGGER message_parts_recounted AFTER UPDATE OF message_id ON message_parts
WHEN old.message_id IS NOT new.message_id BEGIN
    UPDATE conversation_totals SET parts = parts - 1
    WHERE conversation_id = (SELECT conversation_id FROM messages WHERE id = old.message_id);
    UPDATE conversation_totals SET parts = parts + 1
    WHERE conversation_id = (SELECT conversation_id FROM messages WHERE id = new.message_id);
END;

CREATE TRIGGER native_records_uncounted AFTER DELETE ON native_records BEGIN
    UPDATE conversation_totals SET native_records = native_records - 1
    WHERE conversation_id = old.conversation_id;
END;
CREATE TRIGGER native_records_recounted AFTER UPDATE OF conversation_id ON native_records
WHEN old.conversation_id IS NOT new.conversation_id BEGIN
    UPDATE conversation_totals SET native_records = native_records - 1
    WHERE conversation_id = old.conversation_id;
    INSERT INTO conversation_totals (conversation_id, native_records)
    VALUES (new.conversation_id, 1)
    ON CONFLICT (conversation_id) DO UPDATE SET native_records = native_records + 1;
END;

CREATE TRIGGER summaries_counted AFTER INSERT ON summaries BEGIN
    INSERT INTO conversation_totals (conversation_id, summaries, summary_tokens)
    VALUES (new.conversation_id, 1, new.token_count)
    ON CONFLICT (conversation_id) DO UPDATE SET
        summaries = summaries + 1, summary_tokens = summary_tokens + excluded.summary_tokens;
END;
CREATE TRIGGER summaries_uncounted AFTER DELETE ON summaries BEGIN
    UPDATE conversation_totals
    SET summaries = summaries - 1, summary_tokens = summary_tokens - old.token_count
    WHERE conversation_id = old.conversation_id;
END;
CREATE TRIGGER summaries_recounted AFTER UPDATE OF conversation_id, token_count ON summaries
WHEN old.conversation_id IS NOT new.conversation_id OR old.token_count IS NOT new.token_count
BEGIN
    UPDATE conversation_totals
    SET summaries = summaries - 1, summary_tokens = summary_tokens - old.token_count
    WHERE conversation_id = old.conversation_id;
    INSERT INTO conversation_totals (conversation_id, summaries, summary_tokens)
    VALUES (new.conversation_id, 1, new.token_count)
    ON CONFLICT (conversation_id) DO UPDATE SET
        summaries = summaries + 1, summary_tokens = summary_tokens + excluded.summary_tokens;
END;

CREATE TRIGGER large_files_counted AFTER INSERT ON large_files BEGIN
    INSERT INTO conversation_totals (conversation_id, large_files)
    VALUES (new.conversation_id, 1)
    ON CONFLICT (conversation_id) DO UPDATE SET large_files = large_files + 1;
END;
CREATE TRIGGER large_files_uncounted AFTER DELETE ON large_files BEGIN
    UPDATE conversation_totals SET large_files = large_files - 1
    WHERE conversation_id = old.conversation_id;
END;
CREATE TRIGGER large_files_recounted AFTER UPDATE OF conversation_id ON large_files
WHEN old.conversation_id IS NOT new.conversation_id BEGIN
    UPDATE conversation_totals SET large_files = large_files - 1
    WHERE conversation_id = old.conversation_id;
    INSERT INTO conversation_totals (conversation_id, large_files)
    VALUES (new.conversation_id, 1)
    ON CONFLICT (conversation_id) DO UPDATE SET large_files = large_files + 1;
END;
