-- belfry schema, version 14: bulk operations (issue 18, docs/bulk-operations.md). A bulk command
-- (pause, resume, delete or trigger with a selector) is recorded here by the command consumer and
-- walked by BulkOpRunner in bounded steps, shard by shard and id by id. Each step changes its
-- jobs and advances (next_shard, after_id) in one transaction, so a crash repeats no step. The
-- outcome record is published once the walk has finished (published_at). Rows are kept: they
-- are the operations' history, one row per command.
CREATE TABLE bulk_ops (
  id            text        PRIMARY KEY,
  op            text        NOT NULL CHECK (op IN ('pause', 'resume', 'delete', 'trigger')),
  owner         text,                  -- NULL: any owner
  labels        jsonb,                 -- NULL: any labels
  reason        text,
  actor         text,
  dry_run       boolean     NOT NULL,
  src_partition integer     NOT NULL,
  src_offset    bigint      NOT NULL,
  command_ts    bigint      NOT NULL,  -- the command's Kafka timestamp, ms
  accepted_at   timestamptz NOT NULL DEFAULT now(),
  next_shard    integer     NOT NULL DEFAULT 0,
  after_id      text        NOT NULL DEFAULT '',
  matched       bigint      NOT NULL DEFAULT 0,
  changed       bigint      NOT NULL DEFAULT 0,
  steps         bigint      NOT NULL DEFAULT 0,
  finished_at   timestamptz,
  published_at  timestamptz,
  CHECK (owner IS NOT NULL OR labels IS NOT NULL)
);
CREATE INDEX bulk_ops_unfinished ON bulk_ops (accepted_at, id) WHERE finished_at IS NULL;
CREATE INDEX bulk_ops_unpublished ON bulk_ops (finished_at, id) WHERE finished_at IS NOT NULL AND published_at IS NULL;
CREATE INDEX bulk_ops_accepted ON bulk_ops (accepted_at DESC, id);
