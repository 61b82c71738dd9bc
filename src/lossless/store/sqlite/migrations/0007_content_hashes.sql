-- Content hashes (lcm verify): recorded at ingest from now on, computed here
-- for what is already stored. lcm_message_hash / lcm_part_hash / lcm_raw_hash
-- are registered on the connection by the store (lossless.store.hashing), so
-- both backends compute the same values.
ALTER TABLE messages ADD COLUMN content_hash TEXT;
ALTER TABLE message_parts ADD COLUMN content_hash TEXT;
ALTER TABLE native_records ADD COLUMN raw_hash TEXT;
UPDATE messages SET content_hash = lcm_message_hash(role, content);
UPDATE message_parts SET content_hash = lcm_part_hash(kind, text, tool_name, tool_call_id);
UPDATE native_records SET raw_hash = lcm_raw_hash(raw);
