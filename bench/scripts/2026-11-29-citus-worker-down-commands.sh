#!/usr/bin/env bash
# Issue 36, stop 47 (2026-11-29 23:20 UTC): with Citus worker2 stopped, does a command for a job whose
# shard is on worker1 apply? Run once, on the side-by-side run's cs_citus database (KEEP_DB=1), as kept
# here: its pause and resume lines passed --id, which `belfry jobs pause|resume` do not take (they
# take the id as an argument), so only the two `jobs put` lines count. Result: the put with both
# workers up applied in 3.6 s; the put with worker2 down had no outcome in 30 s, the node retrying
# "failure on connection marked as essential: 127.0.0.1:55462" (belfry-log-excerpt.txt).
set -u
cd /work/main
eval "$(scripts/local-stack env)"; export BELFRY_KAFKA_BROKERS
R=bench/results/2026-11-29-citus-side-by-side
export BELFRY_DATABASE_URL=postgresql://belfry:belfry@127.0.0.1:55460/cs_citus BELFRY_SCHEDULER_ENABLED=false
export BELFRY_ADMIN_LISTEN=127.0.0.1:18177 BELFRY_KAFKA_COMMANDS_TOPIC=ltwd.commands BELFRY_KAFKA_RESULTS_TOPIC=ltwd.results
export BELFRY_KAFKA_DLQ_TOPIC=ltwd.dlq BELFRY_KAFKA_CHANGES_TOPIC=ltwd.changes BELFRY_KAFKA_GROUP_ID=ltwd BELFRY_EXECUTIONS_ENABLED=false
BIN=/tmp/cs/belfry
pick() {  # port [skip]: an id whose belfry shard is on that worker
  python3 - $1 $R/shard-map.txt ${2:-0} <<'PY'
import sys
port=sys.argv[1]; skip=int(sys.argv[3]); m={}
for line in open(sys.argv[2]):
    s,p,_=line.split(); m[int(s)]=p
def fnv(b):
    h=14695981039346656037
    for c in b: h^=c; h=(h*1099511628211)&0xFFFFFFFFFFFFFFFF
    return h
for i in range(100000):
    id="wd-%d"%i
    if m[fnv(id.encode())%120]==port:
        if skip == 0: print(id); break
        skip -= 1
PY
}
W1=$(pick 55461); W1B=$(pick 55461 1); W2=$(pick 55462)
echo "ids: on worker1 $W1, on worker2 $W2"
$BIN serve > /tmp/wd-belfry.log 2>&1 &
NODE=$!
for _ in $(seq 1 120); do curl -sf http://$BELFRY_ADMIN_LISTEN/readyz > /dev/null && break; sleep 0.5; done
t0=$(date +%s.%N); $BIN jobs put --id $W1 --interval-minutes 5 --topic ltwd.t --timeout 30s; echo "both up, put $W1: rc=$? in $(echo "$(date +%s.%N) - $t0" | bc) s"
scripts/local-stack citus-stop worker2
t0=$(date +%s.%N); $BIN jobs pause --id $W1 --reason "worker2 down" --timeout 30s; echo "worker2 down, pause $W1: rc=$? in $(echo "$(date +%s.%N) - $t0" | bc) s"
t0=$(date +%s.%N); $BIN jobs put --id $W1B --interval-minutes 5 --topic ltwd.t --timeout 30s 2>&1 | tail -2; echo "worker2 down, put $W1B (new job): rc=$? in $(echo "$(date +%s.%N) - $t0" | bc) s"
scripts/local-stack citus-start worker2
t0=$(date +%s.%N); $BIN jobs resume --id $W1 --timeout 60s; echo "worker2 back, resume $W1: rc=$? in $(echo "$(date +%s.%N) - $t0" | bc) s"
kill -TERM $NODE; wait $NODE
grep -iE "warn|error" /tmp/wd-belfry.log | cut -c1-300 | head -20
