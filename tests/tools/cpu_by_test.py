#!/usr/bin/env python3
"""Where a ctest run's CPU goes: samples /proc while it runs and sums CPU seconds per test.

  cpu_by_test.py --out FILE -- ctest ...     run the command, then print the table to FILE

Every 0.5 s it reads each process's utime/stime and cutime/cstime (the CPU of children it has
reaped) and finds the test it belongs to: the child of ctest it descends from, named by its
command line. A test's CPU is the most its top process and its live descendants were seen to
hold, so the last half second of each short-lived process is missed: the figures are a lower
bound. The servers the tests share (postgres, the Kafka broker) are summed by name, and
the machine's busy time comes from /proc/stat. Linux only; used for docs/testing.md.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def read_procs():
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                raw = f.read().decode("latin-1")
        except OSError:
            continue
        comm = raw[raw.index("(") + 1:raw.rindex(")")]
        f = raw[raw.rindex(")") + 2:].split()
        ppid = int(f[1])
        own = (int(f[11]) + int(f[12])) / HZ
        kids = (int(f[13]) + int(f[14])) / HZ
        procs[int(d)] = (ppid, comm, own, kids)
    return procs


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("latin-1").strip()
    except OSError:
        return ""


def busy_seconds():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return (sum(v) - idle) / HZ, sum(v) / HZ


def test_name(cmd):
    # the test binary (and its filter, for split tests) or the script a test runs
    parts = cmd.split()
    name = os.path.basename(parts[0]) if parts else "?"
    for p in parts[1:]:
        if p.startswith("--gtest_filter="):
            return f"{name} {p[len('--gtest_filter='):]}"
        if p.endswith((".py", ".sh")) or "/scripts/" in p:
            return f"{name} {os.path.basename(p)}"
    return name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    b0, t0 = busy_seconds()
    w0 = time.monotonic()
    child = subprocess.Popen(cmd)
    per_top = {}     # top pid -> [name, max cpu]
    servers = {}     # server pid -> [name, max cpu]
    while child.poll() is None:
        procs = read_procs()
        kids = {}
        for pid, (ppid, *_rest) in procs.items():
            kids.setdefault(ppid, []).append(pid)
        ctests = [p for p, v in procs.items() if v[1] == "ctest"]
        for c in ctests:
            for top in kids.get(c, []):
                total, stack = 0.0, [top]
                while stack:
                    p = stack.pop()
                    _, _, own, reaped = procs[p]
                    total += own + reaped
                    stack.extend(kids.get(p, []))
                e = per_top.setdefault(top, [None, 0.0])
                if e[0] is None:
                    e[0] = test_name(cmdline(top))
                e[1] = max(e[1], total)
        for pid, (ppid, comm, own, reaped) in procs.items():
            if comm == "postgres" and procs.get(ppid, (0, ""))[1] != "postgres":
                e = servers.setdefault(pid, ["postgres (all backends)", own + reaped, 0.0])
                e[2] = max(e[2], own + reaped)
            elif comm == "java" and "kafka.Kafka" in cmdline(pid):
                e = servers.setdefault(pid, ["kafka broker", own + reaped, 0.0])
                e[2] = max(e[2], own + reaped)
        time.sleep(0.5)
    b1, t1 = busy_seconds()
    wall = time.monotonic() - w0
    by_name = {}
    for name, cpu in per_top.values():
        by_name[name] = by_name.get(name, 0.0) + cpu
    srv = {}
    for name, first, last in servers.values():
        srv[name] = srv.get(name, 0.0) + last - first
    with open(a.out, "w") as out:
        out.write(f"wall {wall:.0f} s; machine busy {b1 - b0:.0f} CPU-s of {t1 - t0:.0f} "
                  f"({100 * (b1 - b0) / max(1e-9, t1 - t0):.0f}%)\n")
        out.write(f"tests (lower bound) {sum(by_name.values()):.0f} CPU-s; "
                  + "; ".join(f"{k} {v:.0f} CPU-s" for k, v in srv.items())
                  + "\n")
        for name, cpu in sorted(by_name.items(), key=lambda kv: -kv[1]):
            out.write(f"{cpu:8.1f}  {name}\n")
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
