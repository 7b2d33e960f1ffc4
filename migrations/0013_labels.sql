-- belfry schema, version 13: job labels (issue 18). An upsert may carry "labels", a small map of
-- strings (README, "Command format"), stored as a jsonb object, '{}' when it has none. A GIN
-- index (jsonb_path_ops: containment only, the smallest GIN opclass) serves `labels @> filter`,
-- the listing by label and, later, bulk operations by label. It is partial: most jobs have no
-- labels, and they take no index entries (the queries repeat the predicate, so that the planner
-- can use it). A column with a constant default rewrites nothing; the index scans every
-- partition once and indexes only the labelled rows.
ALTER TABLE jobs ADD COLUMN labels jsonb NOT NULL DEFAULT '{}'::jsonb;
CREATE INDEX jobs_labels_idx ON jobs USING gin (labels jsonb_path_ops) WHERE labels <> '{}'::jsonb;
