-- belfry schema, version 2: one-shot jobs and priority ordering (issue 7). See docs/executions.md.
--
-- One-shot jobs live in `jobs` like interval jobs (one id, one row, the same replay guard, the
-- same admin reads), with interval_minutes = offset_minutes = 0 and run_minute set. The tick
-- index key `phase` is redefined so that a one-shot's phase is -run_minute: a shard-minute's due
-- set, one-shots included, stays one `phase = ANY(...)` over one index. Interval phases are
-- unchanged (interval * 1440 + offset, always >= 1440), so the two never collide.
--
-- Redefining the generated column rewrites the table (ACCESS EXCLUSIVE for the duration): about
-- a second per million rows on the local stack. On a very large table, run it in a quiet window.

ALTER TABLE jobs DROP CONSTRAINT jobs_interval_positive;
ALTER TABLE jobs DROP CONSTRAINT jobs_offset_in_range;

ALTER TABLE jobs ADD COLUMN run_at timestamptz;          -- one-shots: the runAt given
ALTER TABLE jobs ADD COLUMN run_minute bigint;           -- one-shots: the minute that fires it
ALTER TABLE jobs ADD COLUMN scheduled_for_ms bigint;     -- one-shots: the trigger's scheduledFor

-- Drops jobs_due_idx with it.
ALTER TABLE jobs DROP COLUMN phase;
ALTER TABLE jobs ADD COLUMN phase bigint GENERATED ALWAYS AS (
  CASE WHEN run_minute IS NULL THEN interval_minutes::bigint * 1440 + offset_minutes ELSE -run_minute END
) STORED;

ALTER TABLE jobs ADD CONSTRAINT jobs_schedule_valid CHECK (
  (run_minute IS NULL AND interval_minutes > 0 AND interval_minutes <= 1440
     AND offset_minutes >= 0 AND offset_minutes < interval_minutes)
  OR (run_minute IS NOT NULL AND interval_minutes = 0 AND offset_minutes = 0
     AND run_at IS NOT NULL AND scheduled_for_ms IS NOT NULL));

-- The tick index, as in 0001 (rebuilt because `phase` was). The tick query reads a shard-minute
-- as three statements by priority sign (see docs/executions.md, "Priority"): `priority = 0`
-- walks this index and filters the few prioritised rows out on the heap; `priority > 0` and
-- `priority < 0` walk the two small partial indexes below, which hold only prioritised jobs, so
-- their cost follows the number of prioritised jobs, not the size of the shard.
CREATE INDEX jobs_due_idx ON jobs (shard, phase) WHERE NOT paused;
CREATE INDEX jobs_due_high_idx ON jobs (shard, phase, priority) WHERE NOT paused AND priority > 0;
CREATE INDEX jobs_due_low_idx ON jobs (shard, phase, priority) WHERE NOT paused AND priority < 0;

-- The retention sweep of fired one-shots (only one-shot rows are in it).
CREATE INDEX jobs_run_minute_idx ON jobs (run_minute) WHERE run_minute IS NOT NULL;
