# shellcheck shell=bash
# The local stack's Citus cluster (sourced by scripts/local-stack; docs/scale-out.md): a
# coordinator and two workers, each a PostgreSQL 15 server of its own on loopback with Citus
# 13.2.2 preloaded (scripts/setup --citus builds it), their data in .local/citus/<node>/.
# The default single PostgreSQL is untouched: this is a second, separate database service.
#
#   coordinator 127.0.0.1:55460 (BELFRY_CITUS_PORT), workers 55461 and 55462 (the next ports)
#   database belfry, role belfry/belfry on each; the citus extension in that database on each,
#   the workers registered on the coordinator (citus_set_coordinator_host, citus_add_node).
#
# The servers connect to each other over loopback TCP with scram passwords, which each
# postmaster reads from .local/citus/pgpass (PGPASSFILE in its environment): belfry's
# password, and a superuser password generated at the first start.

CITUS_DIR="$LOCAL_DIR/citus"
CITUS_PORT="${BELFRY_CITUS_PORT:-55460}"
CITUS_NODES=(coordinator worker1 worker2)
CITUS_PASSFILE="$CITUS_DIR/pgpass"

citus_port_of() {  # node name -> port
  local i
  for i in "${!CITUS_NODES[@]}"; do
    [[ "${CITUS_NODES[$i]}" == "$1" ]] && { printf '%s\n' $((CITUS_PORT + i)); return 0; }
  done
  die "no Citus node named $1 (${CITUS_NODES[*]})"
}

# Point the PostgreSQL helpers of scripts/local-stack (pg_init, pg_running, pg_wait_ready, ...)
# at one Citus node. Run in a subshell: it changes the primary's globals.
citus_select() {
  set_pg_paths "$CITUS_DIR/$1"
  PG_PORT="$(citus_port_of "$1")"
  DATABASE_URL="postgresql://belfry:belfry@$HOST:$PG_PORT/belfry"
}

citus_conf_extra() {
  local preload="citus"
  [[ -f /usr/lib/postgresql/15/lib/pg_stat_statements.so ]] && preload="citus, pg_stat_statements"
  cat <<CONF
# A node of the local Citus cluster (scripts/local-stack citus-up).
cluster_name = 'belfry-citus-$1'
shared_preload_libraries = '$preload'
# Citus commits a transaction that spans nodes (and every write of a reference table) with
# two-phase commit: prepared transactions on the workers, at most one per connection.
max_prepared_transactions = 300
# citus_move_shard_placement moves a shard without blocking writes by logical replication.
wal_level = logical
max_replication_slots = 20
max_wal_senders = 20
CONF
}

citus_write_passfile() {
  mkdir -p "$CITUS_DIR"
  local su_pw=""
  [[ -f "$CITUS_PASSFILE" ]] && su_pw="$(awk -F: '$4 == "postgres" { print $5; exit }' "$CITUS_PASSFILE")"
  [[ -n "$su_pw" ]] || su_pw="$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
  umask 077
  # localhost too: Citus connects to its own node as citus.local_hostname ('localhost'), which a
  # shard move (citus_move_shard_placement) does.
  printf '%s:*:*:belfry:belfry\n%s:*:*:postgres:%s\nlocalhost:*:*:belfry:belfry\nlocalhost:*:*:postgres:%s\n' \
    "$HOST" "$HOST" "$su_pw" "$su_pw" >"$CITUS_PASSFILE"
  umask 022
  chmod 0600 "$CITUS_PASSFILE"
  is_root && chown "$(pg_user)" "$CITUS_DIR" "$CITUS_PASSFILE"
  CITUS_SU_PASSWORD="$su_pw"
}

citus_super_sql() {  # node, then psql args: as the superuser over the node's socket, in db belfry
  local node="$1"; shift
  ( citus_select "$node"
    psql -X -Atq -v ON_ERROR_STOP=1 -h "$PG_SOCK_DIR" -p "$PG_PORT" -U postgres -d belfry "$@" )
}

citus_node_start() {  # node
  ( citus_select "$1"
    if ! pg_running && port_open "$HOST" "$PG_PORT"; then
      die "port $PG_PORT (Citus $1) is in use by another process (pid $(listener_pid "$PG_PORT")); set BELFRY_CITUS_PORT"
    fi
    pg_init
    local changed=0
    pg_install_conf "$PG_DATA" "$PG_PORT" "$PG_SOCK_DIR" "$(citus_conf_extra "$1")" && changed=1
    if pg_running && (( changed )); then
      log "citus $1: config changed, restarting"
      pg_as "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w -t 60 stop >/dev/null 2>&1 9>&- || die "citus $1 did not stop"
    fi
    if pg_running; then
      log "citus $1: already running"
    else
      log "citus $1: starting on $HOST:$PG_PORT (log $PG_LOG)"
      if ! pg_as env PGPASSFILE="$CITUS_PASSFILE" "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t "$TIMEOUT" \
            start >/dev/null 2>&1 9>&-; then
        show_log_tail "$PG_LOG" 40
        die "citus $1 failed to start"
      fi
    fi
    pg_wait_ready
    psql -X -Atq -v ON_ERROR_STOP=1 -h "$PG_SOCK_DIR" -p "$PG_PORT" -U postgres -d belfry >/dev/null <<SQL \
      || die "citus $1: could not set up the citus extension in database belfry"
CREATE EXTENSION IF NOT EXISTS citus;
-- Each node sets its own password: not propagated, so a node restarts while another is down.
SET citus.enable_ddl_propagation = off;
ALTER ROLE postgres PASSWORD '$CITUS_SU_PASSWORD';
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
SQL
  )
}

# If another checkout's local stack runs the Citus cluster on these ports (e.g. the CI clone while
# /work/main's is up), use that cluster, with its data and its password file, as adopt_foreign_pg
# does for the PostgreSQL: the endpoints are the same, and a password of our own would lock the
# running nodes out of each other.
citus_adopt_foreign() {
  local pid args
  port_open "$HOST" "$CITUS_PORT" || return 0
  pid="$(listener_pid "$CITUS_PORT")"
  [[ -n "$pid" ]] || return 0
  args="$(proc_args "$pid")"
  if [[ "$args" =~ -D\ ([^ ]+)/citus/coordinator/data ]] && [[ "${BASH_REMATCH[1]}/citus" != "$CITUS_DIR" ]]; then
    warn "the Citus cluster on port $CITUS_PORT belongs to another checkout's local stack (${BASH_REMATCH[1]}/citus); using it"
    CITUS_DIR="${BASH_REMATCH[1]}/citus"
    CITUS_PASSFILE="$CITUS_DIR/pgpass"
  fi
}

citus_up() {
  local node port
  citus_adopt_foreign
  for node in "${CITUS_NODES[@]}"; do citus_node_up "$node"; done
  citus_super_sql coordinator -c "SELECT citus_set_coordinator_host('$HOST', $CITUS_PORT)" >/dev/null \
    || die "citus: citus_set_coordinator_host failed"
  for node in "${CITUS_NODES[@]:1}"; do
    port="$(citus_port_of "$node")"
    if [[ "$(citus_super_sql coordinator -c "SELECT count(*) FROM pg_dist_node WHERE nodeport = $port")" == 0 ]]; then
      log "citus: adding $node ($HOST:$port) to the cluster"
      citus_super_sql coordinator -c "SELECT citus_add_node('$HOST', $port)" >/dev/null \
        || die "citus: citus_add_node for $node failed"
    fi
  done
  log "citus: ready: coordinator $HOST:$CITUS_PORT, $(citus_super_sql coordinator -c \
    "SELECT count(*) FROM pg_dist_node WHERE isactive AND noderole = 'primary' AND groupid > 0") active workers"
}

citus_node_stop() {  # node [mode]
  ( citus_select "$1"
    pg_running || { log "citus $1: not running"; exit 0; }
    log "citus $1: stopping (-m ${2:-fast})"
    pg_as "$PG_BIN/pg_ctl" -D "$PG_DATA" -m "${2:-fast}" -w -t 60 stop >/dev/null 2>&1 9>&- \
      || { show_log_tail "$PG_LOG" 40; die "citus $1 did not stop"; } )
}

citus_down() {
  local wipe=0 node
  case "${1:-}" in
    "") ;;
    --wipe) wipe=1 ;;
    *) die "usage: $0 citus-down [--wipe]" ;;
  esac
  for node in "${CITUS_NODES[@]}"; do citus_node_stop "$node"; done
  if (( wipe )); then
    log "wiping $CITUS_DIR"
    for node in "${CITUS_NODES[@]}"; do
      ( citus_select "$node"; [[ "$PG_SOCK_DIR" == "$PG_RUN" ]] || rm -rf "$PG_SOCK_DIR" )
    done
    rm -rf "$CITUS_DIR"
  fi
}

# One node up (citus-up for each; citus-start NODE after citus-stop or citus-kill: the fault runs).
citus_node_up() {
  citus_adopt_foreign
  citus_installed || die "Citus $CITUS_VERSION is not installed into PostgreSQL 15: run scripts/setup --citus"
  citus_write_passfile
  citus_node_start "$1"
}

citus_env() {
  printf 'export BELFRY_DATABASE_URL=postgresql://belfry:belfry@%s:%s/belfry\n' "$HOST" "$CITUS_PORT"
  printf 'export BELFRY_KAFKA_BROKERS=%s\n' "$HOST:$KAFKA_PORT"
}

citus_status() {
  local node ok=0
  for node in "${CITUS_NODES[@]}"; do
    ( citus_select "$node"
      if pg_running && pg_isready -q -h "$HOST" -p "$PG_PORT" -t 2; then
        echo "citus $node: up   $HOST:$PG_PORT (data $PG_DATA, log $PG_LOG)"
      else
        echo "citus $node: down ($HOST:$PG_PORT)"; exit 1
      fi ) || ok=1
  done
  return "$ok"
}

# After a PostgreSQL package upgrade (scripts/setup --citus): restart every server of this
# checkout that runs, so that none keeps the old binary while it loads the new extensions.
restart_running_pg() {
  local node
  if pg_running; then pg_stop fast; pg_start; fi
  if replica_running; then replica_stop fast; replica_start; fi
  for node in "${CITUS_NODES[@]}"; do
    if ( citus_select "$node"; pg_running ); then
      citus_node_stop "$node"
      citus_node_up "$node"
    fi
  done
}
