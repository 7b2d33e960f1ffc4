#!/usr/bin/env bash
# Issue 36, the side-by-side benchmark: the same JOBS-job mix (the harness's default interval mix,
# 16 topics) on the local stack's single PostgreSQL (database cs_plain, port 55432) and on the
# local Citus cluster (database cs_citus: coordinator 55460, workers 55461 and 55462), one run,
# one machine. Each measurement runs on both, one after the other, with only one belfry running.
#
#  1. both databases made and migrated (`belfry migrate`; on Citus it distributes the tables);
#  2. JOBS jobs seeded into cs_plain through Kafka (`seed`, scheduler off: applied/s), then the
#     jobs rows copied into cs_citus (COPY out of one, COPY into the coordinator, which routes
#     each row to its worker): seeding 5M through the command path a second time would take this
#     machine half an hour, and `crud` below measures the command path on both;
#  3. the tick query as belfry runs it (`tick_timer ticks`, every node stopped), ROUNDS rounds in
#     alternating order: plain, Citus through the coordinator over every shard, and for the belfry
#     shards that worker1 holds: through the coordinator, and sent straight to worker1 (the
#     worker plans the same statement from its copy of Citus's metadata and runs it locally);
#  4. `crud --commands CRUD --cleanup` (create 50 / update 30 / delete 20, at full speed) with the
#     scheduler off, ROUNDS rounds alternating;
#  5. `verify --duration DURATION` with the scheduler on (VERIFY_VARIANTS, default "plain citus";
#     citus-coordinator is Citus with citus.tick_on_workers off: run 3 compares the two), the node's peak RSS, the tick query per
#     window from /metrics, and `bench/cpu_split` (CPU of each server process: belfry, the broker,
#     each PostgreSQL server) over the middle of the window.
#
# PHASES (default "setup seed ticks crud verify") picks the parts to run; a later run on the
# databases of an earlier one (KEEP_DB=1 there) sets PHASES="crud verify" and a new RUN (the
# commands topics and groups are per RUN, so an interrupted run's unapplied commands stay behind).
#
# Binaries: BIN, LT, TT (copies of build/belfry, build/bench/belfry-loadtest,
# build/bench/tick_timer in Release). Run from the repository root with the local stack and the
# Citus cluster up and nothing else running. Both databases are dropped at the end unless
# KEEP_DB=1; the run's topics are deleted.
set -uo pipefail
R=${R:-bench/results/2026-11-29-citus-side-by-side}
mkdir -p $R
eval "$(scripts/local-stack env)"; export BELFRY_KAFKA_BROKERS
BASE_URL=$BELFRY_DATABASE_URL
BIN=${BIN:-/tmp/cs/belfry} LT=${LT:-/tmp/cs/belfry-loadtest} TT=${TT:-/tmp/cs/tick_timer}
JOBS=${JOBS:-5000000} DURATION=${DURATION:-5m} TICKS=${TICKS:-600} CRUD=${CRUD:-100000} ROUNDS=${ROUNDS:-2}
CPU_WINDOW=${CPU_WINDOW:-180}
PHASES=${PHASES:-setup seed ticks crud verify} RUN=${RUN:-1}
phase() { [[ " $PHASES " == *" $1 "* ]]; }
DB=cs_citus
source bench/scripts/lib-citus.sh
PLAIN_DB=cs_plain
declare -A URL=([plain]=${BASE_URL%/*}/$PLAIN_DB [citus]=$(citus_url coordinator))
T=ltcs
export BELFRY_MIGRATIONS_DIR=$PWD/migrations BELFRY_EXECUTIONS_ENABLED=false BELFRY_ADMIN_LISTEN=127.0.0.1:18168
ADMIN=http://$BELFRY_ADMIN_LISTEN
now() { date -u +%H:%M:%S; }
log() { echo "$(now) $*" | tee -a $R/run.txt; }

NODE=
db_of() { [[ $1 == plain ]] && echo plain || echo citus; }
start_node() {  # variant scheduler(true|false) log
  # citus: the tick query straight to the worker (citus.tick_on_workers, the default since run 3);
  # citus-coordinator: every tick through the coordinator.
  local on_workers=true; [[ $1 == citus-coordinator ]] && on_workers=false
  BELFRY_DATABASE_URL=${URL[$(db_of $1)]} BELFRY_SCHEDULER_ENABLED=$2 BELFRY_CITUS_TICK_ON_WORKERS=$on_workers \
    BELFRY_KAFKA_COMMANDS_TOPIC=$T.$RUN.$1.commands BELFRY_KAFKA_RESULTS_TOPIC=$T.$RUN.$1.results \
    BELFRY_KAFKA_DLQ_TOPIC=$T.$RUN.$1.dlq BELFRY_KAFKA_CHANGES_TOPIC=$T.$RUN.$1.changes BELFRY_KAFKA_GROUP_ID=$T.$RUN.$1 \
    $BIN serve >> $3 2>&1 &
  NODE=$!
  for _ in $(seq 1 240); do curl -sf $ADMIN/readyz > /dev/null && return 0; sleep 0.5; done
  log "belfry ($1) did not become ready: $(tail -3 $3)"; return 1
}
stop_node() { [[ -n $NODE ]] && { kill -TERM $NODE; wait $NODE; NODE=; }; }
lt() {  # variant subcommand args...: the harness against the variant's database and topics
  local v=$1; shift
  $LT "$@" --database-url ${URL[$(db_of $v)]} --commands-topic $T.$RUN.$v.commands --results-topic $T.$RUN.$v.results
}
cleanup() {
  trap - EXIT INT TERM
  stop_node
  if [[ ${KEEP_DB:-0} != 1 ]]; then
    citus_drop_db
    psql -X -q "$BASE_URL" -c "DROP DATABASE IF EXISTS $PLAIN_DB WITH (FORCE)"
  fi
  [[ ${KEEP_DB:-0} == 1 ]] && return
  scripts/local-stack kafka-topics --delete --topic "$T\\..*" > /dev/null 2>&1 || echo "deleting the $T.* topics failed"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 1. databases
if phase setup; then
: > $R/run.txt
log "machine: $(nproc) cores, $(awk '/model name/{$1=$2=$3=""; print; exit}' /proc/cpuinfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
psql -X -q "$BASE_URL" -c "DROP DATABASE IF EXISTS $PLAIN_DB WITH (FORCE)" -c "CREATE DATABASE $PLAIN_DB" || exit 1
citus_create_db || { log "citus database failed"; exit 1; }
for v in plain citus; do
  t0=$(date +%s.%N)
  BELFRY_DATABASE_URL=${URL[$v]} $BIN migrate > $R/migrate-$v.log 2>&1 || { cat $R/migrate-$v.log; exit 1; }
  log "migrate $v: $(echo "$(date +%s.%N) - $t0" | bc) s"
done
fi

# ---- 2. seed plain through Kafka, copy the rows into Citus
if phase seed; then
start_node plain false $R/belfry-plain-seed.log || exit 1
lt plain seed --jobs $JOBS --topics 16 --timeout 30m --id-prefix cs- --topic-prefix $T.triggers. \
  > $R/seed-plain.json 2> $R/seed-plain.log
until [[ $(psql -X -At "${URL[plain]}" -c "SELECT count(*) FROM jobs") -ge $JOBS ]]; do sleep 10; done
stop_node
log "seed plain: $(python3 -c "import json;d=json.load(open('$R/seed-plain.json'));print(d['applied'], 'applied,', d['applied_per_s'], '/s')")"
COLS=$(psql -X -At "${URL[plain]}" -c "SELECT string_agg(quote_ident(attname), ',' ORDER BY attnum) FROM pg_attribute
  WHERE attrelid = 'jobs'::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = ''")
t0=$(date +%s.%N)
psql -X -q "${URL[plain]}" -c "\\copy (SELECT $COLS FROM jobs) TO STDOUT" |
  psql -X -q -v ON_ERROR_STOP=1 "${URL[citus]}" -c "\\copy jobs ($COLS) FROM STDIN" || { log "copy failed"; exit 1; }
log "copy into citus: $(echo "$(date +%s.%N) - $t0" | bc) s"
for v in plain citus; do psql -X -q "${URL[$v]}" -c "VACUUM ANALYZE jobs"; done
for v in plain citus; do
  log "$v: $(psql -X -At "${URL[$v]}" -c "SELECT count(*) || ' jobs, ' || count(DISTINCT shard) || ' shards' FROM jobs")"
done
JOBS_SIZE="SELECT pg_size_pretty(sum(%s(inhrelid))) FROM pg_inherits WHERE inhparent = 'jobs'::regclass"
log "jobs with their indexes: plain $(psql -X -At "${URL[plain]}" -c "$(printf "$JOBS_SIZE" pg_total_relation_size)")," \
  "Citus $(citus_coord -c "$(printf "$JOBS_SIZE" citus_total_relation_size)")"
fi
log "run $RUN, phases: $PHASES; binary $BIN ($(md5sum < $BIN | cut -c1-12))"
citus_shard_map > $R/shard-map.txt
W1=$(awk '$2 == 55461 { print $1 }' $R/shard-map.txt | paste -sd,)
log "belfry shards on worker1: $(tr ',' '\n' <<<"$W1" | wc -l); on worker2: $(awk '$2 == 55462' $R/shard-map.txt | wc -l)"

# ---- 3. the tick query, every node stopped
phase ticks && for r in $(seq 1 $ROUNDS); do
  order="plain citus citus-w1-coordinator citus-w1-direct"
  (( r % 2 == 0 )) && order="citus-w1-direct citus-w1-coordinator citus plain"
  for k in $order; do
    case $k in
      plain) args=(--database-url ${URL[plain]}) ;;
      citus) args=(--database-url ${URL[citus]}) ;;
      citus-w1-coordinator) args=(--database-url ${URL[citus]} --shards $W1) ;;
      citus-w1-direct) args=(--database-url $(citus_url worker1) --shards $W1) ;;
    esac
    $TT ticks --count $TICKS --seed $r "${args[@]}" > $R/ticks-$k-$r.json 2> $R/ticks-$k-$r.log
    log "ticks $k round $r: $(python3 -c "import json;d=json.load(open('$R/ticks-$k-$r.json'));print('p50', d['p50_ms'], 'p99', d['p99_ms'], 'ms, rows/tick', d['rows_per_tick_mean'])")"
  done
done

# ---- 4. commands at full speed, scheduler off
phase crud && for r in $(seq 1 $ROUNDS); do
  order="plain citus"; (( r % 2 == 0 )) && order="citus plain"
  for v in $order; do
    start_node $v false $R/belfry-$v-crud.log || exit 1
    lt $v crud --commands $CRUD --cleanup --id-prefix cc$RUN-$r- --topic-prefix $T.crud. \
      > $R/crud-$v-$RUN-$r.json 2> $R/crud-$v-$RUN-$r.log
    stop_node
    log "crud $v run $RUN round $r: $(python3 -c "import json;d=json.load(open('$R/crud-$v-$RUN-$r.json'));print(d.get('applied_per_s'), 'applied/s, timed out:', d.get('timed_out'))")"
  done
done

# ---- 5. firing, verified
phase verify && for v in ${VERIFY_VARIANTS:-plain citus}; do
  start_node $v true $R/belfry-$v-verify.log || exit 1
  # A node that starts after a gap first fires the missed minutes (paced: run 4's 22 shard-minutes
  # took 3 minutes), and those firings land in the window's CPU and tick figures: wait until no
  # missed minute is owed (run 5 on), after the first catch-up scans have counted it.
  sleep 5
  for _ in $(seq 1 600); do
    debt=$(curl -s $ADMIN/metrics | awk '/^belfry_catch_up_debt_minutes / { print $2 }')
    [[ $debt == 0 ]] && break
    sleep 1
  done
  log "verify $v: catch-up debt ${debt:-unknown} at $(now)"
  ( sleep 60; bench/cpu_split $CPU_WINDOW > $R/cpu-$v.json 2>&1 ) &
  CPU=$!
  lt $v verify --duration $DURATION --topics-prefix $T.triggers. --belfry-pid $NODE --admin $BELFRY_ADMIN_LISTEN \
    > $R/verify-$v.json 2> $R/verify-$v.log
  wait $CPU
  curl -s $ADMIN/metrics > $R/metrics-$v.txt
  stop_node
  log "verify $v: $(python3 - $R/verify-$v.json <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
w = d["by_window"]["windows"]
print("expected", d["expected"], "received", d["received"], "missing", d["missing"], "duplicates", d["duplicates"],
      "triggers/min", round(d["triggers_per_min"]), "lateness", d["lateness"], "peak RSS MB", d.get("belfry_peak_rss_mb"),
      "tick query ms", [x.get("tick_query_ms") for x in w])
PYEOF
)"
done
log "done"
