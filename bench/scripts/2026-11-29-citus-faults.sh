#!/usr/bin/env bash
# Issue 36, the two fault runs on the local Citus cluster (docs/scale-out.md, "The local Citus
# cluster"; scripts/local-stack citus-up). A database of its own on the three nodes, JOBS
# every-minute interval jobs (`seed --mix 1:100`, loaded with the scheduler off, executions off),
# then one `belfry serve` with the scheduler on, and for each part (PARTS, default "move stop"; the
# move first, because the stop can leave on worker1 an orphaned prepared transaction, below):
#
#  stop  fires for PRE s, then `scripts/local-stack citus-kill worker1` (pg_ctl stop -m immediate;
#        note that `citus-stop NODE immediate` ignores its second word and stops with -m fast),
#        `citus-start worker1` OUTAGE s later, and POST s more of firing after the worker accepts
#        connections again. After an immediate stop the worker's crash recovery first fsyncs its
#        whole data directory and ends with a checkpoint; on this cluster, which holds every
#        test's databases, that took over 2 minutes (first run): the verify window allows
#        RECOVERY s for it, and citus-start is given BELFRY_STACK_TIMEOUT=600 (its pg_ctl waits
#        90 s by default and gave up in the first run, the server recovering on).
#  move  fires for PRE s, then moves the Citus shard group of the lowest shard_state shard on
#        worker1 to worker2 (citus_move_shard_placement, MOVE1_MODE, default force_logical),
#        MOVE_GAP s after the first move started moves it back (MOVE2_MODE, default block_writes),
#        then MOVE_POST s more of firing.
#
# Per-worker lateness: `verify` has no per-shard report, so before each part the jobs' topics are
# rewritten by which Citus node holds their belfry shard (UPDATE jobs SET topic = ..., with the
# scheduler off; stop: <T>.stop.w1 / .w2, move: <T>.move.moved / .other; the map is from
# get_shard_id_for_distribution_column and pg_dist_placement, kept in <part>-shard-map.txt), and
# three `belfry-loadtest verify` run side by side over the whole part: every job (prefix <T>.<part>.)
# and one per group. Each writes <part>-verify-<group>.json (expected, received, missing,
# duplicates, lateness, by_window every 30 s of slot time). Also kept: belfry's log, a 5 s sample
# of its /metrics, /readyz and of each group's watermark lag (<part>-samples.txt), the events with
# their UTC times (<part>-events.txt), each Citus node's log over the part (<part>-pg-<node>.log.gz,
# and the lines of this database and the server: <part>-pg-<node>-db.log), belfry's sessions
# waiting on a lock (<part>-lock-waits.txt) and summary.txt.
#
# Killing worker1 also kills the two-phase commits of other tests on the cluster: in the first run a
# test database's transaction stayed PREPARED on worker1 after the test had dropped its database
# on the coordinator, so nothing would ever resolve it, and the next logical move waited on it
# (CREATE_REPLICATION_SLOT waits for every running transaction of the server) until it was
# rolled back by hand. The script lists the prepared transactions of every node after the stop
# and before each move (<part>-events.txt); it resolves none.
#
# citus_move_shard_placement connects to the coordinator itself as citus.local_hostname
# ('localhost' by default), which the cluster's pgpass (127.0.0.1 only) does not cover: the move
# fails with "fe_sendauth: no password supplied" in every mode. This script sets
# citus.local_hostname = '127.0.0.1' in the moving session only.
#
# Binaries: BIN and LT (copies of build/belfry and build/bench/belfry-loadtest: the shared build/
# tree changes under other engineers). Run from the repository root with the local stack and the
# Citus cluster up (about 22 minutes with the defaults: 1 of setup and seed, 10 per part).
# Killing worker1 fails any other test using the cluster until it has recovered (3 minutes in the
# first run). The database is dropped (coordinator first) and the run's Kafka topics deleted at
# the end, also when the run fails; worker1 is started again whatever happens (a trap).
set -uo pipefail
R=${R:-bench/results/2026-11-29-citus-faults}
mkdir -p $R
eval "$(scripts/local-stack env)"; export BELFRY_KAFKA_BROKERS
BIN=${BIN:-/tmp/citus-faults/belfry} LT=${LT:-/tmp/citus-faults/belfry-loadtest}
JOBS=${JOBS:-40000} PARTS=${PARTS:-"move stop"}
PRE=${PRE:-120} OUTAGE=${OUTAGE:-60} RECOVERY=${RECOVERY:-180} POST=${POST:-180}
MOVE_GAP=${MOVE_GAP:-180} MOVE_POST=${MOVE_POST:-180}
MOVE1_MODE=${MOVE1_MODE:-force_logical} MOVE2_MODE=${MOVE2_MODE:-block_writes}
DB=${DB:-citus_faults}
CITUS=$PWD/.local/citus
T=ltcf-$(date +%s)
export BELFRY_DATABASE_URL=postgresql://belfry:belfry@127.0.0.1:55460/$DB BELFRY_MIGRATIONS_DIR=$PWD/migrations
export BELFRY_KAFKA_COMMANDS_TOPIC=$T.commands BELFRY_KAFKA_RESULTS_TOPIC=$T.results
export BELFRY_KAFKA_DLQ_TOPIC=$T.dlq BELFRY_KAFKA_CHANGES_TOPIC=$T.changes BELFRY_KAFKA_GROUP_ID=$T
export BELFRY_EXECUTIONS_ENABLED=false BELFRY_ADMIN_LISTEN=127.0.0.1:18167
ADMIN=http://$BELFRY_ADMIN_LISTEN
NODES=(coordinator worker1 worker2)
port_of() { case $1 in coordinator) echo 55460 ;; worker1) echo 55461 ;; worker2) echo 55462 ;; esac; }
su_sql() {  # node db, then psql args: as the superuser over the node's socket
  local n=$1 d=$2; shift 2
  psql -X -q -At -v ON_ERROR_STOP=1 -h $CITUS/$n/run -p $(port_of $n) -U postgres -d $d "$@"
}
coord() { su_sql coordinator $DB "$@"; }
now() { date -u +%H:%M:%S.%3N; }
EVENTS=/dev/null
wait_until() { local d=$(( $1 - $(date +%s) )); (( d > 0 )) && sleep $d; }
event() { echo "$(now) $*" | tee -a $EVENTS; }

drop_db() {
  local n
  for n in "${NODES[@]}"; do
    su_sql $n belfry -c "SET citus.enable_ddl_propagation = off" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" \
      2>&1 | grep -v -e NOTICE -e DETAIL -e HINT
  done
}
create_db() {
  local n
  drop_db
  for n in worker1 worker2 coordinator; do
    su_sql $n belfry -c "SET citus.enable_ddl_propagation = off" -c "CREATE DATABASE $DB OWNER belfry" 2>/dev/null || return 1
  done
  for n in "${NODES[@]}"; do su_sql $n $DB -c "CREATE EXTENSION citus" || return 1; done
  coord -c "SELECT citus_set_coordinator_host('127.0.0.1', 55460)" -c "SELECT citus_add_node('127.0.0.1', 55461)" \
    -c "SELECT citus_add_node('127.0.0.1', 55462)" > /dev/null || return 1
}

NODE= SAMPLER= VERIFY_PIDS=() STOPPED=0
cleanup() {
  trap - EXIT INT TERM
  [[ -n $SAMPLER ]] && kill $SAMPLER 2> /dev/null
  for p in "${VERIFY_PIDS[@]}"; do kill $p 2> /dev/null; done
  [[ -n $NODE ]] && stop_node
  if (( STOPPED )); then
    echo "$(now) cleanup: starting worker1 again"
    BELFRY_STACK_TIMEOUT=600 scripts/local-stack citus-start worker1 || echo "citus-start worker1 FAILED: start it by hand"
  fi
  [[ ${KEEP_DB:-0} == 1 ]] || drop_db
  scripts/local-stack kafka-topics --delete --topic "$T\\..*" > /dev/null 2>&1 || echo "deleting the $T.* topics failed"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_node() {  # scheduler on|off, log file
  BELFRY_SCHEDULER_ENABLED=$1 $BIN serve >> $2 2>&1 &
  NODE=$!
  for _ in $(seq 1 120); do curl -sf $ADMIN/readyz > /dev/null && return 0; sleep 0.5; done
  echo "belfry did not become ready: $(tail -5 $2)"; return 1
}
stop_node() {
  kill -TERM $NODE 2> /dev/null
  for _ in $(seq 1 60); do kill -0 $NODE 2> /dev/null || break; sleep 0.5; done
  kill -0 $NODE 2> /dev/null && { echo "$(now) belfry did not stop in 30 s: SIGKILL"; kill -KILL $NODE; }
  wait $NODE 2> /dev/null
  echo "$(now) belfry exited with status $?" >> $EVENTS
  NODE=
}

# belfry shard -> Citus port and shard_state's Citus shard id.
shard_map() {
  coord -F' ' -c "SELECT s, n.nodeport, pl.shardid FROM generate_series(0, 119) s
    JOIN pg_dist_placement pl ON pl.shardid = get_shard_id_for_distribution_column('shard_state', s::smallint)
    JOIN pg_dist_node n ON n.groupid = pl.groupid ORDER BY s"
}
# The jobs of the belfry shards in the list to topic $T.$part.$a, the rest to $T.$part.$b.
retopic() {  # part "comma list" a b
  local t
  coord -c "UPDATE jobs SET topic = CASE WHEN shard = ANY('{$2}'::smallint[]) THEN '$T.$1.$3' ELSE '$T.$1.$4' END" || return 1
  coord -c "VACUUM ANALYZE jobs"
  for t in $T.$1.$3 $T.$1.$4; do
    scripts/local-stack kafka-topics --create --if-not-exists --topic $t --partitions 4 --replication-factor 1 > /dev/null || return 1
  done
  coord -c "SELECT topic, count(*), count(DISTINCT shard) AS belfry_shards FROM jobs GROUP BY 1 ORDER BY 1" > $R/$1-topics.txt
}

# Every 5 s: belfry's /readyz and firing counters (non-zero ones), and for each group of belfry
# shards, read through the coordinator: the watermark lag in minutes (the current minute minus the
# lowest fired_through), the age in seconds of the least recently advanced shard_state row
# (about 60 s when every shard fires once a minute) and the debt in shard-minutes. Into WAITS,
# belfry's sessions on the coordinator that wait for a lock or have run one statement for over
# 2 s: wait event, blocking pids, seconds, the statement.
sampler() {  # part a "list a" b "list b"
  local m r g l q
  while :; do
    m=$(curl -s -m 2 $ADMIN/metrics | grep -E '^belfry_(triggers_emitted_total|firing_failures_total|shard_minutes_fired_total|shard_minutes_caught_up_total|shard_minutes_skipped_total|catch_up_debt_minutes|claim_release_failures_total|trigger_requeries_total|triggers_resent_total)' \
      | grep -v ' 0$' | sed -E 's/^belfry_//; s/ /=/' | tr '\n' ' ')
    r=$(curl -s -o /dev/null -w '%{http_code}' -m 2 $ADMIN/readyz)
    g=""
    for l in "$2:$3" "$4:$5"; do
      q="shard = ANY('{${l#*:}}'::smallint[])"
      g+="${l%%:*}:$(PGOPTIONS='-c statement_timeout=2000' psql -X -At -F/ "$BELFRY_DATABASE_URL" \
        -c "SELECT (extract(epoch FROM now())::bigint / 60) - min(fired_through), round(extract(epoch FROM now() - min(updated_at))) FROM shard_state WHERE $q" \
        -c "SELECT coalesce(sum(upper(r) - lower(r)), 0) FROM shard_state, unnest(debt) r WHERE $q" 2>&1 | tr '\n' '/' | cut -c1-160) "
    done
    echo "$(now) readyz=$r lag_min/oldest_s/debt $g| $m"
    su_sql coordinator $DB -F' | ' -c "SELECT '$(now)', pid, wait_event_type || ':' || wait_event, pg_blocking_pids(pid),
        round(extract(epoch FROM now() - query_start)::numeric, 1), left(regexp_replace(query, '\s+', ' ', 'g'), 140)
      FROM pg_stat_activity WHERE datname = '$DB' AND usename = 'belfry'
        AND (wait_event_type = 'Lock' OR (state = 'active' AND now() - query_start > interval '2 s'))" >> $WAITS 2>&1
    sleep 5
  done
}

LOGOFF=()
logs_mark() { local n; LOGOFF=(); for n in "${NODES[@]}"; do LOGOFF+=($(stat -c %s $CITUS/$n/postgres.log)); done; }
logs_cut() {  # part
  local i n
  for i in "${!NODES[@]}"; do
    n=${NODES[$i]}
    tail -c +$((LOGOFF[$i] + 1)) $CITUS/$n/postgres.log > $R/$1-pg-$n.log
    grep -a -E "@$DB |\] \[unknown\]@|^[0-9-]+ [0-9:.]+ UTC \[[0-9]+\] (LOG|WARNING|ERROR|FATAL|PANIC):" $R/$1-pg-$n.log \
      | grep -a -v -E "checkpoint (starting|complete)|maintenance daemon|cancel request did not match|deferred drop of orphaned" > $R/$1-pg-$n-db.log
    gzip -f $R/$1-pg-$n.log
  done
}

# Three verifies side by side: every job of the part, and each group.
verify_start() {  # part seconds a b
  local g p extra
  VERIFY_PIDS=()
  for g in all $3 $4; do
    p=$T.$1.; [[ $g != all ]] && p=$T.$1.$g
    extra=(); [[ $g == all ]] && extra=(--belfry-pid $NODE --admin $BELFRY_ADMIN_LISTEN)
    $LT verify --duration ${2}s --grace 5s --topics-prefix $p --report-window 30s "${extra[@]}" \
      > $R/$1-verify-$g.json 2> $R/$1-verify-$g.log &
    VERIFY_PIDS+=($!)
  done
}
verify_wait() { local p; for p in "${VERIFY_PIDS[@]}"; do wait $p; done; VERIFY_PIDS=(); }

# Firing with the scheduler on, until every shard's watermark is current and no debt is owed.
fire_until_steady() {  # log
  start_node true $1 || return 1
  for _ in $(seq 1 36); do
    sleep 5
    [[ $(coord -c "SELECT count(*) FROM shard_state WHERE fired_through < extract(epoch FROM now())::bigint / 60 - 1 OR debt <> '{}'") == 0 ]] && return 0
  done
  echo "shards still behind after 3 minutes"; return 0
}

part_stop() {
  local map w1 w2 t0 rc
  EVENTS=$R/stop-events.txt; : > $EVENTS
  map=$(shard_map); echo "$map" > $R/stop-shard-map.txt
  w1=$(awk '$2 == 55461 { print $1 }' <<<"$map" | paste -sd,)
  w2=$(awk '$2 == 55462 { print $1 }' <<<"$map" | paste -sd,)
  event "stop: belfry shards on worker1 (55461): $(tr ',' '\n' <<<"$w1" | wc -l), on worker2 (55462): $(tr ',' '\n' <<<"$w2" | wc -l)"
  retopic stop "$w1" w1 w2 || return 1
  fire_until_steady $R/stop-belfry.log || return 1
  event "stop: belfry pid $NODE firing and steady"
  logs_mark
  verify_start stop $((PRE + OUTAGE + RECOVERY + POST + 20)) w1 w2
  sleep 3
  WAITS=$R/stop-lock-waits.txt sampler stop w1 "$w1" w2 "$w2" > $R/stop-samples.txt 2>&1 & SAMPLER=$!
  sleep $PRE
  su_sql worker1 belfry -c "SELECT datname, count(*) FROM pg_stat_activity WHERE datname IS NOT NULL GROUP BY 1 ORDER BY 1" \
    > $R/stop-worker1-sessions-before-kill.txt
  t0=$(date +%s)
  event "stop: citus-kill worker1"
  STOPPED=1
  scripts/local-stack citus-kill worker1 >> $EVENTS 2>&1
  rc=$?
  event "stop: citus-kill worker1 returned $rc (pg_isready: $(pg_isready -h 127.0.0.1 -p 55461 2>&1))"
  wait_until $((t0 + OUTAGE))
  event "stop: citus-start worker1"
  BELFRY_STACK_TIMEOUT=600 scripts/local-stack citus-start worker1 >> $EVENTS 2>&1 && STOPPED=0
  event "stop: citus-start worker1 returned (pg_isready: $(pg_isready -h 127.0.0.1 -p 55461 2>&1))"
  for _ in $(seq 1 900); do pg_isready -q -h 127.0.0.1 -p 55461 && break; sleep 1; done
  event "stop: worker1 accepts connections ($(pg_isready -h 127.0.0.1 -p 55461 2>&1)), $(( $(date +%s) - t0 )) s after the kill"
  tail -c +$((LOGOFF[1] + 1)) $CITUS/worker1/postgres.log | awk '/received immediate shutdown/ { on = 1 } on && / LOG: / { print }
    /database system is ready to accept connections/ { on = 0 }' | cut -c1-200 | sed 's/^/    worker1: /' >> $EVENTS
  verify_wait
  event "stop: verifies done"
  prepared_xacts
  kill $SAMPLER; wait $SAMPLER 2> /dev/null; SAMPLER=
  coord -c "SELECT count(*) FILTER (WHERE debt <> '{}') AS shards_owing, max(extract(epoch FROM now())::bigint / 60 - fired_through) AS max_lag_min FROM shard_state" >> $EVENTS
  stop_node
  logs_cut stop
}

prepared_xacts() {  # every node's prepared transactions, into the events
  local n
  for n in "${NODES[@]}"; do
    event "prepared transactions on $n: $(su_sql $n belfry -F' ' -c "SELECT gid, database, prepared FROM pg_prepared_xacts" | tr '\n' ';')"
  done
}
# Where the shard group of shard_state's Citus shard $1 is: port and placements, from the metadata.
group_placements() {
  coord -F' ' -c "SELECT n.nodeport, count(*) FROM pg_dist_shard o
    JOIN pg_dist_shard s ON s.shardminvalue = o.shardminvalue
    JOIN pg_dist_partition p ON p.logicalrelid = s.logicalrelid AND p.colocationid =
      (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'shard_state'::regclass)
    JOIN pg_dist_placement pl ON pl.shardid = s.shardid JOIN pg_dist_node n ON n.groupid = pl.groupid
    WHERE o.shardid = $1 GROUP BY 1" | tr '\n' ' '
}
move() {  # shardid from to mode
  local t0 t1 rc
  prepared_xacts
  event "move: citus_move_shard_placement($1, 127.0.0.1:$2 -> 127.0.0.1:$3, $4) starts; group placements (port count): $(group_placements $1)"
  t0=$(date +%s.%N)
  su_sql coordinator $DB -c "SET citus.local_hostname = '127.0.0.1'" \
    -c "SELECT citus_move_shard_placement($1, '127.0.0.1', $2, '127.0.0.1', $3, shard_transfer_mode := '$4')" >> $EVENTS 2>&1
  rc=$?
  t1=$(date +%s.%N)
  event "move: $4 returned $rc after $(python3 -c "print(f'{$t1 - $t0:.1f}')") s; group placements now: $(group_placements $1)"
}

part_move() {
  local map sid moved other t0
  EVENTS=$R/move-events.txt; : > $EVENTS
  map=$(shard_map); echo "$map" > $R/move-shard-map.txt
  sid=$(awk '$2 == 55461 { print $3 }' <<<"$map" | sort -n | head -1)
  moved=$(awk -v s=$sid '$3 == s { print $1 }' <<<"$map" | paste -sd,)
  other=$(awk -v s=$sid '$3 != s { print $1 }' <<<"$map" | paste -sd,)
  event "move: shard_state shard $sid on worker1 holds belfry shards $moved"
  event "move: the group's placements (port count): $(group_placements $sid); jobs rows in it: $(coord -c "SELECT count(*) FROM jobs WHERE shard = ANY('{$moved}'::smallint[])")"
  retopic move "$moved" moved other || return 1
  fire_until_steady $R/move-belfry.log || return 1
  event "move: belfry pid $NODE firing and steady"
  logs_mark
  verify_start move $((PRE + MOVE_GAP + 60 + MOVE_POST)) moved other
  sleep 3
  WAITS=$R/move-lock-waits.txt sampler move moved "$moved" other "$other" > $R/move-samples.txt 2>&1 & SAMPLER=$!
  sleep $PRE
  t0=$(date +%s)
  move $sid 55461 55462 $MOVE1_MODE
  wait_until $((t0 + MOVE_GAP))
  move $sid 55462 55461 $MOVE2_MODE
  verify_wait
  event "move: verifies done"
  kill $SAMPLER; wait $SAMPLER 2> /dev/null; SAMPLER=
  coord -c "SELECT count(*) FILTER (WHERE debt <> '{}') AS shards_owing, max(extract(epoch FROM now())::bigint / 60 - fired_through) AS max_lag_min FROM shard_state" >> $EVENTS
  coord -c "SELECT * FROM pg_dist_cleanup" >> $EVENTS
  stop_node
  logs_cut move
}

summary() {
  python3 - $R "$PARTS" <<'PYEOF'
import json, os, sys
R, parts = sys.argv[1], sys.argv[2].split()
groups = {"stop": ["all", "w1", "w2"], "move": ["all", "moved", "other"]}
for part in parts:
    print(f"== {part}")
    ev = os.path.join(R, f"{part}-events.txt")
    if os.path.exists(ev):
        print(open(ev).read().rstrip())
    ds = {}
    for g in groups[part]:
        f = os.path.join(R, f"{part}-verify-{g}.json")
        try:
            ds[g] = json.load(open(f))
        except Exception as e:
            print(f"  {g}: no summary ({e})"); continue
        d = ds[g]; l = d.get("lateness", {})
        print(f"  {g:6} jobs {d['jobs']} window {d['window']['first_slot']} .. {d['window']['last_slot']}: expected {d['expected']} received {d['received']} "
              f"missing {d['missing']} duplicates {d['duplicates']} unexpected {d['unexpected']['total']} "
              f"lateness p50/p99/p99.9/max {l.get('p50_ms')}/{l.get('p99_ms')}/{l.get('p999_ms')}/{l.get('max_ms')} ms"
              + (f" missing e.g. {d['missing_examples'][:3]}" if d.get('missing_examples') else ""))
    if not ds: continue
    print("  by 30 s window of slot time: expected_received missing duplicates | lateness p50/p99/max ms, per group")
    n = max(len(d["by_window"]["windows"]) for d in ds.values())
    for i in range(n):
        cells = []
        for g in groups[part]:
            w = ds.get(g, {}).get("by_window", {}).get("windows", [])
            if i >= len(w): cells.append(f"{g}: -"); continue
            w = w[i]; lm = w.get("lateness_ms", {})
            cells.append(f"{g}: {w['expected_received']} {w['missing']} {w['duplicates']} | {lm.get('p50')}/{lm.get('p99')}/{lm.get('max')}")
        first = ds.get("all", next(iter(ds.values())))["by_window"]["windows"]
        print(f"  {first[i]['first_slot'][11:19] if i < len(first) else '?':8}  " + "   ".join(cells))
PYEOF
}

# ---- setup and seed
echo "$(now) run $T: database $DB, $JOBS every-minute jobs, parts: $PARTS" | tee $R/run.txt
{ echo "belfry: $BIN ($(sha1sum < $BIN | cut -c1-12)); belfry-loadtest: $LT"; git rev-parse HEAD
  cat /tmp/citus-faults/build-tree.status 2>/dev/null | sed 's/^/  built with: /'; } >> $R/run.txt
create_db || { echo "creating $DB on the cluster failed"; exit 1; }
t0=$(date +%s); $BIN migrate > $R/migrate.log 2>&1 || { cat $R/migrate.log; exit 1; }
echo "$(now) migrate took $(( $(date +%s) - t0 )) s" | tee -a $R/run.txt
start_node false $R/seed-belfry.log || exit 1
$LT seed --jobs $JOBS --mix 1:100 --topics 1 --timeout 15m --id-prefix cf- --topic-prefix $T.seed. > $R/seed.json 2> $R/seed.log
for _ in $(seq 1 60); do [[ $(coord -c "SELECT count(*) FROM jobs") -ge $JOBS ]] && break; sleep 10; done
echo "$(now) seeded: $(coord -c "SELECT count(*) FROM jobs") jobs" | tee -a $R/run.txt
stop_node
for p in $PARTS; do
  echo "$(now) part $p" | tee -a $R/run.txt
  part_$p || echo "$(now) part $p FAILED" | tee -a $R/run.txt
done
summary > $R/summary.txt
cat $R/summary.txt
