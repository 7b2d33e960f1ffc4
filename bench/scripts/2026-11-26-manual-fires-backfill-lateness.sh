#!/usr/bin/env bash
# Tick lateness while 40 backfills of 9,990 slots each fire beside 3.02M triggers/min.
set -uo pipefail
cd /work/main
source /tmp/cuenv.sh
R=${R:-bench/results/2026-11-26-manual-fires}
psql "$BELFRY_DATABASE_URL" -qc "DELETE FROM jobs WHERE retry_of IS NOT NULL" -c "DELETE FROM backfills" -c "VACUUM ANALYZE jobs"
BELFRY_SCHEDULER_MISFIRE_POLICY=skip build/belfry serve > /tmp/bf-lateness-node.log 2>&1 &
NODE=$!
for i in $(seq 1 60); do curl -sf http://$BELFRY_ADMIN_LISTEN/readyz >/dev/null && break; sleep 1; done
echo "[bf] $(date -u +%T) node up; settling 90 s"
sleep 90
build/bench/belfry-loadtest verify --duration 8m --grace 30s --report-window 1m --belfry-pid $NODE \
  --admin $BELFRY_ADMIN_LISTEN --plot $R/backfill-lateness > $R/backfill-lateness.json 2> $R/backfill-lateness.log &
VERIFY=$!
sleep 200
now=$(date -u +%s); to=$(( (now/60 - 1) * 60 )); from=$(( to - 9990*60 ))
FROM=$(date -u -d @$from +%Y-%m-%dT%H:%M:%SZ); TO=$(date -u -d @$to +%Y-%m-%dT%H:%M:%SZ)
echo "[bf] $(date -u +%T.%N) backfills from $FROM to $TO start"
while read -r id; do
  build/belfry jobs backfill "$id" --from "$FROM" --to "$TO" --rate 10000 >> $R/backfill-lateness-outcomes.txt 2>&1
done < /tmp/bf_ids40.txt
echo "[bf] $(date -u +%T.%N) backfills published and applied"
wait $VERIFY
echo "[bf] $(date -u +%T) verify rc=$?"
kill $NODE; wait $NODE
