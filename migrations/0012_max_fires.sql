-- belfry schema, version 12: limited runs (issue 18, docs/fire-limits.md). A job may carry
-- maxFires. The trigger path still writes nothing per fire: when a command is applied, start_at
-- and end_at (which the tick query already reads) become the window of the job's allowed fires:
-- from fires_from to the end after its last allowed fire, within the dates the command asked
-- for. These columns keep what a resume needs to recompute it:
--   max_fires        the command's maxFires; NULL for an unlimited job (then nothing below is used)
--   fires_before     slots counted before fires_from (run segments ended by a pause)
--   fires_from       counting of the current run starts at the first slot at or after this
--   requested_end_at   the endDateTime the command gave (end_at may be earlier)
--   requested_start_at the startDateTime the command gave (start_at may be later)
-- Nullable columns and a constant default rewrite nothing.
ALTER TABLE jobs
  ADD COLUMN max_fires        int,
  ADD COLUMN fires_before     int NOT NULL DEFAULT 0,
  ADD COLUMN fires_from       timestamptz,
  ADD COLUMN requested_end_at timestamptz,
  ADD COLUMN requested_start_at timestamptz;
