-- The word indexes (messages, summaries, memories) rebuilt with stemming and
-- CJK words (lossless.store.lexical).
--
-- porter wraps unicode61: the same words, case and accents folded as before,
-- indexed by their Porter stem, so "migrations" finds "migration". Chinese,
-- Japanese and Korean characters each become a word of their own: the text
-- is indexed through lcm_search_text (lexical.index_text, registered on the
-- connection by the store), which puts an invisible separator around each.
-- The message index reads its rows through a view applying it, so FTS5's
-- snippets, 'rebuild' and 'integrity-check' see exactly the indexed text;
-- the triggers give 'delete' that same text. Nothing but the indexes changes:
-- they are rebuilt here from the rows, which are untouched. Written so that
-- running it again rebuilds the same indexes.
--
-- A connection without lcm_search_text (a bare sqlite3 shell) can still read
-- and MATCH everything, but cannot change a message, summary or memory, nor
-- read a message snippet: messages are only rewritten through lossless.

DROP TRIGGER IF EXISTS messages_au;
DROP TRIGGER IF EXISTS messages_ad;
DROP TABLE IF EXISTS messages_fts;
DROP VIEW IF EXISTS messages_words;
CREATE VIEW messages_words AS SELECT id, lcm_search_text(content) AS content FROM messages;
CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, content='messages_words', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
CREATE TRIGGER messages_au AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content)
        VALUES ('delete', old.id, lcm_search_text(old.content));
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, lcm_search_text(new.content));
END;
CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content)
        VALUES ('delete', old.id, lcm_search_text(old.content));
END;

DROP TRIGGER IF EXISTS summaries_ai;
DROP TRIGGER IF EXISTS summaries_au;
DROP TABLE IF EXISTS summaries_fts;
CREATE VIRTUAL TABLE summaries_fts USING fts5(
    content, tokenize='porter unicode61 remove_diacritics 2'
);
INSERT INTO summaries_fts(rowid, content)
    SELECT r.rowid, lcm_search_text(s.content) FROM summary_rowids r
    JOIN summaries s ON s.id = r.summary_id;
CREATE TRIGGER summaries_ai AFTER INSERT ON summaries BEGIN
    INSERT INTO summary_rowids(summary_id) VALUES (new.id);
    INSERT INTO summaries_fts(rowid, content)
        SELECT rowid, lcm_search_text(new.content) FROM summary_rowids WHERE summary_id = new.id;
    INSERT INTO summaries_trigram(rowid, content)
        SELECT rowid, new.content FROM summary_rowids WHERE summary_id = new.id;
END;
CREATE TRIGGER summaries_au AFTER UPDATE OF content ON summaries BEGIN
    DELETE FROM summaries_fts
        WHERE rowid = (SELECT rowid FROM summary_rowids WHERE summary_id = new.id);
    DELETE FROM summaries_trigram
        WHERE rowid = (SELECT rowid FROM summary_rowids WHERE summary_id = new.id);
    INSERT INTO summaries_fts(rowid, content)
        SELECT rowid, lcm_search_text(new.content) FROM summary_rowids WHERE summary_id = new.id;
    INSERT INTO summaries_trigram(rowid, content)
        SELECT rowid, new.content FROM summary_rowids WHERE summary_id = new.id;
END;

DROP TRIGGER IF EXISTS memories_ai;
DROP TRIGGER IF EXISTS memories_ad;
DROP TRIGGER IF EXISTS memories_au;
DROP TABLE IF EXISTS memories_fts;
DROP VIEW IF EXISTS memories_words;
CREATE VIEW memories_words AS
    SELECT seq, lcm_search_text(text) AS text, lcm_search_text(tags_text) AS tags_text
    FROM memories;
CREATE VIRTUAL TABLE memories_fts USING fts5(
    text, tags_text, content='memories_words', content_rowid='seq',
    tokenize='porter unicode61 remove_diacritics 2'
);
INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, text, tags_text)
        VALUES (new.seq, lcm_search_text(new.text), lcm_search_text(new.tags_text));
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, tags_text)
        VALUES ('delete', old.seq, lcm_search_text(old.text), lcm_search_text(old.tags_text));
END;
CREATE TRIGGER memories_au AFTER UPDATE OF text, tags_text ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, tags_text)
        VALUES ('delete', old.seq, lcm_search_text(old.text), lcm_search_text(old.tags_text));
    INSERT INTO memories_fts(rowid, text, tags_text)
        VALUES (new.seq, lcm_search_text(new.text), lcm_search_text(new.tags_text));
END;
