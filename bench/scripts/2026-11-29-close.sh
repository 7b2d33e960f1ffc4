#!/usr/bin/env bash
# The consumers' close (GroupMembership::Close, 6b42c0b: every member leaves the group before
# close()) is on the command path's shutdown, not its per-command work; checked all the same:
# `crud` and `verify` before (c7b0a6e, the last commit before this stop) and after (HEAD),
# alternated in one run, each on its own database of the same PostgreSQL. Same procedure as
# bench/scripts/2026-11-28-issue33.sh (seed, then per round verify 2m and crud 100k).
# Run from the repository root on the local stack.
set -uo pipefail
R=${R:-bench/results/2026-11-29-close}
eval "$(scripts/local-stack env)"; export BELFRY_KAFKA_BROKERS
BASE_URL=$BELFRY_DATABASE_URL
BEFORE_BIN=${BEFORE_BIN:-/tmp/before41/build/belfry}
AFTER_BIN=build/belfry
LT=build/bench/belfry-loadtest
JOBS=${JOBS:-300000}
ROUNDS=${ROUNDS:-2}
export BELFRY_EXECUTIONS_ENABLED=false BELFRY_ADMIN_LISTEN=127.0.0.1:18141
use() {  # use before|after: the environment of that variant
  v=$1
  bin=$BEFORE_BIN; [[ $v == after ]] && bin=$AFTER_BIN
  export BELFRY_DATABASE_URL=${BASE_URL%/*}/i41_$v
  export BELFRY_KAFKA_COMMANDS_TOPIC=lt41.$v.commands BELFRY_KAFKA_RESULTS_TOPIC=lt41.$v.results
  export BELFRY_KAFKA_DLQ_TOPIC=lt41.$v.dlq BELFRY_KAFKA_CHANGES_TOPIC=lt41.$v.changes
  export BELFRY_KAFKA_GROUP_ID=lt41-$v
}
start() {
  $bin serve > /tmp/i41-$v.log 2>&1 &
  NODE=$!
  for _ in $(seq 1 120); do curl -sf http://$BELFRY_ADMIN_LISTEN/readyz > /dev/null && break; sleep 0.5; done
}
stop() { kill -TERM $NODE; wait $NODE; }
for v in before after; do
  use $v
  psql -X -q "$BASE_URL" -c "DROP DATABASE IF EXISTS i41_$v" -c "CREATE DATABASE i41_$v" || exit 1
  $bin migrate > /dev/null || exit 1
  start
  $LT seed --jobs $JOBS --topics 8 --owners 50 --id-prefix s41- --topic-prefix lt41.$v.triggers. \
    > $R/seed-$v.json 2> $R/seed-$v.log
  echo "seed $v: $(cat $R/seed-$v.json | head -c 400)"
  stop
done
for r in $(seq 1 $ROUNDS); do
  order="before after"; ((r % 2 == 0)) && order="after before"
  for v in $order; do
    use $v
    start
    echo "round $r $v: load $(cut -d' ' -f1 /proc/loadavg)"
    $LT verify --duration 2m --topics-prefix lt41.$v.triggers. --belfry-pid $NODE \
      > $R/verify-$v-$r.json 2> $R/verify-$v-$r.log
    $LT crud --commands 100000 --cleanup --id-prefix c41-$r- --topic-prefix lt41.$v.crud. \
      > $R/crud-$v-$r.json 2> $R/crud-$v-$r.log
    stop
  done
done
python3 - $R <<'PYEOF'
import glob, json, os, sys
R = sys.argv[1]
for kind in ("seed", "verify", "crud"):
    for f in sorted(glob.glob(os.path.join(R, kind + "-*.json"))):
        try:
            d = json.load(open(f))
        except Exception as e:
            print(os.path.basename(f), "unreadable:", e); continue
        keep = {k: v for k, v in d.items() if not isinstance(v, (list, dict))}
        print(os.path.basename(f), json.dumps(keep)[:600])
PYEOF
