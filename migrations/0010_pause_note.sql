-- belfry schema, version 10: a pause's note (issue 18). A pause command may say why and who:
-- `reason` and `actor`, shown by `belfry jobs get` and GET /v1/jobs/{id} until the job is resumed.
-- paused_at is when the pause was applied. All three are NULL while the job runs. Adding
-- nullable columns rewrites nothing.
ALTER TABLE jobs
  ADD COLUMN pause_reason text,
  ADD COLUMN pause_actor  text,
  ADD COLUMN paused_at    timestamptz;
