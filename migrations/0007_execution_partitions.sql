-- belfry schema, version 7: execution history partitioned by day (issue 16). See
-- docs/executions.md, "History".
--
-- At 100M reports a day, retention by a row-by-row DELETE (the keep_per_job trim of 0003) costs
-- as much as the inserts did, and its full-table window grows with the table. Partitioned by UTC
-- day of scheduled_for_ms, retention is dropping whole day tables: no dead rows, no vacuum debt.
-- scheduled_for_ms is the partition key because it is already in the primary key (a repeat of a
-- report always has the same scheduledFor, so it meets its first copy in the same partition and
-- ON CONFLICT DO NOTHING keeps deduplicating); the receive time is not, and adding it to the key
-- would stop repeats from being recognised.
--
-- Daily partitions are executions_YYYYMMDD (UTC). They are created ahead by the sweep of
-- `belfry serve` (belfry_execution_partitions below, run at startup and every
-- executions.trim_interval). A report outside every daily partition (a scheduledFor far in the
-- future, or older than the retention, or any report while no partition exists yet, as right
-- after this migration) lands in executions_default; the sweep moves such rows into the day
-- partition it creates for them, and deletes those older than the retention.
--
-- Existing rows are moved into the new table (into executions_default; the first sweep then
-- moves them into their days). Rewrites the table under ACCESS EXCLUSIVE: with 0003's trim of
-- 100 rows per job the table was bounded, and the copy takes seconds per million rows.

ALTER TABLE executions RENAME TO executions_unpartitioned;
ALTER INDEX executions_pkey RENAME TO executions_unpartitioned_pkey;

CREATE TABLE executions (
  LIKE executions_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE,
  PRIMARY KEY (job_id, scheduled_for_ms, attempt, status)
) PARTITION BY RANGE (scheduled_for_ms);

CREATE TABLE executions_default PARTITION OF executions DEFAULT;

INSERT INTO executions SELECT * FROM executions_unpartitioned;
DROP TABLE executions_unpartitioned;

-- The sweep. now_ms and retention_ms in epoch milliseconds; days_ahead >= 0.
--  1. drops every daily partition whose whole day lies before now - retention (a report is kept
--     for at least the retention and at most one day longer);
--  2. deletes from executions_default the rows scheduled before the first kept day;
--  3. creates each missing daily partition from the first kept day through today + days_ahead,
--     moving any rows of that day out of executions_default first (a partition cannot be
--     attached while the default partition holds rows of its range).
-- Concurrent sweeps (every node runs one) take turns on a transaction-scoped advisory lock.
CREATE FUNCTION belfry_execution_partitions(now_ms bigint, retention_ms bigint, days_ahead int)
RETURNS TABLE (created int, dropped int, default_rows_deleted bigint)
LANGUAGE plpgsql AS $$
DECLARE
  day_ms constant bigint := 86400000;
  horizon_ms bigint := now_ms - retention_ms;
  first_day bigint := floor(horizon_ms::numeric / day_ms)::bigint;  -- the oldest day kept
  last_day bigint := floor(now_ms::numeric / day_ms)::bigint + days_ahead;
  part record;
  part_day bigint;
  name text;
BEGIN
  IF retention_ms <= 0 OR days_ahead < 0 THEN
    RAISE EXCEPTION 'belfry_execution_partitions: retention_ms must be > 0 and days_ahead >= 0';
  END IF;
  created := 0;
  dropped := 0;
  PERFORM pg_advisory_xact_lock(hashtext('belfry_execution_partitions'));

  FOR part IN
    SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'executions'::regclass AND c.relname ~ '^executions_[0-9]{8}$'
  LOOP
    part_day := to_date(substr(part.relname, 12), 'YYYYMMDD') - date '1970-01-01';
    IF part_day < first_day THEN
      EXECUTE format('DROP TABLE %I', part.relname);
      dropped := dropped + 1;
    END IF;
  END LOOP;

  DELETE FROM executions_default WHERE scheduled_for_ms < first_day * day_ms;
  GET DIAGNOSTICS default_rows_deleted = ROW_COUNT;

  FOR d IN first_day..last_day LOOP
    name := 'executions_' || to_char(date '1970-01-01' + d, 'YYYYMMDD');
    CONTINUE WHEN to_regclass(name) IS NOT NULL;
    EXECUTE format('CREATE TABLE %I (LIKE executions INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)',
                   name);
    EXECUTE format('WITH moved AS (DELETE FROM executions_default WHERE scheduled_for_ms >= $1 AND scheduled_for_ms < $2'
                   ' RETURNING *) INSERT INTO %I SELECT * FROM moved', name)
      USING d * day_ms, (d + 1) * day_ms;
    EXECUTE format('ALTER TABLE executions ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                   name, d * day_ms, (d + 1) * day_ms);
    created := created + 1;
  END LOOP;
  RETURN NEXT;
END;
$$;
