-- belfry schema, version 3: execution outcomes (issue 7). Written only by the execution consumer
-- and the history trim sweep, never by the trigger path. See docs/executions.md.

-- One row per distinct report. The key makes a repeated report (at-least-once delivery, a
-- producer retry, a replay) a no-op.
CREATE TABLE executions (
  job_id           text        NOT NULL,
  scheduled_for_ms bigint      NOT NULL,
  attempt          int         NOT NULL DEFAULT 0,
  status           text        NOT NULL,
  error            text        NOT NULL DEFAULT '',
  started_at       timestamptz,
  finished_at      timestamptz,
  worker           text        NOT NULL DEFAULT '',
  src_partition    int         NOT NULL,
  src_offset       bigint      NOT NULL,
  received_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, scheduled_for_ms, attempt, status),
  CONSTRAINT executions_status_valid CHECK (status IN ('succeeded', 'failed', 'running')),
  CONSTRAINT executions_attempt_valid CHECK (attempt >= 0)
);

-- Per-job counters and the last terminal outcome; see JobStats in include/belfry/execution.h.
CREATE TABLE job_stats (
  job_id                text        PRIMARY KEY,
  last_status           text,
  last_scheduled_for_ms bigint      NOT NULL DEFAULT 0,
  last_attempt          int         NOT NULL DEFAULT 0,
  last_error            text        NOT NULL DEFAULT '',
  last_finished_at      timestamptz,
  consecutive_failures  bigint      NOT NULL DEFAULT 0,
  total_succeeded       bigint      NOT NULL DEFAULT 0,
  total_failed          bigint      NOT NULL DEFAULT 0,
  updated_at            timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 80);
