# Sourced by the bench scripts that run on the local Citus cluster (scripts/local-stack citus-up):
# a database of its own on the coordinator and both workers, made and dropped as the superuser
# over each node's socket, and the map from belfry shard to the Citus node that holds it.
# (2026-11-29-citus-faults.sh, a record kept as it ran, has its own copy of these.)
#
# The caller sets DB (the database's name) and runs from the repository root.
CITUS=$PWD/.local/citus
CITUS_NODES=(coordinator worker1 worker2)
citus_port_of() { case $1 in coordinator) echo 55460 ;; worker1) echo 55461 ;; worker2) echo 55462 ;; esac; }
citus_url() { echo "postgresql://belfry:belfry@127.0.0.1:$(citus_port_of $1)/$DB"; }
citus_su_sql() {  # node db, then psql args
  local n=$1 d=$2; shift 2
  psql -X -q -At -v ON_ERROR_STOP=1 -h $CITUS/$n/run -p $(citus_port_of $n) -U postgres -d $d "$@"
}
citus_coord() { citus_su_sql coordinator $DB "$@"; }
citus_drop_db() {
  local n
  for n in "${CITUS_NODES[@]}"; do
    citus_su_sql $n belfry -c "SET citus.enable_ddl_propagation = off" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" \
      2>&1 | grep -v -e NOTICE -e DETAIL -e HINT
  done
}
citus_create_db() {
  local n
  citus_drop_db
  for n in worker1 worker2 coordinator; do
    citus_su_sql $n belfry -c "SET citus.enable_ddl_propagation = off" -c "CREATE DATABASE $DB OWNER belfry" 2>/dev/null || return 1
  done
  for n in "${CITUS_NODES[@]}"; do citus_su_sql $n $DB -c "CREATE EXTENSION citus" || return 1; done
  citus_coord -c "SELECT citus_set_coordinator_host('127.0.0.1', 55460)" -c "SELECT citus_add_node('127.0.0.1', 55461)" \
    -c "SELECT citus_add_node('127.0.0.1', 55462)" > /dev/null
}
# "belfry-shard port citus-shard-id" per line, for belfry shards 0 .. $1-1 (default 120).
citus_shard_map() {
  citus_coord -F' ' -c "SELECT s, n.nodeport, pl.shardid FROM generate_series(0, ${1:-120} - 1) s
    JOIN pg_dist_placement pl ON pl.shardid = get_shard_id_for_distribution_column('shard_state', s::smallint)
    JOIN pg_dist_node n ON n.groupid = pl.groupid ORDER BY s"
}
