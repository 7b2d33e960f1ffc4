#!/usr/bin/env bash
# Issue 19, part 2: the load harness verifies every slot across a reshard's cut-over. Three
# `belfry serve` nodes fire 600,000 seeded interval jobs (the harness's mix) at 120 shards /
# 500 ms; `belfry reshard --to 240 --lead 150s` moves the rows while they fire and records a
# cut-over minute C about 2.5 minutes ahead; then `belfry-loadtest verify` (which reads the layout
# record, docs/loadtest.md) judges a 5-minute window that spans C: every due (job, slot) exactly
# once, at its minute's layout's slot (M*60 s + shard*500 ms before C, shard*250 ms from C).
# Run from the repository root on the local stack, with nothing else running.
set -euo pipefail
R=${R:-bench/results/2026-11-27-reshard-verify}
eval "$(scripts/local-stack env)"
DB=belfry_reshard_verify
ADMIN=postgresql://belfry:belfry@127.0.0.1:55432/belfry
psql -X -q "$ADMIN" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
export BELFRY_DATABASE_URL=postgresql://belfry:belfry@127.0.0.1:55432/$DB
export BELFRY_KAFKA_COMMANDS_TOPIC=lt.rv.commands BELFRY_KAFKA_RESULTS_TOPIC=lt.rv.command-results
export BELFRY_KAFKA_DLQ_TOPIC=lt.rv.commands.dlq BELFRY_KAFKA_CHANGES_TOPIC=lt.rv.changes
export BELFRY_KAFKA_GROUP_ID=belfry-lt-rv BELFRY_EXECUTIONS_ENABLED=false
build/belfry migrate > "$R/migrate.log" 2>&1
PIDS=()
for i in 0 1 2; do
  BELFRY_NODE_ID="node-$i" BELFRY_ADMIN_LISTEN="127.0.0.1:1849$i" build/belfry serve > "$R/node-$i.log" 2>&1 &
  PIDS+=($!)
done
trap 'kill -TERM "${PIDS[@]}" 2>/dev/null || true; wait || true' EXIT
for i in 0 1 2; do
  for _ in $(seq 120); do curl -sf "localhost:1849$i/healthz" >/dev/null && break; sleep 0.5; done
done
build/bench/belfry-loadtest seed --jobs 600000 --topics 8 --owners 50 --id-prefix rv- > "$R/seed.json" 2> "$R/seed.log"
sleep 60  # a minute of firing at 120 shards
build/belfry reshard --to 240 --lead 150s > "$R/reshard.log" 2>&1
cat "$R/reshard.log"
build/bench/belfry-loadtest verify --duration 5m --grace 5s > "$R/verify.json" 2> "$R/verify.log"
echo "verify exit $?"
psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT value FROM belfry_meta WHERE key = 'layout'" | tee "$R/layout.json"
