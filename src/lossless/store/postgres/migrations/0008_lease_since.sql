-- When the current owner took a conversation's compaction lease, so that a
-- busy answer can say who holds it and since when.
ALTER TABLE lcm.leases ADD COLUMN acquired_at timestamptz;
