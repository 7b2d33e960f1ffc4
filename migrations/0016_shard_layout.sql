-- belfry schema, version 16: the shard layout record (issue 19, part 2; docs/resharding.md).
-- belfry_meta's 'layout' row says how rows are stored and which shards fire each minute while
-- `belfry reshard` grows the shard count: {"from": N} when no reshard is under way. A database
-- migrated before this version gets it from its shard_count; a new one gets it from the
-- migrator, with the shard_count row.
INSERT INTO belfry_meta (key, value)
SELECT 'layout', json_build_object('from', value::int)::text FROM belfry_meta WHERE key = 'shard_count'
ON CONFLICT (key) DO NOTHING;
