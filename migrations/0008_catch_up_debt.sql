-- belfry schema, version 8: catch-up debt (issue 17, docs/catch-up.md).
--
-- A firing that finds its shard behind no longer fires the missed minutes itself: it fires the
-- on-time ones, moves fired_through past the gap and adds the missed minutes to `debt` in the
-- same UPDATE. Debt firings drain it later, under their own lease, so the present is never held
-- back by a catch-up. The invariant: every minute <= fired_through that is not in debt was fired.
ALTER TABLE shard_state
  ADD COLUMN debt       int8multirange NOT NULL DEFAULT '{}',  -- missed epoch minutes still owed
  ADD COLUMN debt_node  text,         -- node holding the debt lease; NULL = none
  ADD COLUMN debt_until timestamptz;  -- debt lease expiry, by the database's clock
