#!/usr/bin/env bash
# Issue 36: a block_writes shard move while firing, before and after the claims' lock timeout
# (scheduler.claim_lock_timeout), in one run. Runs the move part of 2026-11-29-citus-faults.sh
# (which see: the setup, the per-group verifies and what is kept) once per VARIANTS entry, each a
# claim_lock_timeout value; "0ms" is the behaviour before the change (claims wait for the lock).
# Both moves are block_writes here (MOVE1_MODE, MOVE2_MODE), so each variant has two moves of the
# same shard group (31 belfry shards) worker1 -> worker2 -> worker1. Shorter windows than the
# fault run's: PRE 60 s, MOVE_GAP 90 s, MOVE_POST 90 s. Results in $R/<variant>/.
set -uo pipefail
R=${R:-bench/results/2026-11-30-citus-move-claim-timeout}
VARIANTS=${VARIANTS:-"0ms 1s"}
mkdir -p $R
for v in $VARIANTS; do
  echo "$(date -u +%H:%M:%S) variant claim_lock_timeout=$v" | tee -a $R/run.txt
  R=$R/$v PARTS=move PRE=${PRE:-60} MOVE_GAP=${MOVE_GAP:-90} MOVE_POST=${MOVE_POST:-90} \
    MOVE1_MODE=block_writes MOVE2_MODE=block_writes DB=citus_move_$(echo $v | tr -cd 'a-z0-9') \
    BELFRY_SCHEDULER_CLAIM_LOCK_TIMEOUT=$v \
    bash bench/scripts/2026-11-29-citus-faults.sh > $R/$v.out 2>&1
  echo "$(date -u +%H:%M:%S) variant $v exited $?" | tee -a $R/run.txt
  grep -E "^  (all|moved|other) " $R/$v/summary.txt | tee -a $R/run.txt
done
