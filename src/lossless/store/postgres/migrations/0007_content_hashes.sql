-- Content hashes (lcm verify): recorded at ingest from now on, computed here
-- for what is already stored, exactly as lossless.store.hashing does: hex
-- SHA-256 of the fields joined by chr(31), a NULL field being chr(30).
ALTER TABLE lcm.messages ADD COLUMN content_hash text;
ALTER TABLE lcm.message_parts ADD COLUMN content_hash text;
ALTER TABLE lcm.native_records ADD COLUMN raw_hash text;
UPDATE lcm.messages
   SET content_hash = encode(sha256(convert_to('m' || chr(31) || role || chr(31) || content, 'UTF8')), 'hex');
UPDATE lcm.message_parts
   SET content_hash = encode(sha256(convert_to(
       'p' || chr(31) || kind || chr(31) || coalesce(text, chr(30)) || chr(31)
       || coalesce(tool_name, chr(30)) || chr(31) || coalesce(tool_call_id, chr(30)), 'UTF8')), 'hex');
UPDATE lcm.native_records SET raw_hash = encode(sha256(convert_to(raw, 'UTF8')), 'hex');
