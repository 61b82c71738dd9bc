-- SQLite's 0017 adds summaries_latest, the index on summaries by recency
-- that a regex grep over summaries reads newest first; PostgreSQL has had it
-- since its 0001. This step keeps both backends' migration numbers meaning
-- the same change, and records it on the index itself.
COMMENT ON INDEX lcm.summaries_latest IS
    'Summaries newest first (regex grep over summaries); SQLite has it since its migration 0017.';
