#!/usr/bin/env bash
# Issue 34, "6M triggers/min at p99 <= 250 ms": one node at HEAD on a database of its own, seeded
# with JOBS every-minute jobs through the harness (`seed --mix 1:100`, as the issue's 5M run),
# then `verify` for DURATION with the node's peak RSS. 120 shards (the default); for 240 shards at
# 250 ms, set BELFRY_SCHEDULER_SHARD_COUNT=240 BELFRY_SCHEDULER_TICK=250ms. Afterwards the
# database is dropped. Run from the repository root on the local stack, with nothing else running.
set -uo pipefail
R=${R:-bench/results/2026-11-29-issue34-6m}
mkdir -p $R
eval "$(scripts/local-stack env)"; export BELFRY_KAFKA_BROKERS
BASE_URL=$BELFRY_DATABASE_URL
JOBS=${JOBS:-6000000}
DURATION=${DURATION:-5m}
LT=build/bench/belfry-loadtest
export BELFRY_DATABASE_URL=${BASE_URL%/*}/i34_6m
export BELFRY_KAFKA_COMMANDS_TOPIC=lt6m.commands BELFRY_KAFKA_RESULTS_TOPIC=lt6m.results
export BELFRY_KAFKA_DLQ_TOPIC=lt6m.dlq BELFRY_KAFKA_CHANGES_TOPIC=lt6m.changes BELFRY_KAFKA_GROUP_ID=lt6m
export BELFRY_EXECUTIONS_ENABLED=false BELFRY_ADMIN_LISTEN=127.0.0.1:18160
psql -X -q "$BASE_URL" -c "DROP DATABASE IF EXISTS i34_6m WITH (FORCE)" -c "CREATE DATABASE i34_6m" || exit 1
build/belfry migrate > /dev/null || exit 1
build/belfry serve > /tmp/i34-6m.log 2>&1 &
NODE=$!
for _ in $(seq 1 120); do curl -sf http://$BELFRY_ADMIN_LISTEN/readyz > /dev/null && break; sleep 0.5; done
$LT seed --jobs $JOBS --mix 1:100 --id-prefix m6- --topic-prefix lt6m.triggers. > $R/seed.json 2> $R/seed.log
echo "seed: $(python3 -c "import json;d=json.load(open('$R/seed.json'));print(d['applied'],d['applied_per_s'])")"
# The harness stops waiting 5 min after publishing; the node goes on applying. Verify only once
# every job is stored, or the jobs created during the window count as unexpected.
until [[ $(psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT count(*) FROM jobs") -ge $JOBS ]]; do sleep 10; done
psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT pg_size_pretty(pg_database_size(current_database()))" > $R/db-size.txt
bench/cpu_split 60 > $R/cpu-split.txt 2>&1 &
$LT verify --duration $DURATION --topics-prefix lt6m.triggers. --belfry-pid $NODE > $R/verify.json 2> $R/verify.log
kill -TERM $NODE; wait $NODE
python3 - $R <<'PYEOF'
import json, sys
R = sys.argv[1]
d = json.load(open(R + "/verify.json"))
keep = {k: v for k, v in d.items() if not isinstance(v, list)}
print(json.dumps(keep)[:1500])
PYEOF
psql -X -q "$BASE_URL" -c "DROP DATABASE IF EXISTS i34_6m WITH (FORCE)"
