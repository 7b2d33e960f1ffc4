-- belfry schema, version 9: whether a job's offset was chosen by its producer (issue 18,
-- docs/load-projection.md, "Rebalance").
--
-- An upsert with offsetMinutes (or startDateTime, or a cron expression stored as an interval)
-- pins the job's offset: its owner chose the minute. One without takes the minute of the command's
-- timestamp, which belfry may propose to move to flatten a hot minute (`belfry rebalance`). Rows
-- stored before this version count as pinned: nobody recorded where their offset came from, and
-- the rebalance must never move a job whose owner chose its minute. Adding a column with a
-- constant default rewrites nothing (PostgreSQL 11+), whatever the table's size.
ALTER TABLE jobs ADD COLUMN offset_pinned boolean NOT NULL DEFAULT true;
