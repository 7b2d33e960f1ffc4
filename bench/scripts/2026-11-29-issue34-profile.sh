#!/usr/bin/env bash
# Issue 34, "find where the time goes", first pass at today's head only: one node on a database of
# its own, `crud --commands 100000` at full speed (the issue's mix: create 50 / update 30 /
# delete 20), then `seed --jobs 200000`, each with
#   - perf (cpu-clock samples with call graphs) on the belfry process,
#   - pg_stat_statements reset before and read after (as the stack's superuser, over its socket),
#   - the audit table's bytes per stored change.
# Run from the repository root on the local stack, with nothing else running.
set -uo pipefail
R=${R:-bench/results/2026-11-29-issue34-profile}
mkdir -p $R
eval "$(scripts/local-stack env)"; export BELFRY_KAFKA_BROKERS
ADMIN=$BELFRY_DATABASE_URL
PORT=$(sed -E 's#.*:([0-9]+)/.*#\1#' <<<"$ADMIN")
SOCK=$(sed -n 5p "$(ps -o args= -C postgres | grep -o -- '-D [^ ]*' | head -1 | cut -d' ' -f2)/postmaster.pid")
SU=(psql -X -q -h "$SOCK" -p "$PORT" -U postgres)
LT=build/bench/belfry-loadtest
export BELFRY_DATABASE_URL=${ADMIN%/*}/prof34
export BELFRY_KAFKA_COMMANDS_TOPIC=p34.commands BELFRY_KAFKA_RESULTS_TOPIC=p34.results
export BELFRY_KAFKA_DLQ_TOPIC=p34.dlq BELFRY_KAFKA_CHANGES_TOPIC=p34.changes
export BELFRY_KAFKA_GROUP_ID=p34 BELFRY_EXECUTIONS_ENABLED=false BELFRY_ADMIN_LISTEN=127.0.0.1:18134
psql -X -q "$ADMIN" -c "DROP DATABASE IF EXISTS prof34 WITH (FORCE)" -c "CREATE DATABASE prof34" || exit 1
"${SU[@]}" -d prof34 -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" || exit 1
build/belfry migrate > /dev/null || exit 1
build/belfry serve > /tmp/p34-serve.log 2>&1 &
NODE=$!
for _ in $(seq 1 120); do curl -sf http://$BELFRY_ADMIN_LISTEN/readyz > /dev/null && break; sleep 0.5; done
top_statements() {  # top_statements <label>
  "${SU[@]}" -d prof34 -c "SELECT round(total_exec_time)::bigint AS ms, calls,
      round((total_exec_time / greatest(calls, 1))::numeric, 3) AS ms_per_call, rows,
      left(regexp_replace(query, '\s+', ' ', 'g'), 140) AS query
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'prof34')
    ORDER BY total_exec_time DESC LIMIT 15" > $R/pgss-$1.txt
}
audit_size() {  # audit_size <label>
  psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT '$1', count(*), pg_total_relation_size('job_changes'),
      CASE WHEN count(*) > 0 THEN pg_total_relation_size('job_changes') / count(*) END,
      (SELECT avg(pg_column_size(c.*))::int FROM job_changes c)
    FROM job_changes" >> $R/audit-size.txt
}
: > $R/audit-size.txt
for phase in crud seed; do
  "${SU[@]}" -d prof34 -c "SELECT pg_stat_statements_reset()" > /dev/null
  perf record -e cpu-clock -F 499 -g -p $NODE -o /tmp/p34-$phase.perf.data 2> /dev/null &
  PERF=$!
  if [[ $phase == crud ]]; then
    $LT crud --commands 100000 --id-prefix p34- --topic-prefix p34.crud. > $R/crud.json 2> $R/crud.log
  else
    $LT seed --jobs 200000 --topics 8 --owners 50 --id-prefix s34- --topic-prefix p34.seed. \
      > $R/seed.json 2> $R/seed.log
  fi
  kill -INT $PERF; wait $PERF
  top_statements $phase
  audit_size $phase
  perf report -i /tmp/p34-$phase.perf.data --no-children --sort symbol --stdio 2> /dev/null \
    | grep -v '^#' | grep -v '^$' | grep '%' | head -40 > $R/perf-$phase.txt
done
kill -TERM $NODE; wait $NODE
psql -X -q "$ADMIN" -c "DROP DATABASE IF EXISTS prof34 WITH (FORCE)"
