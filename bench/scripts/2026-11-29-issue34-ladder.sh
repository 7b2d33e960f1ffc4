#!/usr/bin/env bash
# Issue 34, "the highest rate that holds" p99 <= 250 ms: one node at HEAD on a database of its own,
# seeded (scheduler off, a bulk load) with JOBS every-minute jobs over OWNERS owners (`seed --mix
# 1:100 --owners 5`: about 1M jobs per owner), then restarted with the scheduler on. `verify` for
# DURATION at the full rate, then again after each `belfry bulk pause --owner lt-owner-K` (K in
# PAUSE), each pause one owner's ~1M jobs fewer: 5M, 4M, 3M triggers/min by default (6M: the 6M run). Each
# verify records the tick query's quantiles (`--admin`), the node's RSS and a 60 s CPU split.
# The database and the run's topics are deleted afterwards. Run from the repository root on the
# local stack, alone on the machine (about 25 minutes).
set -uo pipefail
R=${R:-bench/results/2026-11-29-issue34-ladder}
mkdir -p $R
eval "$(scripts/local-stack env)"; export BELFRY_KAFKA_BROKERS
BASE_URL=$BELFRY_DATABASE_URL
JOBS=${JOBS:-5000000} OWNERS=${OWNERS:-5} DURATION=${DURATION:-3m} PAUSE=${PAUSE:-0 1}
LT=build/bench/belfry-loadtest
T=ltlad-$(date +%s)
export BELFRY_DATABASE_URL=${BASE_URL%/*}/i34_ladder
export BELFRY_KAFKA_COMMANDS_TOPIC=$T.commands BELFRY_KAFKA_RESULTS_TOPIC=$T.results
export BELFRY_KAFKA_DLQ_TOPIC=$T.dlq BELFRY_KAFKA_CHANGES_TOPIC=$T.changes BELFRY_KAFKA_GROUP_ID=$T
export BELFRY_EXECUTIONS_ENABLED=false BELFRY_ADMIN_LISTEN=127.0.0.1:18165
export BELFRY_COMMANDS_BULK_STEP_JOBS=10000  # a pause of ~1M jobs in ~100 steps: the ladder's waits
psql -X -q "$BASE_URL" -c "DROP DATABASE IF EXISTS i34_ladder WITH (FORCE)" -c "CREATE DATABASE i34_ladder" || exit 1
build/belfry migrate > /dev/null || exit 1
start_node() {  # $1: scheduler on or off
  BELFRY_SCHEDULER_ENABLED=$1 build/belfry serve >> /tmp/i34-ladder.log 2>&1 &
  NODE=$!
  for _ in $(seq 1 120); do curl -sf http://$BELFRY_ADMIN_LISTEN/readyz > /dev/null && break; sleep 0.5; done
}
start_node false
$LT seed --jobs $JOBS --mix 1:100 --owners $OWNERS --timeout 30m --id-prefix lad- --topic-prefix $T.triggers. \
  > $R/seed.json 2> $R/seed.log
echo "seed: $(python3 -c "import json;d=json.load(open('$R/seed.json'));print(d['applied'],d['applied_per_s'])")"
until [[ $(psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT count(*) FROM jobs") -ge $JOBS ]]; do sleep 10; done
kill -TERM $NODE; wait $NODE
start_node true
sleep 75  # every shard fires a few times before the first window
step() {  # $1: the step's name
  echo "== $1 $(date -u +%H:%M:%S)"
  bench/cpu_split 60 > $R/cpu-split-$1.txt 2>&1 &
  $LT verify --duration $DURATION --topics-prefix $T.triggers. --belfry-pid $NODE --admin $BELFRY_ADMIN_LISTEN \
    --report-window $DURATION > $R/verify-$1.json 2> $R/verify-$1.log
  python3 - $R/verify-$1.json <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
lat = d.get("lateness", {})
w = (d.get("by_window", {}).get("windows") or [{}])[0]
print("  jobs %s paused %s triggers/min %.0f expected %s received %s missing %s duplicates %s lateness p50/p99/p99.9/max %s/%s/%s/%s rss %s tick query %s" % (
    d.get("jobs"), d.get("paused_jobs"), d.get("triggers_per_min", 0), d.get("expected"), d.get("received"),
    d.get("missing"), d.get("duplicates"), lat.get("p50_ms"), lat.get("p99_ms"), lat.get("p999_ms"),
    lat.get("max_ms"), d.get("belfry_peak_rss_mb"), w.get("tick_query")))
PYEOF
}
step full
for k in $PAUSE; do
  build/belfry bulk pause --owner lt-owner-$k --reason "issue 34 ladder" > $R/pause-$k.log 2>&1 || echo "pause of lt-owner-$k failed"
  sleep 20
  step paused-$k
done
psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT paused, count(*) FROM jobs GROUP BY 1" > $R/paused-counts.txt
kill -TERM $NODE; wait $NODE
psql -X -q "$BASE_URL" -c "DROP DATABASE IF EXISTS i34_ladder WITH (FORCE)"
scripts/local-stack kafka-topics --delete --topic "$T\\..*" > /dev/null 2>&1 || echo "deleting the $T.* topics failed"
