#!/usr/bin/env bash
# Issue 19: the tick queries on a hot standby against the same node without one, at about
# 2.4M triggers/min (5.1M jobs, the harness's default interval mix), alternating in one run.
# Per phase: a fresh `belfry serve`, 75 s to settle, then 110 s measured
# (2026-11-27-standby-window.py: CPU by process group, triggers/min, lateness, tick queries by
# server) while `crud` sends commands at 1,000/s (its command -> applied latency is the command
# path's). Run from the repository root on the local stack, with nothing else running.
set -euo pipefail
R=${R:-bench/results/2026-11-27-standby}
eval "$(scripts/local-stack env)"
DB=belfry_bench_standby
BASE=postgresql://belfry:belfry@127.0.0.1:55432
export BELFRY_DATABASE_URL=$BASE/$DB
export BELFRY_KAFKA_COMMANDS_TOPIC=lt.sb.commands BELFRY_KAFKA_RESULTS_TOPIC=lt.sb.command-results
export BELFRY_KAFKA_DLQ_TOPIC=lt.sb.commands.dlq BELFRY_KAFKA_CHANGES_TOPIC=lt.sb.changes
export BELFRY_KAFKA_GROUP_ID=belfry-lt-sb BELFRY_ADMIN_LISTEN=127.0.0.1:18490
export BELFRY_EXECUTIONS_ENABLED=false
JOBS="${JOBS:-5100000}"
ROUNDS="${ROUNDS:-2}"
CRUD="${CRUD:-1}"   # 0: no commands, only firing (files *-firing-*)
TAG=""; [[ $CRUD == 0 ]] && TAG="firing-"
LT=build/bench/belfry-loadtest

start_node() {  # $1: standby URL or ""
  BELFRY_STANDBY_URL="$1" build/belfry serve >>"$R/node.log" 2>&1 &
  NODE=$!
  for _ in $(seq 120); do curl -sf localhost:18490/healthz >/dev/null && return 0; sleep 0.5; done
  echo "node did not come up" >&2; exit 1
}
stop_node() { kill -TERM "$NODE"; wait "$NODE" || true; }

if [[ "$(psql -X -At "$BASE/belfry" -c "SELECT count(*) FROM pg_database WHERE datname = '$DB'")" != 1 ]]; then
  psql -X -q "$BASE/belfry" -c "CREATE DATABASE $DB"
fi
build/belfry migrate
have="$(psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT count(*) FROM jobs WHERE id LIKE 'lt-%'")"
if (( have < JOBS )); then
  start_node ""
  $LT seed --jobs $((JOBS - have)) --first "$have" --timeout 30m > "$R/seed.json"
  # The seed's audit trail (about 1.4 KB a change) is not what is measured here: once it is
  # published, drop it, so that the standby's base backup copies jobs, not history.
  until [[ "$(psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT count(*) FROM job_changes WHERE NOT published")" == 0 ]]; do sleep 5; done
  stop_node
  psql -X -q "$BELFRY_DATABASE_URL" -c "TRUNCATE job_changes"
fi
# The trigger topics fill at ~0.8 GB/min and nobody reads them here: keep 10 minutes.
for t in $(seq 0 15); do
  scripts/local-stack kafka-run kafka.admin.ConfigCommand --bootstrap-server "$BELFRY_KAFKA_BROKERS" \
    --alter --entity-type topics --entity-name "lt.triggers.$t" --add-config retention.ms=600000 >/dev/null 2>&1 || true
done
scripts/local-stack replica-up
STANDBY=postgresql://belfry:belfry@127.0.0.1:55433/$DB

for round in $(seq "$ROUNDS"); do
  for mode in primary standby; do
    url=""; [[ $mode == standby ]] && url="$STANDBY"
    start_node "$url"
    sleep 75
    if [[ $CRUD == 1 ]]; then
      $LT crud --commands 115000 --rate 1000 --warmup-s 5 --cleanup > "$R/crud-$mode-$round.json" 2>"$R/crud-$mode-$round.log" &
      CRUD_PID=$!
      sleep 5
    fi
    python3 bench/scripts/2026-11-27-standby-window.py 100 http://127.0.0.1:18490/metrics > "$R/window-$TAG$mode-$round.json"
    if [[ $CRUD == 1 ]]; then wait "$CRUD_PID" || echo "crud exited $?" >&2; fi
    stop_node
    echo "round $round $mode: $(cat "$R/window-$TAG$mode-$round.json")"
  done
done
