-- The trigram index (substring search, regex pre-filtering, CJK) is built
-- behind the writes instead of inside them.
--
-- A trigram index costs about ten times the word index per message (every
-- three-character window is a term), which capped a bulk import far below
-- the word index's own speed. Messages are now added to it in id order by
-- catch_up(); indexed_upto is the last id it holds. Grep stays exact for
-- the rows above it by scanning them, so the backlog only costs speed.
--
-- The update and delete triggers may tell the index to forget a row only if
-- it holds that row: FTS5 'delete' of a row it never indexed corrupts it.

CREATE TABLE trigram_progress (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_upto INTEGER NOT NULL
);
INSERT INTO trigram_progress(id, indexed_upto) SELECT 1, coalesce(max(id), 0) FROM messages;

DROP TRIGGER messages_au;
DROP TRIGGER messages_ad;

CREATE TRIGGER messages_au AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER messages_au_trigram AFTER UPDATE OF content ON messages
WHEN old.id <= (SELECT indexed_upto FROM trigram_progress) BEGIN
    INSERT INTO messages_trigram(messages_trigram, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER messages_ad_trigram AFTER DELETE ON messages
WHEN old.id <= (SELECT indexed_upto FROM trigram_progress) BEGIN
    INSERT INTO messages_trigram(messages_trigram, rowid, content) VALUES ('delete', old.id, old.content);
END;
