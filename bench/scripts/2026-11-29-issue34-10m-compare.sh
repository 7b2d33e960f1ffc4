#!/usr/bin/env bash
# Issue 34's 10M seed before and after, back to back in one run: `2026-11-29-issue34-10m.sh` with
# BIN = fe4b16b's node on its own migrations (the last commit before issue 34), then with this
# checkout's node. Each run has its own fresh database and topics, deleted after it. Needs a
# build of fe4b16b in BEFORE_DIR (default /work/before). Run from the repository root on the local
# stack, alone on the machine; it takes about 40 minutes. VARIANTS="after" runs one of them.
set -uo pipefail
OUT=${OUT:-bench/results/2026-11-29-issue34-10m-compare}
BEFORE_DIR=${BEFORE_DIR:-/work/before}
for v in ${VARIANTS:-before after}; do
  if [[ $v == before ]]; then bin=$BEFORE_DIR/build/belfry; else bin=build/belfry; fi
  echo "== $v ($bin) $(date -u +%H:%M:%S)"
  BIN=$bin R=$OUT/$v BELFRY_MIGRATIONS_DIR= bench/scripts/2026-11-29-issue34-10m.sh
done
echo "== done $(date -u +%H:%M:%S)"
