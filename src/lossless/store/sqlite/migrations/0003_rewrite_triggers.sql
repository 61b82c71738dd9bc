-- Stored text can be rewritten in place (lcm sensitive purge redacts a
-- secret found after the fact), so the full-text indexes must follow an
-- UPDATE of messages.content or summaries.content, or the old words (the
-- secret) would stay findable in the index.
--
-- messages_fts/messages_trigram are external-content tables: they are told
-- to forget the old row ('delete' with the old values) and then given the
-- new one. summaries_fts/summaries_trigram keep their own copy of the text
-- (they are keyed by summary_rowids, not by the summaries table), so there
-- the old row is an ordinary DELETE.

CREATE TRIGGER messages_au AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_trigram(messages_trigram, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER summaries_au AFTER UPDATE OF content ON summaries BEGIN
    DELETE FROM summaries_fts
        WHERE rowid = (SELECT rowid FROM summary_rowids WHERE summary_id = new.id);
    DELETE FROM summaries_trigram
        WHERE rowid = (SELECT rowid FROM summary_rowids WHERE summary_id = new.id);
    INSERT INTO summaries_fts(rowid, content)
        SELECT rowid, new.content FROM summary_rowids WHERE summary_id = new.id;
    INSERT INTO summaries_trigram(rowid, content)
        SELECT rowid, new.content FROM summary_rowids WHERE summary_id = new.id;
END;
