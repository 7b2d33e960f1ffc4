-- belfry schema, version 11: trigger and backfill commands (issue 18, docs/manual-fires.md).
--
-- A `trigger` or `backfill` stores one-shot rows derived from the job, like a scheduled retry
-- (0004): id "<job>#trigger#<ms>" or "<job>#backfill#<ms>", retry_of = the job (so deleting the
-- job deletes them), attempt 0, the job's interval_minutes (the trigger carries it). The schedule
-- check gains that kind of row: a derived row is any row with retry_of set; only retries have an
-- attempt above 0. Re-adding the check reads every row of jobs once (about a second per million
-- rows here) under the migration's lock.
ALTER TABLE jobs DROP CONSTRAINT jobs_schedule_valid;
ALTER TABLE jobs ADD CONSTRAINT jobs_schedule_valid CHECK (
  (cron_expr IS NULL) = (time_zone IS NULL) AND (
  (run_minute IS NULL AND attempt = 0 AND retry_of IS NULL AND interval_minutes > 0
     AND interval_minutes <= 1440 AND offset_minutes >= 0 AND offset_minutes < interval_minutes)
  OR (run_minute IS NULL AND attempt = 0 AND retry_of IS NULL AND cron_expr IS NOT NULL
     AND interval_minutes = 0 AND offset_minutes = 0)
  OR (run_minute IS NOT NULL AND attempt = 0 AND retry_of IS NULL AND cron_expr IS NULL
     AND interval_minutes = 0 AND offset_minutes = 0 AND run_at IS NOT NULL AND scheduled_for_ms IS NOT NULL)
  OR (run_minute IS NOT NULL AND attempt >= 0 AND retry_of IS NOT NULL AND cron_expr IS NULL
     AND interval_minutes >= 0 AND offset_minutes = 0 AND run_at IS NOT NULL AND scheduled_for_ms IS NOT NULL)));

-- The ranges each job was backfilled over: a backfill fires only the slots of its range that no
-- earlier backfill of the job covered, so repeating or replaying one fires nothing twice. Rows go
-- with their job (a delete removes them). A few rows per backfilled job; never read by the tick.
CREATE TABLE backfills (
  job_id          text        NOT NULL,
  from_ms         bigint      NOT NULL,
  to_ms           bigint      NOT NULL,
  slots           integer     NOT NULL,  -- triggers it stored
  rate_per_minute integer     NOT NULL,
  src_partition   integer     NOT NULL,
  src_offset      bigint      NOT NULL,
  applied_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, from_ms, to_ms),
  CHECK (from_ms < to_ms)
);
