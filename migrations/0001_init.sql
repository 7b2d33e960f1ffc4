-- belfry schema, version 1. Applied by `belfry migrate` (src/pg/migrator.cc) inside one
-- transaction together with its schema_migrations row. See docs/storage.md for the reasoning.

-- Facts fixed when the database is created. Holds 'shard_count', written by the migrator.
CREATE TABLE belfry_meta (
  key   text PRIMARY KEY,
  value text NOT NULL
);

-- One row per job. Written only by the command consumer (set-based, one transaction per batch);
-- read by the tick query, which writes nothing.
--
-- fillfactor 90 leaves room on each page so that updates that touch no indexed column (details,
-- dates, source position, updated_at) can be HOT updates: no index maintenance, no index bloat.
CREATE TABLE jobs (
  id               text        PRIMARY KEY,
  shard            smallint    NOT NULL,
  interval_minutes int         NOT NULL,
  offset_minutes   int         NOT NULL,
  -- One integer per (interval, offset) pair, so that the tick query is a single `phase = ANY($2)`
  -- over a two-column index instead of an OR of (interval, offset) pairs.
  phase            int         GENERATED ALWAYS AS (interval_minutes * 1440 + offset_minutes) STORED,
  owner            text        NOT NULL DEFAULT '',
  topic            text        NOT NULL,
  key              text        NOT NULL DEFAULT '',
  details          text        NOT NULL DEFAULT '{}',  -- minified JSON object, spliced verbatim
  start_at         timestamptz,
  end_at           timestamptz,
  priority         int         NOT NULL DEFAULT 0,
  paused           boolean     NOT NULL DEFAULT false,
  -- Position in the commands topic of the last command applied to this row (replay protection).
  src_partition    int         NOT NULL,
  src_offset       bigint      NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT jobs_interval_positive CHECK (interval_minutes > 0 AND interval_minutes <= 1440),
  CONSTRAINT jobs_offset_in_range CHECK (offset_minutes >= 0 AND offset_minutes < interval_minutes),
  CONSTRAINT jobs_shard_non_negative CHECK (shard >= 0)
) WITH (fillfactor = 90);

-- The tick index: one shard's due jobs for a minute are a handful of (shard, phase) equality
-- ranges. Paused jobs are left out of the index entirely.
CREATE INDEX jobs_due_idx ON jobs (shard, phase) WHERE NOT paused;

-- Admin listing by owner or topic, with keyset pagination on id.
CREATE INDEX jobs_owner_id_idx ON jobs (owner, id);
CREATE INDEX jobs_topic_id_idx ON jobs (topic, id);

-- Per-shard bookkeeping: the only thing the trigger path writes. One row per shard, created by
-- the migrator for shards 0..shard_count-1.
CREATE TABLE shard_state (
  shard         smallint PRIMARY KEY,
  fired_through bigint,       -- last epoch minute fired; NULL = never fired
  claim_node    text,         -- node holding the firing lease; NULL = unclaimed
  claim_until   timestamptz,  -- lease expiry, by the database's clock
  updated_at    timestamptz
) WITH (fillfactor = 50);
