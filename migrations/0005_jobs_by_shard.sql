-- belfry schema, version 5: `jobs` partitioned by shard (issue 6). See docs/storage.md, "Partitions".
--
-- A tick reads one shard's due jobs. In one heap those rows are scattered over the whole table,
-- one page per row; with one partition per shard they lie within 1/120 of it, and the pages a tick
-- reads are far fewer and stay few under churn (an update or insert lands in its own shard's
-- partition). shard is a pure function of id, so the primary key becomes (id, shard): as unique
-- as id alone, and a lookup by id still finds it with its leading column.
--
-- Generic on purpose, so that it keeps whatever earlier migrations (0004 included) added: the new
-- table copies the old one's columns, defaults, generated columns, NOT NULL and CHECK constraints,
-- storage and comments (LIKE ... INCLUDING ALL EXCLUDING INDEXES), and every index of the old
-- table except its primary key is re-created from its own definition. A unique index without
-- shard cannot exist on a partitioned table; it makes this migration fail (and roll back) loudly.
--
-- Partitions: one per shard 0..119 (the default shard_count), plus a DEFAULT one for shards from
-- a larger shard_count. Rewrites the table under ACCESS EXCLUSIVE (not timed at scale; an empty
-- table takes seconds, for the catalog work). On a large table, run it in a quiet window.

ALTER TABLE jobs RENAME TO jobs_unpartitioned;

CREATE TABLE jobs (LIKE jobs_unpartitioned INCLUDING ALL EXCLUDING INDEXES) PARTITION BY LIST (shard);

DO $$
DECLARE
  columns text;
  index_defs text[];
  def text;
BEGIN
  FOR s IN 0..119 LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF jobs FOR VALUES IN (%s) WITH (fillfactor = 90)',
                   'jobs_shard_' || lpad(s::text, 3, '0'), s);
  END LOOP;
  CREATE TABLE jobs_shard_default PARTITION OF jobs DEFAULT WITH (fillfactor = 90);

  -- Every stored column; generated ones are computed again on insert.
  SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO columns
  FROM pg_attribute
  WHERE attrelid = 'jobs_unpartitioned'::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '';
  -- In tick order, so each partition starts out with a shard-minute's rows together.
  EXECUTE format('INSERT INTO jobs (%s) SELECT %s FROM jobs_unpartitioned ORDER BY shard, phase, id',
                 columns, columns);

  -- "CREATE INDEX name ON public.jobs_unpartitioned USING btree (...) WHERE ...", pointed at jobs.
  SELECT coalesce(array_agg(format('CREATE %sINDEX %I ON jobs %s',
                                   CASE WHEN i.indisunique THEN 'UNIQUE ' ELSE '' END, c.relname,
                                   substring(pg_get_indexdef(i.indexrelid) FROM ' USING .*$'))
                            ORDER BY c.relname), '{}')
  INTO index_defs
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  WHERE i.indrelid = 'jobs_unpartitioned'::regclass AND NOT i.indisprimary;

  DROP TABLE jobs_unpartitioned;  -- frees the index names
  ALTER TABLE jobs ADD CONSTRAINT jobs_pkey PRIMARY KEY (id, shard);
  FOREACH def IN ARRAY index_defs LOOP
    EXECUTE def;
  END LOOP;
END $$;

ANALYZE jobs;
