-- SQLite's 0016 drops its trigram index over summaries, which no query read
-- (its regex grep scans summaries directly). PostgreSQL's counterpart,
-- summaries_content_trgm, is read: the regex grep's LIKE pre-filter serves
-- summaries as it serves messages (store/postgres/search.py), and the
-- planner uses the index for a rare literal (benchmarks/bench_summary_trigram.py,
-- docs/benchmarks.md). So it stays; this step keeps both backends' migration
-- numbers meaning the same change, and records the choice on the index itself.
COMMENT ON INDEX lcm.summaries_content_trgm IS
    'Regex grep pre-filter over summaries (LIKE); SQLite has no such index since its migration 0016.';
