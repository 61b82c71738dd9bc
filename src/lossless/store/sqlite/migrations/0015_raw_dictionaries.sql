-- Raw lines packed with a dictionary trained on the store's own lines
-- (lossless.store.raw_packing): the dictionaries, one per store in practice
-- (trained from the first batch of enough lines), never changed or dropped
-- since packed lines name theirs. A packed line is a BLOB in native_records'
-- TEXT column, as zlib-packed lines already are (0010); rows written before
-- stay as they are and are read alike (`lcm gc` packs them).
--
-- PostgreSQL keeps raw lines as text (TOAST compresses the long ones) and
-- has no such table: nothing there refers to a dictionary.
CREATE TABLE raw_dictionaries (
    id         INTEGER PRIMARY KEY,
    dictionary BLOB NOT NULL,
    created_at TEXT NOT NULL
);
