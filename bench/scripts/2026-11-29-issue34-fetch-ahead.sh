#!/usr/bin/env bash
# Issue 34, the tick's rows one FETCH ahead: the same database of JOBS every-minute jobs (`seed --mix
# 1:100`, loaded with the scheduler off), fired in turn by two builds, BEFORE_BIN (the tick
# fetching and handing out its rows in turn) and AFTER_BIN (one FETCH ahead), ROUNDS rounds, the
# order reversed in every second round. Each turn: the node starts with the scheduler on, fires
# for 60 s, then `verify` for DURATION with the tick query's quantiles (`--admin`) and a 60 s
# CPU split; then it stops. The database and the run's topics are deleted afterwards. Run from
# the repository root on the local stack, alone on the machine (about 30 minutes).
set -uo pipefail
R=${R:-bench/results/2026-11-29-issue34-fetch-ahead}
mkdir -p $R
eval "$(scripts/local-stack env)"; export BELFRY_KAFKA_BROKERS
BASE_URL=$BELFRY_DATABASE_URL
PORT=$(sed -E 's#.*:([0-9]+)/.*#\1#' <<<"$BASE_URL")
SOCK=$(sed -n 5p "$(ps -o args= -C postgres | grep -o -- '-D [^ ]*' | head -1 | cut -d' ' -f2)/postmaster.pid")
SU=(psql -X -q -h "$SOCK" -p "$PORT" -U postgres)
BEFORE_BIN=${BEFORE_BIN:?the before build}
AFTER_BIN=${AFTER_BIN:-build/belfry}
JOBS=${JOBS:-5000000} DURATION=${DURATION:-3m} ROUNDS=${ROUNDS:-2}
LT=build/bench/belfry-loadtest
T=ltfa-$(date +%s)
export BELFRY_DATABASE_URL=${BASE_URL%/*}/i34_fa BELFRY_MIGRATIONS_DIR=$PWD/migrations
export BELFRY_KAFKA_COMMANDS_TOPIC=$T.commands BELFRY_KAFKA_RESULTS_TOPIC=$T.results
export BELFRY_KAFKA_DLQ_TOPIC=$T.dlq BELFRY_KAFKA_CHANGES_TOPIC=$T.changes BELFRY_KAFKA_GROUP_ID=$T
export BELFRY_EXECUTIONS_ENABLED=false BELFRY_ADMIN_LISTEN=127.0.0.1:18166
"${SU[@]}" -d postgres -c "DROP DATABASE IF EXISTS i34_fa WITH (FORCE)" || exit 1
psql -X -q "$BASE_URL" -c "CREATE DATABASE i34_fa" || exit 1
$AFTER_BIN migrate > /dev/null || exit 1
start_node() {  # binary, scheduler on|off
  BELFRY_SCHEDULER_ENABLED=$2 $1 serve >> /tmp/i34-fa.log 2>&1 &
  NODE=$!
  for _ in $(seq 1 120); do curl -sf http://$BELFRY_ADMIN_LISTEN/readyz > /dev/null && break; sleep 0.5; done
}
start_node $AFTER_BIN false
$LT seed --jobs $JOBS --mix 1:100 --timeout 30m --id-prefix fa- --topic-prefix $T.triggers. > $R/seed.json 2> $R/seed.log
until [[ $(psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT count(*) FROM jobs") -ge $JOBS ]]; do sleep 10; done
kill -TERM $NODE; wait $NODE
"${SU[@]}" -d i34_fa -c "VACUUM ANALYZE jobs"
turn() {  # name binary
  echo "== $1 $(date -u +%H:%M:%S)"
  start_node $2 true
  sleep 60
  bench/cpu_split 60 > $R/cpu-split-$1.txt 2>&1 &
  $LT verify --duration $DURATION --topics-prefix $T.triggers. --belfry-pid $NODE --admin $BELFRY_ADMIN_LISTEN \
    --report-window $DURATION > $R/verify-$1.json 2> $R/verify-$1.log
  kill -TERM $NODE; wait $NODE
  python3 - $R/verify-$1.json <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
lat = d.get("lateness", {})
w = (d.get("by_window", {}).get("windows") or [{}])[0]
tq = w.get("tick_query_ms", {})
print("  triggers/min %.0f expected %s received %s missing %s duplicates %s lateness p50/p99/p99.9/max %s/%s/%s/%s tick query p50/p99 %.0f/%.0f ms rss %.0f MB" % (
    d.get("triggers_per_min", 0), d.get("expected"), d.get("received"), d.get("missing"), d.get("duplicates"),
    lat.get("p50_ms"), lat.get("p99_ms"), lat.get("p999_ms"), lat.get("max_ms"),
    tq.get("p50", 0), tq.get("p99", 0), d.get("belfry_peak_rss_mb") or 0))
PYEOF
}
for round in $(seq 1 $ROUNDS); do
  if (( round % 2 )); then order="before after"; else order="after before"; fi
  for v in $order; do
    if [[ $v == before ]]; then turn $v-$round $BEFORE_BIN; else turn $v-$round $AFTER_BIN; fi
  done
done
"${SU[@]}" -d postgres -c "DROP DATABASE IF EXISTS i34_fa WITH (FORCE)"
scripts/local-stack kafka-topics --delete --topic "$T\\..*" > /dev/null 2>&1 || echo "deleting the $T.* topics failed"
