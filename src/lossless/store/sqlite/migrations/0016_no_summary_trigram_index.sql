-- The summaries' trigram index (summaries_trigram, 0001) is dropped: no query
-- ever read it. A regex grep over summaries reads the summaries themselves,
-- newest first (store/sqlite/search.py), and a word search reads
-- summaries_fts; only messages have a trigram pre-filter (messages_trigram,
-- store/sqlite/regex_scan.py), since they are many where summaries are few
-- (one per chunk of messages compacted). Yet every summary written or
-- rewritten was indexed a second time, into a table holding its own copy of
-- the text (it is not an external-content table): CPU during compaction and
-- the summaries' text twice over in the file.
--
-- The summary triggers are those of 0009 without the trigram index. Written
-- so that running it again (after 0009 ran again) gives the same schema.
-- The freed pages are reused by later writes; `lcm gc` (VACUUM) gives them
-- back to the file system.
--
-- PostgreSQL keeps its summaries_content_trgm: there the regex grep's LIKE
-- pre-filter serves summaries and messages alike (its 0016).
DROP TRIGGER IF EXISTS summaries_ai;
DROP TRIGGER IF EXISTS summaries_au;
DROP TABLE IF EXISTS summaries_trigram;
CREATE TRIGGER summaries_ai AFTER INSERT ON summaries BEGIN
    INSERT INTO summary_rowids(summary_id) VALUES (new.id);
    INSERT INTO summaries_fts(rowid, content)
        SELECT rowid, lcm_search_text(new.content) FROM summary_rowids WHERE summary_id = new.id;
END;
CREATE TRIGGER summaries_au AFTER UPDATE OF content ON summaries BEGIN
    DELETE FROM summaries_fts
        WHERE rowid = (SELECT rowid FROM summary_rowids WHERE summary_id = new.id);
    INSERT INTO summaries_fts(rowid, content)
        SELECT rowid, lcm_search_text(new.content) FROM summary_rowids WHERE summary_id = new.id;
END;
