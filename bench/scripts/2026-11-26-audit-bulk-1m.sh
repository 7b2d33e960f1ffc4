#!/usr/bin/env bash
# Bulk operations over 1M jobs on a firing node, with the audit trail (BENCHMARKS.md, "Issue 18:
# the audit trail's cost"): bulk pause, resume and delete by owner (3M changes recorded), their
# time, the tick's lateness and a per-job command's round trip during each
# (bench/scripts/2026-11-26-bulk-ops.py), and the change publisher's backlog sampled every 10 s.
set -uo pipefail
cd /work/main
eval "$(scripts/local-stack env)"; export BELFRY_DATABASE_URL BELFRY_KAFKA_BROKERS
export BELFRY_ADMIN_LISTEN=127.0.0.1:18080 BELFRY_EXECUTIONS_ENABLED=false BELFRY_SCHEDULER_MISFIRE_POLICY=skip
R=${R:-bench/results/2026-11-26-audit}
C=$(git rev-parse --short HEAD)
build/belfry migrate > /dev/null || exit 1
psql "$BELFRY_DATABASE_URL" -qc "DELETE FROM jobs" -c "DELETE FROM bulk_ops" -c "DELETE FROM cron_slots" \
  -c "TRUNCATE job_changes" -c "VACUUM ANALYZE jobs"
build/belfry serve > /tmp/bulk-audit-node.log 2>&1 &
NODE=$!
for i in $(seq 1 60); do curl -sf http://$BELFRY_ADMIN_LISTEN/readyz >/dev/null && break; sleep 1; done
echo "[bulk] $(date -u +%T) node up; seeding 1M jobs of one owner"
build/bench/belfry-loadtest seed --jobs 1000000 --owners 1 --id-prefix bk- > $R/seed-$C.json 2> /tmp/bulk-seed.log
echo "[bulk] $(date -u +%T) seeded: $(psql "$BELFRY_DATABASE_URL" -Atc 'select count(*) from jobs')"
psql "$BELFRY_DATABASE_URL" -qc "VACUUM ANALYZE jobs"
( while sleep 10; do
    echo "$(date -u +%T) $(psql "$BELFRY_DATABASE_URL" -Atc "SELECT count(*), count(*) FILTER (WHERE NOT published), pg_size_pretty(pg_total_relation_size('job_changes')) FROM job_changes")"
  done ) > $R/backlog-$C.log 2>&1 &
SAMPLER=$!
sleep 30
BULK_OPS="pause, owner;resume, owner;delete, owner" python3 bench/scripts/2026-11-26-bulk-ops.py lt-owner-0 wave=w3 \
  > $R/bulk-1m-$C.json 2> $R/bulk-1m-$C.log
echo "[bulk] $(date -u +%T) ops done rc=$?"
t0=$(date +%s)
until [[ $(psql "$BELFRY_DATABASE_URL" -Atc "SELECT count(*) FROM job_changes WHERE NOT published") == 0 ]]; do sleep 1; done
echo "[bulk] $(date -u +%T) publisher drained $(( $(date +%s) - t0 )) s after the last op; $(psql "$BELFRY_DATABASE_URL" -Atc "SELECT count(*), pg_size_pretty(pg_total_relation_size('job_changes')) FROM job_changes")"
kill $SAMPLER
grep -E "change|published" /tmp/bulk-audit-node.log | tail -3
kill $NODE; wait $NODE
