"""The Python and Java client libraries against a running belfry on the local stack.

One `belfry serve` node (tests/contract/belfry_node.py: its own database and topics, the admin API
on a free port), one trigger topic per library; the Java library's integration test (JUnit tag
"integration", run with Maven offline) runs at the same time as the Python one, so the suite
waits for one trigger minute, not two. Each library: commands published and their outcomes
awaited (applied, and a rejection only belfry can make, cron_never_fires), pause/resume/delete,
(Python: a manual trigger, a dry-run backfill, a trigger of no job, a delete by tombstone), jobs fired, the consumer helper handling the triggers and reporting `succeeded`, and belfry
recording those executions (GET /v1/jobs/{id}/executions).

usage: clients_itest.py --belfry BIN --source-dir DIR [--maven-build-dir DIR] [--skip-java]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import requests

HERE = os.path.dirname(os.path.abspath(__file__))


def log(msg):
    print(f"[clients_itest {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def python_client(node, trigger_topic):
    from belfry_client import BelfryProducer, Cron, Every, Upsert, TriggerConsumer, format_iso_time, parse_iso_time

    run = uuid.uuid4().hex[:8]
    every, cron = f"py-every-{run}", f"py-cron-{run}"
    with BelfryProducer(node.brokers, commands_topic=node.topics["commands"], results_topic=node.topics["results"],
                        actor="clients-itest-py") as producer:
        o = producer.put(Upsert(every, Every("EVERY_MINUTE"), topic=trigger_topic, job_details={"lib": "python"}),
                         wait=True, timeout=60)
        check(o.applied and o.op == "upsert" and o.id == every, f"put interval job: {o}")
        o = producer.put(Upsert(cron, Cron("* * * * *", "Europe/Berlin"), topic=trigger_topic), wait=True, timeout=60)
        check(o.applied, f"put cron job: {o}")
        o = producer.put(Upsert(f"py-never-{run}", Cron("0 0 30 2 *"), topic=trigger_topic), wait=True, timeout=60)
        check(o.status == "rejected" and o.reason == "cron_never_fires", f"a cron job that never fires: {o}")
        check(producer.pause(every, reason="itest", wait=True, timeout=60).applied, "pause")
        job = node.get_json(f"/v1/jobs/{every}")
        check(job.get("paused") is True and (job.get("pause") or {}).get("reason") == "itest", f"paused job: {job}")
        check(producer.resume(every, wait=True, timeout=60).applied, "resume")
        o = producer.trigger(every, reason="itest", wait=True, timeout=60)
        check(o.applied and o.op == "trigger" and o.slots == 1, f"trigger: {o}")
        now = int(time.time() * 1000) // 60000 * 60000
        o = producer.backfill(every, format_iso_time(now - 10 * 60000), format_iso_time(now), dry_run=True,
                              wait=True, timeout=60)
        check(o.applied and o.op == "backfill" and o.dry_run is True and o.slots == 10 and o.covered == 0,
              f"a dry-run backfill of 10 minutes: {o}")
        o = producer.trigger(f"py-absent-{run}", wait=True, timeout=60)
        check(o.status == "rejected" and o.reason == "not_found", f"a trigger of no job: {o}")
        log("python: commands applied; waiting for the triggers")

        handled, manual = {}, []

        def handle(t):
            if t.manual:
                manual.append(t)
            else:
                handled.setdefault(t.job_id, t)

        consumer = TriggerConsumer(node.brokers, f"clients-itest-py-{run}", [trigger_topic],
                                   executions_topic=node.topics["executions"], worker="py-worker")
        try:
            deadline = time.monotonic() + 100
            while time.monotonic() < deadline and not ({every, cron} <= set(handled) and manual):
                consumer.poll(handle, 0.5)
        finally:
            consumer.close()
        check({every, cron} <= set(handled), f"triggers handled: {sorted(handled)}")
        check([(t.job_id, t.manual) for t in manual] == [(every, "trigger")], f"the manual trigger: {manual}")
        check(handled[every].job_details == {"lib": "python"} and handled[every].interval_minutes == 1, str(handled[every]))
        log(f"python: triggers handled: {[(t.job_id, t.scheduled_for) for t in handled.values()]}")
        for t in handled.values():
            node.wait_for(lambda: any(e["status"] == "succeeded" and e["worker"] == "py-worker"
                                      and parse_iso_time(e["scheduledFor"]) == t.scheduled_for_ms
                                      for e in node.get_json(f"/v1/jobs/{t.job_id}/executions?limit=20")["executions"]),
                          30, f"belfry never recorded the execution of {t}")
        check(producer.delete(every, wait=True, timeout=60).applied, f"delete {every}")
        o = producer.delete(cron, tombstone=True, reason="itest", wait=True, timeout=60)
        check(o.applied and o.op == "delete", f"delete {cron} by a tombstone: {o}")
        gone = requests.get(f"{node.base_url}/v1/jobs/{cron}", headers=node.auth_headers(), timeout=10)
        check(gone.status_code == 404, f"the tombstoned job is gone: {gone.status_code} {gone.text[:200]}")
    log("python: executions recorded, jobs deleted")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--belfry", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--maven-build-dir", default=None)
    ap.add_argument("--skip-java", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.source_dir, "tests", "contract"))
    sys.path.insert(0, os.path.join(args.source_dir, "clients", "python", "src"))
    from belfry_node import BelfryNode
    from confluent_kafka.admin import AdminClient, NewTopic

    started = time.monotonic()
    with BelfryNode(args.belfry, args.source_dir, "clients") as node:
        topics = {lib: f"{node.topics['triggers']}.{lib}" for lib in ("py", "java")}
        admin = AdminClient({"bootstrap.servers": node.brokers})
        for f in admin.create_topics([NewTopic(t, 1, 1) for t in topics.values()]).values():
            f.result(30)
        log(f"node up on {node.base_url} after {time.monotonic() - started:.1f}s")
        java = None
        if not args.skip_java:
            env = dict(os.environ, BELFRY_IT_BROKERS=node.brokers, BELFRY_IT_TRIGGER_TOPIC=topics["java"],
                       BELFRY_IT_COMMANDS_TOPIC=node.topics["commands"], BELFRY_IT_RESULTS_TOPIC=node.topics["results"],
                       BELFRY_IT_EXECUTIONS_TOPIC=node.topics["executions"], BELFRY_IT_ADMIN_URL=node.base_url)
            cmd = ["mvn", "-o", "-q", "-B", "-f", os.path.join(args.source_dir, "clients", "java", "pom.xml"), "test",
                   "-Dgroups=integration", "-DexcludedGroups=none", "-Dsurefire.failIfNoSpecifiedTests=false"]
            build_dir = args.maven_build_dir or tempfile.mkdtemp(prefix="belfry-clients-itest-")
            shutil.rmtree(os.path.join(build_dir, "surefire-reports"), ignore_errors=True)
            cmd.append(f"-Dbelfry.build.directory={build_dir}")
            java = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            python_client(node, topics["py"])
        finally:
            if java is not None:
                out, _ = java.communicate(timeout=240)
                log(f"java: mvn exited {java.returncode}")
                if java.returncode != 0:
                    print(out)
                    print(node.log_tail())
        check(java is None or java.returncode == 0, "the Java client's integration test failed (output above)")
        if java is not None:  # it ran, and ran the test (a tag filter that matches nothing also exits 0)
            report = os.path.join(build_dir, "surefire-reports", "TEST-dev.belfry.client.IntegrationTest.xml")
            with open(report, encoding="utf-8") as f:
                head = f.read(2000)
            m = re.search(r'time="([0-9.]+)" tests="(\d+)" errors="(\d+)" skipped="(\d+)" failures="(\d+)"', head)
            check(m and m.group(2) == "1" and m.group(3, 4, 5) == ("0", "0", "0"), f"the Java test report: {head[:600]}")
            log(f"java: IntegrationTest passed in {m.group(1)}s")
    log(f"passed in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
