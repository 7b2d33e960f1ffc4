-- belfry schema, version 6: calendar schedules, cron expressions in IANA time zones (issue 15).
-- See docs/calendar-schedules.md.
--
-- A cron job is a row of `jobs` with cron_expr and time_zone set. When the expression is a fixed
-- UTC interval in its zone (a zone with no offset change ahead), it is stored with that interval
-- and offset and fires through the interval path, at an interval job's cost. Otherwise its
-- interval and offset are 0 (its phase is 0, which no tick asks for) and it has one row per
-- local time-of-day in `cron_slots`, found by the tick query through (shard, key). Nothing here
-- depends on a zone's current offset: a DST transition writes nothing.

ALTER TABLE jobs ADD COLUMN cron_expr text;  -- normalized five fields; NULL for other jobs
ALTER TABLE jobs ADD COLUMN time_zone text;  -- IANA name; set iff cron_expr is

ALTER TABLE jobs DROP CONSTRAINT jobs_schedule_valid;
ALTER TABLE jobs ADD CONSTRAINT jobs_schedule_valid CHECK (
  (cron_expr IS NULL) = (time_zone IS NULL) AND (
  (run_minute IS NULL AND attempt = 0 AND retry_of IS NULL AND interval_minutes > 0
     AND interval_minutes <= 1440 AND offset_minutes >= 0 AND offset_minutes < interval_minutes)
  OR (run_minute IS NULL AND attempt = 0 AND retry_of IS NULL AND cron_expr IS NOT NULL
     AND interval_minutes = 0 AND offset_minutes = 0)
  OR (run_minute IS NOT NULL AND attempt = 0 AND retry_of IS NULL AND cron_expr IS NULL
     AND interval_minutes = 0 AND offset_minutes = 0 AND run_at IS NOT NULL AND scheduled_for_ms IS NOT NULL)
  OR (run_minute IS NOT NULL AND attempt > 0 AND retry_of IS NOT NULL AND cron_expr IS NULL
     AND interval_minutes >= 0 AND offset_minutes = 0 AND run_at IS NOT NULL AND scheduled_for_ms IS NOT NULL)));

-- The zones that cron jobs have used, numbered. A node reads it (whole: a few hundred rows at
-- most) when its row count changes, inside the tick's snapshot, so it knows every zone a visible
-- job can be in. Rows are only ever added.
CREATE TABLE cron_zones (
  id   int  PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  name text NOT NULL UNIQUE,
  CONSTRAINT cron_zones_id_range CHECK (id > 0 AND id < 1000000)
);

-- One row per (slot-planned cron job, code). key = zone id * 2048 + code, where code is the
-- local minute of the hour (0..59) for wall-time expressions or 60 + the local minute of the
-- hour for real-time ones (hour field "*"). Hour and day fields as bit masks (bit h = hour h,
-- bit d = day-of-month d, bit m = month m, bit w = weekday w, 0 = Sunday); day_or is Vixie
-- cron's OR of the two day fields. A job has at most 60 rows. Written with its job by the
-- command consumer, never by the trigger path.
CREATE TABLE cron_slots (
  shard      smallint NOT NULL,
  key        bigint   NOT NULL,
  job_id     text     NOT NULL,
  hour_mask  int      NOT NULL,
  dom_mask   int      NOT NULL,
  month_mask int      NOT NULL,
  dow_mask   int      NOT NULL,
  day_or     boolean  NOT NULL,
  PRIMARY KEY (shard, key, job_id)
);
-- A job's slots, to replace or delete them with the job.
CREATE INDEX cron_slots_job_idx ON cron_slots (shard, job_id);
