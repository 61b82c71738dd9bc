-- When the current owner took a conversation's compaction lease (epoch
-- seconds), so that a busy answer can say who holds it and since when.
ALTER TABLE leases ADD COLUMN acquired_at REAL;
