-- belfry schema, version 4: retries of failed executions (issue 7). See docs/executions.md,
-- "Retries".
--
-- A job's retry policy lives on its row. A scheduled retry is a one-shot row of its own in `jobs`
-- (id "<job>#retry#<scheduledFor ms>#<attempt>", run_minute set, attempt > 0, retry_of = the
-- job), so the tick query finds it through the same index scan as every other job of its
-- shard-minute and firing it writes nothing. Retry rows are written only by the execution
-- consumer, never by the trigger path.

ALTER TABLE jobs ADD COLUMN max_retries int NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN retry_initial_ms bigint NOT NULL DEFAULT 60000;
ALTER TABLE jobs ADD COLUMN retry_multiplier double precision NOT NULL DEFAULT 2;
ALTER TABLE jobs ADD COLUMN retry_max_ms bigint NOT NULL DEFAULT 3600000;
ALTER TABLE jobs ADD COLUMN attempt int NOT NULL DEFAULT 0;   -- > 0 only on retry rows
ALTER TABLE jobs ADD COLUMN retry_of text;                    -- the retried job; retry rows only

ALTER TABLE jobs ADD CONSTRAINT jobs_retry_policy_valid CHECK (
  max_retries >= 0 AND retry_initial_ms > 0 AND retry_multiplier >= 1 AND retry_max_ms >= retry_initial_ms);
-- A retry row is a one-shot that keeps the retried job's interval (its trigger carries it), so
-- the one-shot rule of 0002 is widened for attempt > 0 rows only.
ALTER TABLE jobs DROP CONSTRAINT jobs_schedule_valid;
ALTER TABLE jobs ADD CONSTRAINT jobs_schedule_valid CHECK (
  (run_minute IS NULL AND attempt = 0 AND retry_of IS NULL AND interval_minutes > 0
     AND interval_minutes <= 1440 AND offset_minutes >= 0 AND offset_minutes < interval_minutes)
  OR (run_minute IS NOT NULL AND attempt = 0 AND retry_of IS NULL AND interval_minutes = 0
     AND offset_minutes = 0 AND run_at IS NOT NULL AND scheduled_for_ms IS NOT NULL)
  OR (run_minute IS NOT NULL AND attempt > 0 AND retry_of IS NOT NULL AND interval_minutes >= 0
     AND offset_minutes = 0 AND run_at IS NOT NULL AND scheduled_for_ms IS NOT NULL));

-- A job's pending retries: cancelled when the job is deleted, superseded by a later success.
CREATE INDEX jobs_retry_of_idx ON jobs (retry_of) WHERE retry_of IS NOT NULL;

-- The latest slot the job succeeded for: a retry of that slot or an older one is superseded.
ALTER TABLE job_stats ADD COLUMN last_success_scheduled_for_ms bigint;

-- The last minute the live claim covers (the claim's up_to_minute). A retry is never placed in a
-- minute a firing in progress may already have queried: see PgExecutionStore.
ALTER TABLE shard_state ADD COLUMN claim_through bigint;
