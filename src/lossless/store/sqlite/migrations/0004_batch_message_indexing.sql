-- Index new messages once per append instead of once per row.
--
-- FTS5 takes a row-at-a-time trigger insert several times slower than one
-- INSERT ... SELECT over the rows an append just wrote (measured 3x on the
-- word index and the trigram index together). The adapter's append() now
-- indexes its id range itself, inside the same transaction, so a message is
-- never visible without being searchable. Delete and update triggers stay.

DROP TRIGGER messages_ai;
