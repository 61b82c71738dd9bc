-- The active context's counts per conversation (items, tokens, summaries and
-- the tokens of raw messages: what assembly reports as dropped), kept by the
-- context writes themselves, so assembling reads only the newest items
-- whatever the length of the conversation. Triggers rather than the
-- repository's code: every write to context_items counts, including ones
-- added later. A row with every count at 0 is harmless and goes with its
-- conversation.
CREATE TABLE context_totals (
    conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
    items           INTEGER NOT NULL,
    tokens          INTEGER NOT NULL,
    summaries       INTEGER NOT NULL,
    message_tokens  INTEGER NOT NULL
);
INSERT INTO context_totals (conversation_id, items, tokens, summaries, message_tokens)
SELECT conversation_id, count(*), sum(token_count), sum(item_type = 'summary'),
       sum(CASE WHEN item_type = 'message' THEN token_count ELSE 0 END)
FROM context_items GROUP BY conversation_id;
CREATE TRIGGER context_items_counted AFTER INSERT ON context_items BEGIN
    INSERT INTO context_totals (conversation_id, items, tokens, summaries, message_tokens)
    VALUES (new.conversation_id, 1, new.token_count, new.item_type = 'summary',
            CASE WHEN new.item_type = 'message' THEN new.token_count ELSE 0 END)
    ON CONFLICT (conversation_id) DO UPDATE SET
        items = items + 1,
        tokens = tokens + excluded.tokens,
        summaries = summaries + excluded.summaries,
        message_tokens = message_tokens + excluded.message_tokens;
END;
CREATE TRIGGER context_items_uncounted AFTER DELETE ON context_items BEGIN
    UPDATE context_totals SET
        items = items - 1,
        tokens = tokens - old.token_count,
        summaries = summaries - (old.item_type = 'summary'),
        message_tokens = message_tokens
            - CASE WHEN old.item_type = 'message' THEN old.token_count ELSE 0 END
    WHERE conversation_id = old.conversation_id;
END;
-- Nothing updates a context row today; if something does, it counts as the
-- old row removed and the new one added (its conversation may change too).
CREATE TRIGGER context_items_recounted AFTER UPDATE ON context_items BEGIN
    UPDATE context_totals SET
        items = items - 1,
        tokens = tokens - old.token_count,
        summaries = summaries - (old.item_type = 'summary'),
        message_tokens = message_tokens
            - CASE WHEN old.item_type = 'message' THEN old.token_count ELSE 0 END
    WHERE conversation_id = old.conversation_id;
    INSERT INTO context_totals (conversation_id, items, tokens, summaries, message_tokens)
    VALUES (new.conversation_id, 1, new.token_count, new.item_type = 'summary',
            CASE WHEN new.item_type = 'message' THEN new.token_count ELSE 0 END)
    ON CONFLICT (conversation_id) DO UPDATE SET
        items = items + 1,
        tokens = tokens + excluded.tokens,
        summaries = summaries + excluded.summaries,
        message_tokens = message_tokens + excluded.message_tokens;
END;
