-- belfry schema, version 19: the tables on a Citus cluster (issue 36, docs/scale-out.md, "Tables").
-- belfry_citus_distribute() distributes them when the database has the citus extension, and does
-- nothing on a plain PostgreSQL. `belfry migrate` calls it after every run, so a database that was
-- migrated as plain PostgreSQL would move to Citus by `CREATE EXTENSION citus`, adding the workers,
-- and `belfry migrate` again (not yet tried: docs/scale-out.md, "The local Citus cluster"). It runs
-- in one transaction, so once `jobs` is distributed everything is, and it returns at once.
--   jobs, shard_state, cron_slots      distributed by shard, one co-location group
--   job_stats, executions, backfills,  distributed by job_id, a second group: they have no shard
--   trigger_delivery_errors            column yet
--   belfry_meta, cron_zones            reference tables (a copy on every node)
--   job_changes, job_change_pending,   plain tables on the coordinator: the statement trigger that
--   bulk_ops                           fills job_change_pending reads a transition table, which
--                                      Citus does not give a trigger on a table in its metadata
CREATE FUNCTION belfry_citus_distribute(shard_groups int DEFAULT 4) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  t text;
BEGIN
  IF to_regclass('pg_dist_partition') IS NULL THEN  -- no citus extension
    RETURN 'plain PostgreSQL';
  END IF;
  IF EXISTS (SELECT FROM pg_dist_partition WHERE logicalrelid = 'jobs'::regclass) THEN
    RETURN 'already distributed';
  END IF;
  PERFORM create_reference_table('belfry_meta');
  PERFORM create_reference_table('cron_zones');
  PERFORM create_distributed_table('jobs', 'shard', shard_count => shard_groups);
  PERFORM create_distributed_table('shard_state', 'shard', colocate_with => 'jobs');
  PERFORM create_distributed_table('cron_slots', 'shard', colocate_with => 'jobs');
  PERFORM create_distributed_table('job_stats', 'job_id', shard_count => shard_groups, colocate_with => 'none');
  FOREACH t IN ARRAY ARRAY['executions', 'backfills', 'trigger_delivery_errors'] LOOP
    PERFORM create_distributed_table(t, 'job_id', colocate_with => 'job_stats');
  END LOOP;
  RETURN 'distributed';
END
$$;
