#!/usr/bin/env bash
# Stop 44 (2026-11-29): the command and trigger paths at fe4b16b (before issue 34's changes), at
# this session's start (031eda3) and at HEAD, in one run on one machine, each node on a database of
# its own of the same PostgreSQL, with its own commit's migrations. Made from
# 2026-11-29-issue34-compare.sh, with the variants renamed and the run's topics deleted at the end:
#   - `seed --jobs 200000` (creates only), and the audit table's bytes per create;
#   - then ROUNDS rounds, the variants' order alternating: `crud --commands 100000 --cleanup` at
#     full speed (create 50 / update 30 / delete 20), and (before and after only) `verify 2m`;
#   - (before and after) a bulk pause of one owner's jobs: the audit table's bytes per pause;
#   - (PACED_VARIANTS, default after) `crud` paced at 10k/s, command -> applied p99.
# Run from the repository root on the local stack, with nothing else running:
#   BEFORE_BIN=/work/before/build/belfry START_BIN=/work/start44/build/belfry bench/scripts/2026-11-29-stop44-compare.sh
set -uo pipefail
R=${R:-bench/results/2026-11-29-stop44-compare}
mkdir -p $R
eval "$(scripts/local-stack env)"; export BELFRY_KAFKA_BROKERS
BASE_URL=$BELFRY_DATABASE_URL
BEFORE_BIN=${BEFORE_BIN:?}
START_BIN=${START_BIN:?}
AFTER_BIN=build/belfry
LT=build/bench/belfry-loadtest
JOBS=${JOBS:-200000}
ROUNDS=${ROUNDS:-2}
VARIANTS=${VARIANTS:-before start after}
RUN=${RUN:-$(date +%s)}
export BELFRY_EXECUTIONS_ENABLED=false BELFRY_ADMIN_LISTEN=127.0.0.1:18134
use() {  # use before|start|after: the environment of that variant
  v=$1
  case $v in before) bin=$BEFORE_BIN ;; start) bin=$START_BIN ;; after) bin=$AFTER_BIN ;; esac
  # Each node migrates its database with its own commit's migrations (build/belfry -> ../migrations):
  # run from this checkout, an older node would otherwise get this checkout's schema.
  export BELFRY_MIGRATIONS_DIR=$(cd "$(dirname "$bin")/.." && pwd)/migrations
  export BELFRY_DATABASE_URL=${BASE_URL%/*}/s44_$v
  # Topics and group of this run only (an interrupted earlier run's committed offsets would
  # make a node apply that run's leftover commands first).
  export BELFRY_KAFKA_COMMANDS_TOPIC=lt44.$RUN.$v.commands BELFRY_KAFKA_RESULTS_TOPIC=lt44.$RUN.$v.results
  export BELFRY_KAFKA_DLQ_TOPIC=lt44.$RUN.$v.dlq BELFRY_KAFKA_CHANGES_TOPIC=lt44.$RUN.$v.changes
  export BELFRY_KAFKA_GROUP_ID=lt44-$RUN-$v
}
start() {
  $bin serve > /tmp/s44-$v.log 2>&1 &
  NODE=$!
  for _ in $(seq 1 120); do curl -sf http://$BELFRY_ADMIN_LISTEN/readyz > /dev/null && break; sleep 0.5; done
}
stop() { kill -TERM $NODE; wait $NODE; }
audit() {  # audit <label>: rows, bytes on disk (table + indexes), per row
  psql -X -At "$BELFRY_DATABASE_URL" -c "VACUUM job_changes" -c "SELECT '$v $1', count(*),
      pg_total_relation_size('job_changes'),
      CASE WHEN count(*) > 0 THEN pg_total_relation_size('job_changes') / count(*) END
    FROM job_changes" >> $R/audit-size.txt
}
: > $R/audit-size.txt
for v in $VARIANTS; do
  use $v
  psql -X -q "$BASE_URL" -c "DROP DATABASE IF EXISTS s44_$v WITH (FORCE)" -c "CREATE DATABASE s44_$v" || exit 1
  $bin migrate > /dev/null || exit 1
  start
  audit empty
  $LT seed --jobs $JOBS --topics 8 --owners 50 --id-prefix s44- --topic-prefix lt44.$v.triggers. \
    > $R/seed-$v.json 2> $R/seed-$v.log
  echo "seed $v: $(head -c 300 $R/seed-$v.json)"
  audit after-seed
  if true; then
    owner=$(psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT owner FROM jobs WHERE owner IS NOT NULL LIMIT 1")
    n=$(psql -X -At "$BELFRY_DATABASE_URL" -c "SELECT count(*) FROM jobs WHERE owner = '$owner'")
    $bin bulk pause --owner "$owner" --reason "issue 34 size check" --actor bench --timeout 2m > $R/pause-$v.log 2>&1
    echo "bulk pause of $n jobs ($owner): $(tail -1 $R/pause-$v.log | head -c 200)"
    audit "after-pause-of-$n"
  fi
  stop
done
for r in $(seq 1 $ROUNDS); do
  order=$VARIANTS; ((r % 2 == 0)) && order=$(tr ' ' '\n' <<<"$VARIANTS" | tac | tr '\n' ' ')
  for v in $order; do
    use $v
    start
    echo "round $r $v: load $(cut -d' ' -f1 /proc/loadavg)"
    $LT crud --commands 100000 --cleanup --id-prefix c44-$r- --topic-prefix lt44.$v.crud. \
      > $R/crud-$v-$r.json 2> $R/crud-$v-$r.log
    audit "after-crud-$r"
    if true; then
      $LT verify --duration 2m --topics-prefix lt44.$v.triggers. --belfry-pid $NODE \
        > $R/verify-$v-$r.json 2> $R/verify-$v-$r.log
    fi
    stop
  done
done
for v in ${PACED_VARIANTS:-before after}; do  # `crud` paced at 10k/s, command -> applied p99
  [[ " $VARIANTS " == *" $v "* ]] || continue
  use $v
  start
  $LT crud --commands 300000 --rate 10000 --warmup-s 5 --cleanup --id-prefix p44- --topic-prefix lt44.$v.paced. \
    > $R/crud-paced-$v.json 2> $R/crud-paced-$v.log
  stop
done
# This run's topics go when it ends (a 10M run left 57 GB of them behind).
# (TopicCommand's --topic takes a regular expression when deleting.)
scripts/local-stack kafka-topics --delete --topic 'lt44\..*' > /dev/null 2>&1 || echo "deleting the lt44.* topics failed"
python3 - $R <<'PYEOF'
import glob, json, os, sys
R = sys.argv[1]
for kind in ("seed", "crud", "verify"):
    for f in sorted(glob.glob(os.path.join(R, kind + "-*.json"))):
        try:
            d = json.load(open(f))
        except Exception as e:
            print(os.path.basename(f), "unreadable:", e); continue
        keep = {k: v for k, v in d.items() if not isinstance(v, list)}
        print(os.path.basename(f), json.dumps(keep)[:700])
print(open(os.path.join(R, "audit-size.txt")).read())
PYEOF
