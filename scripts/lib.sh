# shellcheck shell=bash
# Shared helpers for the scripts in scripts/. Source it; do not run it.
#   source "$(dirname "$0")/lib.sh"
# Sets REPO_ROOT (absolute) and defines small logging/utility functions.

if [[ -z "${REPO_ROOT:-}" ]]; then
  REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fi
export REPO_ROOT

BELFRY_BUILD_DIR="${BELFRY_BUILD_DIR:-$REPO_ROOT/build}"

_belfry_prog="$(basename "${0:-belfry}")"

# Messages go to stderr so that stdout stays clean for machine-readable output
# (scripts/local-stack env).
log()  { printf '[%s] %s\n' "$_belfry_prog" "$*" >&2; }
warn() { printf '[%s] WARNING: %s\n' "$_belfry_prog" "$*" >&2; }
die()  { printf '[%s] ERROR: %s\n' "$_belfry_prog" "$*" >&2; exit 1; }

need_cmd() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || die "required command '$c' not found (run scripts/setup)"
  done
}

is_root() { [[ "$(id -u)" -eq 0 ]]; }

# Run a command as root: directly when we are root, through sudo otherwise.
as_root() {
  if is_root; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "need root to run: $* (and sudo is not installed)"
  fi
}

# True if something accepts TCP connections on host:port.
port_open() {
  local host="$1" port="$2"
  (exec 3<>"/dev/tcp/$host/$port") >/dev/null 2>&1
}

# Print the last N lines of a log file to stderr, framed.
show_log_tail() {
  local file="$1" n="${2:-40}"
  if [[ -r "$file" ]]; then
    printf -- '----- last %s lines of %s -----\n' "$n" "$file" >&2
    tail -n "$n" "$file" >&2 || true
    printf -- '----- end of %s -----\n' "$file" >&2
  else
    printf -- '(no log at %s)\n' "$file" >&2
  fi
}

# Seconds since the epoch (integer).
now_s() { date +%s; }

# Major version of a java binary ("17"), or empty if it does not run.
java_major() {
  local v
  v="$("$1" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')" || true
  [[ -n "$v" ]] || return 0
  if [[ "$v" == 1.* ]]; then v="${v#1.}"; fi
  printf '%s\n' "${v%%[.+-]*}"
}

# Print the java binary to run the Kafka broker with. Kafka 3.9 supports Java
# 11-21 (Java 24+ removed the SecurityManager APIs Kafka 3.x still calls), so
# prefer a Debian JDK 17/21 over whatever `java` on PATH is. BELFRY_JAVA wins.
find_java() {
  local cand m
  if [[ -n "${BELFRY_JAVA:-}" ]]; then
    printf '%s\n' "$BELFRY_JAVA"
    return 0
  fi
  for cand in /usr/lib/jvm/java-17-openjdk-*/bin/java /usr/lib/jvm/java-21-openjdk-*/bin/java \
              /usr/lib/jvm/java-11-openjdk-*/bin/java "$(command -v java 2>/dev/null || true)"; do
    [[ -n "$cand" && -x "$cand" ]] || continue
    m="$(java_major "$cand")"
    if [[ -n "$m" ]] && (( m >= 11 && m <= 23 )); then
      printf '%s\n' "$cand"
      return 0
    fi
  done
  return 1
}

# sha256 of a file (hex only).
file_sha256() { sha256sum "$1" | awk '{print $1}'; }

# The compiler cache every tree compiles through (cmake/ccache.cmake reads the same variable), kept
# outside the checkout so that a fresh clone on this machine finds it warm.
BELFRY_CCACHE_DIR="${BELFRY_CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/belfry-ccache}"
export BELFRY_CCACHE_DIR

# ccache's statistics for that cache, one line each for hits, misses and size (nothing without ccache).
ccache_stats() {
  command -v ccache >/dev/null 2>&1 || return 0
  CCACHE_DIR="$BELFRY_CCACHE_DIR" ccache --show-stats 2>/dev/null \
    | grep -E '^(Cacheable calls|  Hits|  Misses|Cache size|Local storage|  Cache size)' || true
}

# ctest's parallel level: BELFRY_TEST_JOBS, else 3 per core with a floor of 6. Most integration
# tests wait on minute boundaries, takeovers and catch-ups rather than compute, so several overlap
# well even on 2 cores (docs/testing.md has the measurements behind the numbers).
test_jobs() {
  if [[ -n "${BELFRY_TEST_JOBS:-}" ]]; then
    printf '%s\n' "$BELFRY_TEST_JOBS"
    return 0
  fi
  local n
  n="$(nproc 2>/dev/null || echo 2)"
  n=$((n * 3))
  ((n >= 6)) || n=6
  printf '%s\n' "$n"
}

# Citus in Debian's PostgreSQL 15 (third_party/citus): scripts/setup --citus builds this version,
# scripts/local-stack citus-up needs it. True when the extension is installed and its library names
# this version ("Citus 13.2.2").
CITUS_VERSION=13.2.2
citus_installed() {
  local lib=/usr/lib/postgresql/15/lib/citus.so control=/usr/share/postgresql/15/extension/citus.control
  [[ -f "$lib" && -f "$control" ]] || return 1
  grep -aq "Citus $CITUS_VERSION" "$lib"
}
