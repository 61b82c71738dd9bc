-- Text stored once (lossless.store.stored_once): a part whose text is a piece
-- of its message's content keeps only where it is (text NULL, text_start and
-- text_len set); a raw line that repeats the content or part texts is kept as
-- a template rebuilt from them (raw_template = 1). Rows written before stay as
-- they are (NULL / 0): both forms are read alike, so nothing is rewritten and
-- the content hashes of migration 0007 (of the full texts) stay valid.
ALTER TABLE message_parts ADD COLUMN text_start INTEGER;
ALTER TABLE message_parts ADD COLUMN text_len INTEGER;
ALTER TABLE native_records ADD COLUMN raw_template INTEGER NOT NULL DEFAULT 0;
