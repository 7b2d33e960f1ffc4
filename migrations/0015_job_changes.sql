-- belfry schema, version 15: the audit trail (issue 18, docs/audit-trail.md). One row per change
-- that a command, a manual fire or a bulk operation's step made to a job, written in the
-- transaction that made it: the job before and after (as the admin API shows it), who and why,
-- and the source command's position. ChangePublisher publishes the rows, in change_id order, to
-- the compacted changes topic and marks them published; the retention sweep deletes published
-- rows older than audit.retention. The trigger path never writes here.
CREATE TABLE job_changes (
  change_id     bigserial   PRIMARY KEY,
  job_id        text        NOT NULL,
  op            text        NOT NULL,
  bulk_id       text,                  -- the bulk operation that made it, if one did
  actor         text,
  reason        text,
  src_partition integer     NOT NULL,
  src_offset    bigint      NOT NULL,
  command_ts    bigint      NOT NULL,  -- the command's Kafka timestamp, ms
  changed_at    timestamptz NOT NULL DEFAULT now(),
  -- JSON text, stored as text: written as belfry encoded it (no parse per row), read back as is.
  before        text,                  -- NULL: the job did not exist
  after         text,                  -- NULL: the job no longer exists
  detail        text,                  -- a trigger's or backfill's {"slots":..}
  published     boolean     NOT NULL DEFAULT false
);
CREATE INDEX job_changes_by_job ON job_changes (job_id, change_id);
CREATE INDEX job_changes_unpublished ON job_changes (change_id) WHERE NOT published;
