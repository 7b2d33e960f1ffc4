#!/usr/bin/env bash
# Issue 19, part 2 (branch `reshard`): one node firing 5.1M interval jobs (2.4M triggers/min, the
# database of 2026-11-27-standby) at 120 shards / 500 ms, then `belfry reshard --to 240` while it
# fires, then at 240 shards / 250 ms. Per layout a 120 s window (2026-11-27-standby-window.py:
# CPU, triggers/min, lateness buckets, the tick query's mean time and rows); the move is timed and
# sampled too.
# Run from the repository root on the local stack, with nothing else running.
set -euo pipefail
R=${R:-bench/results/2026-11-27-reshard}
eval "$(scripts/local-stack env)"
DB=belfry_bench_standby
export BELFRY_DATABASE_URL=postgresql://belfry:belfry@127.0.0.1:55432/$DB
export BELFRY_KAFKA_COMMANDS_TOPIC=lt.sb.commands BELFRY_KAFKA_RESULTS_TOPIC=lt.sb.command-results
export BELFRY_KAFKA_DLQ_TOPIC=lt.sb.commands.dlq BELFRY_KAFKA_CHANGES_TOPIC=lt.sb.changes
export BELFRY_KAFKA_GROUP_ID=belfry-lt-sb BELFRY_ADMIN_LISTEN=127.0.0.1:18490
export BELFRY_EXECUTIONS_ENABLED=false
M=http://127.0.0.1:18490/metrics
build/belfry migrate --skip-topics
build/belfry reshard
build/belfry serve >>"$R/node.log" 2>&1 &
NODE=$!
for _ in $(seq 120); do curl -sf localhost:18490/healthz >/dev/null && break; sleep 0.5; done
# Settle: the node first fires what it missed while it was down; measure the present only.
sleep 20
until curl -s "$M" | grep -q '^belfry_catch_up_debt_minutes 0$'; do sleep 5; done
sleep 30
python3 bench/scripts/2026-11-27-standby-window.py 120 "$M" > "$R/window-120.json"
echo "120: $(cat "$R/window-120.json")"
start=$(date +%s.%N)
python3 bench/scripts/2026-11-27-standby-window.py 60 "$M" > "$R/window-during-move.json" &
SAMPLER=$!
build/belfry reshard --to 240 --lead 60s > "$R/reshard.log" 2>&1
end=$(date +%s.%N)
echo "reshard took $(echo "$end - $start" | bc) s" | tee "$R/reshard-time.txt"
wait "$SAMPLER" || true
echo "during the move: $(cat "$R/window-during-move.json")"
tail -1 "$R/reshard.log"
# Past the cut-over minute, then settle.
cut=$(psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT (value::json->>'cutoverMinute')::bigint FROM belfry_meta WHERE key = 'layout'")
while (( $(date +%s) < cut * 60 + 75 )); do sleep 5; done
python3 bench/scripts/2026-11-27-standby-window.py 120 "$M" > "$R/window-240.json"
echo "240: $(cat "$R/window-240.json")"
kill -TERM "$NODE"; wait "$NODE" || true
