#!/usr/bin/env bash
# The audit trail's cost (BENCHMARKS.md, "Issue 18: the audit trail's cost"): the same round of
# commands against a node built before the audit trail (BEFORE_BIN, commit 0ccab7c) and one with
# it (build/belfry), alternating, each on its own database of the same PostgreSQL server.
set -uo pipefail
cd /work/main
eval "$(scripts/local-stack env)"; export BELFRY_KAFKA_BROKERS
BASE_URL=$BELFRY_DATABASE_URL
R=${R:-bench/results/2026-11-26-audit}
PY=${PY:-/tmp/benchvenv/bin/python}
BEFORE_BIN=${BEFORE_BIN:-/tmp/before/build/belfry}
AFTER_BIN=build/belfry
C=$(git rev-parse --short HEAD)
export BELFRY_ADMIN_LISTEN=127.0.0.1:18081 BELFRY_EXECUTIONS_ENABLED=false BELFRY_SCHEDULER_ENABLED=false
export BELFRY_COMMANDS_BULK_STEP_PAUSE=0ms
for v in before after; do
  psql "$BASE_URL" -qc "DROP DATABASE IF EXISTS audit_$v" -c "CREATE DATABASE audit_$v" 2>/dev/null
done
ROUNDS=${ROUNDS:-3}
: > $R/audit-cost-$C.jsonl
for r in $(seq 1 $ROUNDS); do
  order="before after"; ((r % 2 == 0)) && order="after before"
  for v in $order; do
    bin=$BEFORE_BIN; [[ $v == after ]] && bin=$AFTER_BIN
    export BELFRY_DATABASE_URL=${BASE_URL%/*}/audit_$v
    export BELFRY_KAFKA_COMMANDS_TOPIC=bench.audit.$v.commands BELFRY_KAFKA_GROUP_ID=bench-audit-$v
    export BELFRY_KAFKA_RESULTS_TOPIC=bench.audit.$v.results BELFRY_KAFKA_DLQ_TOPIC=bench.audit.$v.dlq
    export BELFRY_KAFKA_CHANGES_TOPIC=bench.audit.$v.changes
    $bin migrate > /dev/null || exit 1
    $bin serve > /tmp/audit-bench-$v.log 2>&1 &
    NODE=$!
    for i in $(seq 1 60); do curl -sf http://$BELFRY_ADMIN_LISTEN/readyz >/dev/null && break; sleep 1; done
    sleep 5  # the consumer's group join
    line=$($PY bench/scripts/2026-11-26-audit-cost.py "au$r$v-$(date +%s)")
    echo "{\"round\":$r,\"binary\":\"$v\",\"result\":$line}" | tee -a $R/audit-cost-$C.jsonl
    kill $NODE; wait $NODE
  done
done
$PY - $R/audit-cost-$C.jsonl <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for v in ('before', 'after'):
    rs = [r['result'] for r in rows if r['binary'] == v]
    print(v, json.dumps({k: statistics.median(x[k] for x in rs) for k in rs[0]}))
PYEOF
