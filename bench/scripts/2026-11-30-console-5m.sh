#!/usr/bin/env bash
# The console (issue 37, docs/console.md) with 5M jobs stored: how long each view takes to first
# render in a real browser, how many API calls it makes and how many bytes it moves, and whether
# paging through the jobs list stays flat (keyset pagination: page 20 costs what page 1 costs).
#
# A database of its own (console_5m, dropped first if it exists), `belfry migrate`, then one
# `belfry serve` as an API node: BELFRY_SCHEDULER_ENABLED=false and BELFRY_EXECUTIONS_ENABLED=false.
# The console's reads are measured with 5M jobs stored, not under the ~2.4M triggers/min those jobs
# would fire on this 2-core machine (the default interval mix of `seed`): the firing would own the
# CPUs and the figures would say more about the scheduler than about the reads. The node has a
# write token secret (the console needs one token, and a write token admits the reads) and listens
# on 127.0.0.1:18177. JOBS jobs (default 5,000,000) are seeded through Kafka with
# `belfry-loadtest seed --cron-fraction 0.1 --owners 8 --id-prefix c5m-` (ids c5m-0000000000 ..,
# owners lt-owner-0..7, 10% calendar jobs, 16 trigger topics <run>.triggers.*, never fired), then
# `VACUUM ANALYZE jobs`, a token minted with `belfry token --actor bench@console`, and
# bench/console_timings.py (headless Chromium through Selenium, .venv) measures the views ROUNDS
# times (default 5) and 20 Next-page clicks:
#   jobs, jobs by id prefix (ID_PREFIX), jobs by owner (the first listed job's owner), a job's page
#   (the first listed job), shards, load 1 h, load 24 h, bulk.
# ID_PREFIX: the seed's ids are c5m- and 10 digits, so "c5m-12345" matches no id. The default is the
# id of job min(12345, jobs stored/2) less its last two digits: c5m-00000123 at 5M (100 ids, two pages of
# 50), c5m-00000015 with JOBS=3000 (also 100 ids).
#
# The node serves the console compiled into BIN; CONSOLE_DIR=web/console serves this checkout's files
# instead (admin.console_dir, read at each request). console_timings.py says when the served files
# differ from web/console/. Since this session's change the node answers uncompressed whatever the
# client accepts (cpp-httplib 0.11 compressed with brotli at its slowest quality when Chromium asked
# for br); the probe table shows the answers' times with and without Accept-Encoding.
#
# Results in $R: timings.txt (the tables), console-timings.json (everything raw), run.txt (what ran,
# count(*) FROM jobs, the database's size, nproc and the load average before and after), seed.json
# and seed.log, belfry.log, migrate.log.
#
# Run from the repository root on the local stack (`eval "$(scripts/local-stack env)"` is done
# here), with build/ built (BIN=build/belfry, LT=build/bench/belfry-loadtest), /usr/bin/chromium and
# /usr/bin/chromedriver, and .venv with selenium (PY=.venv/bin/python). With 5M jobs the seed takes
# about 7 minutes at ~12k commands/s (its --timeout is 20m), the VACUUM ANALYZE a minute or two, and
# the browser part a few minutes. A small check: JOBS=3000 R=/tmp/console-5m-small.
#
# At the end (a trap, also when the run fails or is interrupted) the node is stopped, the database
# dropped unless KEEP_DB=1, and the run's Kafka topics (<run>.*) deleted. To measure again without
# seeding: KEEP_DB=1 on the first run, then SKIP_SEED=1 KEEP_DB=1: the database is kept when it
# already holds jobs, and the node gets new topics of its own (nothing fires, the jobs' trigger
# topics are not needed).
set -uo pipefail
R=${R:-bench/results/2026-11-30-console-5m}
mkdir -p $R
eval "$(scripts/local-stack env)"; export BELFRY_KAFKA_BROKERS
BASE_URL=$BELFRY_DATABASE_URL   # postgresql://belfry:belfry@127.0.0.1:55432/belfry
BIN=${BIN:-build/belfry} LT=${LT:-build/bench/belfry-loadtest} PY=${PY:-.venv/bin/python}
JOBS=${JOBS:-5000000} ROUNDS=${ROUNDS:-5} SKIP_SEED=${SKIP_SEED:-0}
DB=console_5m
T=c5m-$(date +%s)
export BELFRY_DATABASE_URL=${BASE_URL%/*}/$DB BELFRY_MIGRATIONS_DIR=$PWD/migrations
export BELFRY_KAFKA_COMMANDS_TOPIC=$T.commands BELFRY_KAFKA_RESULTS_TOPIC=$T.results
export BELFRY_KAFKA_DLQ_TOPIC=$T.dlq BELFRY_KAFKA_CHANGES_TOPIC=$T.changes BELFRY_KAFKA_GROUP_ID=$T
export BELFRY_KAFKA_TRIGGERS_DLQ_TOPIC=$T.triggers-dlq
export BELFRY_KAFKA_EXECUTIONS_TOPIC=$T.executions BELFRY_KAFKA_EXECUTIONS_DLQ_TOPIC=$T.executions-dlq
export BELFRY_KAFKA_EXECUTIONS_GROUP_ID=$T-exec
export BELFRY_SCHEDULER_ENABLED=false BELFRY_EXECUTIONS_ENABLED=false
export BELFRY_ADMIN_WRITE_TOKEN_SECRET=${BELFRY_ADMIN_WRITE_TOKEN_SECRET:-$(head -c 32 /dev/urandom | base64)}
export BELFRY_ADMIN_LISTEN=127.0.0.1:18177
[[ -n ${CONSOLE_DIR:-} ]] && export BELFRY_ADMIN_CONSOLE_DIR=$(realpath $CONSOLE_DIR)
ADMIN=http://$BELFRY_ADMIN_LISTEN
now() { date -u +%H:%M:%S; }
sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$BELFRY_DATABASE_URL" "$@"; }
note() { echo "$(now) $*" | tee -a $R/run.txt; }

NODE=
stop_node() {
  kill -TERM $NODE 2> /dev/null
  for _ in $(seq 1 60); do kill -0 $NODE 2> /dev/null || break; sleep 0.5; done
  kill -0 $NODE 2> /dev/null && { echo "$(now) belfry did not stop in 30 s: SIGKILL"; kill -KILL $NODE; }
  wait $NODE 2> /dev/null
  NODE=
}
cleanup() {
  trap - EXIT INT TERM
  [[ -n $NODE ]] && stop_node
  if [[ ${KEEP_DB:-0} == 1 ]]; then
    echo "$(now) cleanup: database $DB kept (KEEP_DB=1)"
  else
    psql -X -q "$BASE_URL" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" || echo "dropping $DB failed"
  fi
  scripts/local-stack kafka-topics --delete --topic "$T\\..*" > /dev/null 2>&1 || echo "deleting the $T.* topics failed"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

T0=$(date +%s)
: > $R/run.txt
note "run $T: database $DB, JOBS=$JOBS, ROUNDS=$ROUNDS, node $ADMIN (scheduler off, executions off), console from ${BELFRY_ADMIN_CONSOLE_DIR:-the binary}"
echo "belfry: $BIN ($(sha1sum < $BIN | cut -c1-12)); belfry-loadtest: $LT ($(sha1sum < $LT | cut -c1-12)); nproc: $(nproc)" >> $R/run.txt
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/run.txt

# ---- a. the database
HAVE=0
if [[ $SKIP_SEED == 1 ]]; then
  HAVE=$(sql -c "SELECT count(*) FROM jobs" 2> /dev/null || echo 0)
fi
if (( HAVE > 0 )); then
  note "SKIP_SEED=1: $DB already holds $HAVE jobs, kept"
else
  psql -X -q "$BASE_URL" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" || exit 1
fi
$BIN migrate > $R/migrate.log 2>&1 || { cat $R/migrate.log; exit 1; }

# ---- b. the API node
$BIN serve >> $R/belfry.log 2>&1 &
NODE=$!
for _ in $(seq 1 120); do curl -sf $ADMIN/readyz > /dev/null && break; sleep 0.5; done
curl -sf $ADMIN/readyz > /dev/null || { echo "belfry did not become ready: $(tail -5 $R/belfry.log)"; exit 1; }
note "node pid $NODE ready"

# ---- c. the seed
if (( HAVE > 0 )); then
  note "seed skipped"
else
  t0=$(date +%s)
  $LT seed --jobs $JOBS --cron-fraction 0.1 --owners 8 --id-prefix c5m- --topic-prefix $T.triggers. \
    --commands-topic $T.commands --results-topic $T.results --timeout 20m > $R/seed.json 2> $R/seed.log
  rc=$?
  (( rc == 0 )) || echo "seed exited with status $rc: $(tail -3 $R/seed.log)"
  # The harness stops waiting at its timeout; the node goes on applying. Wait (10 min at most) for every job.
  for _ in $(seq 1 60); do [[ $(sql -c "SELECT count(*) FROM jobs") -ge $JOBS ]] && break; sleep 10; done
  note "seeded $(sql -c "SELECT count(*) FROM jobs") jobs in $(( $(date +%s) - t0 )) s (seed: $(python3 -c "import json;d=json.load(open('$R/seed.json'));print(d.get('applied'), 'applied,', d.get('applied_per_s'), '/s')" 2>&1))"
fi

# ---- d. the console
STORED=$(sql -c "SELECT count(*) FROM jobs")
N=$(( STORED / 2 < 12345 ? STORED / 2 : 12345 ))   # from what is stored: a SKIP_SEED rerun need not repeat JOBS
ID_PREFIX=${ID_PREFIX:-c5m-$(printf %010d $N | cut -c1-8)}
t0=$(date +%s)
sql -c "VACUUM ANALYZE jobs" || exit 1
note "VACUUM ANALYZE jobs took $(( $(date +%s) - t0 )) s"
TOKEN=$($BIN token --actor bench@console 2> /dev/null | awk 'NF { t = $NF } END { print t }')
[[ $(tr -cd . <<<"$TOKEN") == .. ]] || { echo "belfry token printed no token: $TOKEN"; exit 1; }
OWNER=${OWNER:-$(curl -sf -H "Authorization: Bearer $TOKEN" "$ADMIN/v1/jobs?limit=1" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["jobs"][0]["owner"])')}
[[ -n $OWNER ]] || { echo "no owner: GET /v1/jobs?limit=1 listed no job"; exit 1; }
{ echo "jobs: $(sql -c "SELECT count(*) FROM jobs") (SELECT count(*) FROM jobs); database size $(sql -c "SELECT pg_size_pretty(pg_database_size(current_database()))")"
  echo "jobs with id prefix $ID_PREFIX: $(sql -c "SELECT count(*) FROM jobs WHERE id LIKE '$ID_PREFIX%'"); owner $OWNER: $(sql -c "SELECT count(*) FROM jobs WHERE owner = '$OWNER'")"
  echo "load average before the browser: $(cut -d' ' -f1-3 /proc/loadavg); nproc $(nproc)"; } | tee -a $R/run.txt
$PY bench/console_timings.py --url $ADMIN --token "$TOKEN" --out $R --rounds $ROUNDS \
  --id-prefix $ID_PREFIX --owner "$OWNER" 2>&1 | tee $R/timings.txt
rc=${PIPESTATUS[0]}
echo "load average after the browser: $(cut -d' ' -f1-3 /proc/loadavg); nproc $(nproc)" >> $R/run.txt
note "console_timings.py exited with status $rc; the run took $(( $(date +%s) - T0 )) s"
exit $rc
