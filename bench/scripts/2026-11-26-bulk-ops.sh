#!/usr/bin/env bash
# Bulk operations over 1M jobs on a node firing them (BENCHMARKS.md, "Issue 18: bulk operations").
set -uo pipefail
cd /work/main
eval "$(scripts/local-stack env)"; export BELFRY_DATABASE_URL BELFRY_KAFKA_BROKERS
export BELFRY_ADMIN_LISTEN=127.0.0.1:18080 BELFRY_EXECUTIONS_ENABLED=false BELFRY_SCHEDULER_MISFIRE_POLICY=skip
R=${R:-bench/results/2026-11-26-bulk-ops}
C=$(git rev-parse --short HEAD)${BULK_VARIANT:+-$BULK_VARIANT}
psql "$BELFRY_DATABASE_URL" -qc "DELETE FROM jobs" -c "DELETE FROM bulk_ops" -c "DELETE FROM cron_slots"
build/belfry serve > /tmp/bulk-bench-node.log 2>&1 &
NODE=$!
for i in $(seq 1 60); do curl -sf http://$BELFRY_ADMIN_LISTEN/readyz >/dev/null && break; sleep 1; done
echo "[bulk] $(date -u +%T) node up; seeding 1M jobs of one owner"
build/bench/belfry-loadtest seed --jobs 1000000 --owners 1 --id-prefix bk- > $R/seed-$C.json 2> /tmp/bulk-seed.log
echo "[bulk] $(date -u +%T) seeded: $(psql "$BELFRY_DATABASE_URL" -Atc 'select count(*) from jobs')"
# 10% of them labelled wave=w3, by a hash of the id (an UPDATE: the command path would take as long as the seed).
psql "$BELFRY_DATABASE_URL" -qc "UPDATE jobs SET labels = '{\"wave\":\"w3\"}' WHERE (hashtext(id) & 1023) < 102" \
  -c "VACUUM ANALYZE jobs"
echo "[bulk] $(date -u +%T) labelled: $(psql "$BELFRY_DATABASE_URL" -Atc "select count(*) from jobs where labels <> '{}'"); settling 60 s"
sleep 60
python3 bench/scripts/2026-11-26-bulk-ops.py lt-owner-0 wave=w3 > $R/bulk-ops-$C.json 2> $R/bulk-ops-$C.log
echo "[bulk] $(date -u +%T) done rc=$?"
kill $NODE; wait $NODE
