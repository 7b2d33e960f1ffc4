#!/usr/bin/env bash
# Issue 34, "seed of 10M jobs in <= 10 minutes": one node at HEAD on a database of its own,
# `seed --jobs 10000000` of the harness's usual interval mix through 16 topics. FIRING=off (the
# default) runs the node with the scheduler off: a bulk load into a node that fires nothing yet.
# FIRING=on lets the stored jobs fire as they arrive (40% of the mix is every-minute, so at 10M
# the node also fires 4M triggers/min). Records:
#   - the seed's JSON (applied/s over the whole run) and its throughput plot;
#   - pg_stat_statements over the whole seed (as the stack's superuser, over its socket);
#   - bench/cpu_split over 60 s at the start (~1M stored) and near the end (~8M);
#   - the database's size. The database and the run's topics are deleted afterwards.
# Run from the repository root on the local stack, with nothing else running.
set -uo pipefail
R=${R:-bench/results/2026-11-29-issue34-10m}
mkdir -p $R
eval "$(scripts/local-stack env)"; export BELFRY_KAFKA_BROKERS
ADMIN=$BELFRY_DATABASE_URL
PORT=$(sed -E 's#.*:([0-9]+)/.*#\1#' <<<"$ADMIN")
SOCK=$(sed -n 5p "$(ps -o args= -C postgres | grep -o -- '-D [^ ]*' | head -1 | cut -d' ' -f2)/postmaster.pid")
SU=(psql -X -q -h "$SOCK" -p "$PORT" -U postgres)
JOBS=${JOBS:-10000000}
[[ ${FIRING:-off} == off ]] && export BELFRY_SCHEDULER_ENABLED=false
LT=build/bench/belfry-loadtest
export BELFRY_DATABASE_URL=${ADMIN%/*}/i34_10m
# Topics and group of this run only: a group's offsets committed by an earlier, interrupted run
# would make the new node apply that run's commands first (it did once: 1.7M replayed commands).
T=lt10m-$(date +%s)
export BELFRY_KAFKA_COMMANDS_TOPIC=$T.commands BELFRY_KAFKA_RESULTS_TOPIC=$T.results
export BELFRY_KAFKA_DLQ_TOPIC=$T.dlq BELFRY_KAFKA_CHANGES_TOPIC=$T.changes BELFRY_KAFKA_GROUP_ID=$T
export BELFRY_EXECUTIONS_ENABLED=false BELFRY_ADMIN_LISTEN=127.0.0.1:18170
# Dropped as the superuser: WITH (FORCE) from belfry cannot end an autovacuum worker (a
# superuser's backend), which a database just loaded with 10M rows usually has.
"${SU[@]}" -d postgres -c "DROP DATABASE IF EXISTS i34_10m WITH (FORCE)" || exit 1
psql -X -q "$ADMIN" -c "CREATE DATABASE i34_10m" || exit 1
"${SU[@]}" -d i34_10m -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" || exit 1
BIN=${BIN:-build/belfry}  # the node under test (another commit's build for a before run)
export BELFRY_MIGRATIONS_DIR=${BELFRY_MIGRATIONS_DIR:-$(cd "$(dirname "$BIN")/.." && pwd)/migrations}  # its own commit's schema
$BIN migrate > /dev/null || exit 1
$BIN serve > /tmp/i34-10m.log 2>&1 &
NODE=$!
for _ in $(seq 1 120); do curl -sf http://$BELFRY_ADMIN_LISTEN/readyz > /dev/null && break; sleep 0.5; done
"${SU[@]}" -d i34_10m -c "SELECT pg_stat_statements_reset()" > /dev/null
( # the CPU split at ~1M and at ~8M stored jobs (estimated counts: no scan of jobs)
  for at in 1000000 8000000; do
    until [[ $(psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT sum(reltuples)::bigint FROM pg_class WHERE relname LIKE 'jobs_shard_%' AND relkind = 'r'") -ge $at ]]; do sleep 10; done
    { echo "at ~$at stored"; bench/cpu_split 60; } >> $R/cpu-split.txt 2>&1
  done
) &
SPLIT=$!
$LT seed --jobs $JOBS --timeout 30m --plot $R/seed --id-prefix m10- --topic-prefix $T.triggers. \
  > $R/seed.json 2> $R/seed.log
echo "seed: $(python3 -c "import json;d=json.load(open('$R/seed.json'));print(d['applied'],d['applied_per_s'],d['applied_seconds'])")"
kill $SPLIT 2> /dev/null
"${SU[@]}" -d i34_10m -c "SELECT round(total_exec_time)::bigint AS ms, calls,
    round((total_exec_time / greatest(calls, 1))::numeric, 3) AS ms_per_call, rows,
    left(regexp_replace(query, '\s+', ' ', 'g'), 140) AS query
  FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'i34_10m')
  ORDER BY total_exec_time DESC LIMIT 20" > $R/pgss-seed.txt
psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT pg_size_pretty(pg_database_size(current_database())),
  pg_size_pretty(pg_total_relation_size('job_changes'))" > $R/db-size.txt
kill -TERM $NODE; wait $NODE
"${SU[@]}" -d postgres -c "DROP DATABASE IF EXISTS i34_10m WITH (FORCE)"
# This run's topics hold ~20 GB (commands, results, and a create's whole view on the changes topic).
scripts/local-stack kafka-topics --delete --topic "$T\\..*" > /dev/null 2>&1 || echo "deleting the $T.* topics failed"
