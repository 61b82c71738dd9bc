-- An index on summaries by recency, as PostgreSQL has had since its 0001
-- (summaries_latest). A regex grep over summaries reads them newest first
-- and stops at its limit or time budget (store/sqlite/search.py,
-- SUMMARIES_NEWEST_FIRST); without this index SQLite read every summary,
-- its text included, into a temporary B-tree to sort it before the first
-- row could be tested, so even a literal in the newest summary cost a read
-- of them all.
CREATE INDEX IF NOT EXISTS summaries_latest ON summaries(latest_at, id);
