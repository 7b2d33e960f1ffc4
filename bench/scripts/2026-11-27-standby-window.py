#!/usr/bin/env python3
"""One measurement window of the issue 19 benchmarks (the standby's, and the reshard's on the
branch `reshard`).

  2026-11-27-standby-window.py SECONDS METRICS_URL   -> one JSON line on stdout

CPU seconds over the window, from /proc/PID/stat (utime + stime), by group: the primary's
PostgreSQL processes, the standby's, belfry, the Kafka broker, everything else. A postgres
process belongs to the cluster of the postmaster it descends from (its -D data directory).
From belfry's /metrics at both ends: triggers emitted, on-time lateness quantiles (from the
histogram's buckets), and tick queries by server.
"""
import json, os, re, sys, time, urllib.request

HZ = os.sysconf("SC_CLK_TCK")


def procs():
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                line = f.read()
        except OSError:
            continue
        comm = line[line.index("(") + 1:line.rindex(")")]
        rest = line[line.rindex(")") + 2:].split()
        out[int(pid)] = (comm, int(rest[1]), int(rest[11]) + int(rest[12]))
    return out


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def group(pid, table):
    comm, ppid, _ = table[pid]
    if comm == "postgres" or comm.startswith("postgres"):
        p = pid
        while p in table and table[p][1] in table and table[table[p][1]][0].startswith("postgres"):
            p = table[p][1]
        return "pg_standby" if "pg-replica" in cmdline(p) else "pg_primary"
    if comm == "java":
        return "kafka"
    if comm == "belfry":
        return "belfry"
    if comm.startswith("belfry-loadtes"):
        return "loadtest"
    return "other"


def metrics(url):
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    vals = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        try:
            vals[name] = float(value)
        except ValueError:
            pass
    return vals


def quantile(delta_buckets, q):
    total = delta_buckets[-1][1]
    if total <= 0:
        return None
    for le, count in delta_buckets:
        if count >= q * total:
            return le
    return None


def main():
    window, url = float(sys.argv[1]), sys.argv[2]
    m0, t0 = metrics(url), procs()
    start = time.time()
    time.sleep(window)
    m1, t1 = metrics(url), procs()
    elapsed = time.time() - start
    cpu = {}
    for pid, (comm, ppid, ticks) in t1.items():
        if pid not in t0:
            continue
        g = group(pid, t1)
        cpu[g] = cpu.get(g, 0.0) + (ticks - t0[pid][2]) / HZ
    d = lambda k: m1.get(k, 0.0) - m0.get(k, 0.0)
    buckets = []
    for k in m1:
        mm = re.match(r'belfry_trigger_lateness_seconds_bucket\{le="([^"]+)"\}', k)
        if mm:
            le = float("inf") if mm.group(1) == "+Inf" else float(mm.group(1))
            buckets.append((le, d(k)))
    buckets.sort()
    print(json.dumps({
        "window_s": round(elapsed, 1),
        "cpu_cores": {g: round(s / elapsed, 3) for g, s in sorted(cpu.items())},
        "triggers_per_min": round(d("belfry_triggers_emitted_total") * 60 / elapsed),
        "lateness_s": {q: quantile(buckets, float(q)) for q in ("0.5", "0.99", "0.999")},
        "tick_queries": {s: d(f'belfry_tick_queries_total{{server="{s}"}}') for s in ("standby", "primary")},
        "fallbacks": {r: d(f'belfry_standby_fallbacks_total{{reason="{r}"}}') for r in ("behind", "unavailable", "failed")},
        "command_apply_s": round(d("belfry_command_apply_seconds_sum"), 2),
        "tick_queries_n": d("belfry_tick_query_seconds_count"),
        "tick_query_mean_ms": round(1000 * d("belfry_tick_query_seconds_sum") / max(1.0, d("belfry_tick_query_seconds_count")), 2),
        "tick_query_rows_mean": round(d("belfry_tick_query_rows_sum") / max(1.0, d("belfry_tick_query_rows_count")), 1),
        "tick_duration_mean_ms": round(1000 * d("belfry_tick_duration_seconds_sum") / max(1.0, d("belfry_tick_duration_seconds_count")), 2),
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }))


main()
