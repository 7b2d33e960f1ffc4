#!/usr/bin/env python3
"""Runs schemathesis against a live belfry node, with docs/openapi.yaml as the schema.

Starts `belfry serve` with a token (as openapi_contract_test.py does), seeds jobs of every kind
whose ids the spec gives as examples, and runs a bounded schemathesis run (examples, coverage and
fuzzing phases, one worker, keep-alive connections) with the checks below. Exit code: 0 only if
schemathesis found no 5xx and no answer that breaks the schema.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

from belfry_node import BelfryNode
from openapi_contract_test import TOKEN, seed

CHECKS = [
    "not_a_server_error",
    "response_schema_conformance",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
]
# The 405 for other methods (with Allow) is checked by openapi_contract_test.py, TRACE included.


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--belfry", required=True, help="the belfry binary")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(here)))
    ap.add_argument("--max-examples", type=int, default=300, help="per operation and phase")
    ap.add_argument("--seed", type=int, default=None, help="default: random (printed by schemathesis)")
    args = ap.parse_args()
    spec = os.path.join(args.source_dir, "docs", "openapi.yaml")
    schemathesis = os.path.join(os.path.dirname(sys.executable), "schemathesis")

    started = time.monotonic()
    with BelfryNode(args.belfry, args.source_dir, "schemathesis", token=TOKEN) as node:
        seed(node)
        print(f"node up and seeded in {time.monotonic() - started:.1f}s: {node.base_url}", flush=True)
        with tempfile.TemporaryDirectory(prefix="belfry-schemathesis-") as work:
            cmd = [
                schemathesis, "run", spec,
                "--url", node.base_url,
                "--header", f"Authorization: Bearer {TOKEN}",
                "--checks", ",".join(CHECKS),
                "--phases", "examples,coverage,fuzzing",
                "--max-examples", str(args.max_examples),
                "--workers", "1",
                "--continue-on-failure",
                "--request-timeout", "10",
                "--generation-database", "none",
                "--no-color",
                "--report", "junit",
                "--report-dir", work,
            ]
            if args.seed is not None:
                cmd += ["--seed", str(args.seed)]
            print("$ " + " ".join(cmd), flush=True)
            rc = subprocess.run(cmd, cwd=work, timeout=600).returncode
        if rc != 0:
            print(f"\n--- node log (tail) ---\n{node.log_tail(30)}")
    print(f"schemathesis exited {rc} after {time.monotonic() - started:.1f}s")
    print("1 passed, 0 failed" if rc == 0 else "0 passed, 1 failed")
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
