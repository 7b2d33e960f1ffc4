#!/usr/bin/env python3
"""Prints the slowest tests of one or more ctest JUnit files (ctest --output-junit).

scripts/test writes one file per tree (build/, build-tsan/, build-asan/) and calls this at the
end, so every run says where its time went:

    slowest_tests.py [--top N] LABEL=FILE [LABEL=FILE ...]

A missing file is skipped (a subset run has no sanitizer trees).
"""
import argparse
import os
import sys
import xml.etree.ElementTree as ET


def read_cases(path):
    """(name, seconds, status) for each testcase of a ctest JUnit file."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        status = case.get("status") or ("failed" if case.find("failure") is not None else "run")
        cases.append((case.get("name", "?"), float(case.get("time", "0") or 0), status))
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("files", nargs="+", metavar="LABEL=FILE")
    args = ap.parse_args()
    rows = []
    for spec in args.files:
        label, _, path = spec.partition("=")
        if not path:
            label, path = os.path.basename(spec), spec
        if not os.path.exists(path):
            continue
        try:
            rows += [(secs, label, name, status) for name, secs, status in read_cases(path)]
        except ET.ParseError as e:
            print(f"[test] cannot read {path}: {e}")
    if not rows:
        return 0
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"[test] the {min(args.top, len(rows))} slowest of {len(rows)} tests "
          f"(sum of test times {total:.0f} s; they overlap when ctest runs with -j):")
    for secs, label, name, status in rows[: args.top]:
        print(f"[test] {secs:8.1f} s  {label:5}  {name}{'' if status == 'run' else '  (' + status + ')'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
