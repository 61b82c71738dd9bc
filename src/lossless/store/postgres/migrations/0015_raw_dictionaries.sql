-- SQLite's 0015 packs raw lines with a zlib dictionary trained on the store's
-- own lines (lossless.store.raw_packing). PostgreSQL keeps raw lines as text,
-- which TOAST already compresses when long, so it needs no dictionary table;
-- this step keeps both backends' migration numbers meaning the same change,
-- and records the choice on the table itself.
COMMENT ON TABLE native_records IS
    'Raw source lines, verbatim; long ones compressed by TOAST (no trained dictionary: see SQLite migration 0015).';
