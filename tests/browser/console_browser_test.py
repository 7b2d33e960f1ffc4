#!/usr/bin/env python3
"""The belfry console (issue 37) in a real browser: headless Chromium driven by Selenium.

Starts its own `belfry serve` (tests/contract/belfry_node.py: its own database and topics, a write
token secret), creates jobs through the CLI, and checks in the browser that an operator can:
  1. find a job by label;
  2. pause it with a reason and see the audit entry (actor, reason) on the job page;
  3. trigger it, and the manual trigger arrives on the job's Kafka topic;
  4. read a calendar job's next fires across a DST change, the same instants as GET /next;
  5. be refused with an expired or a missing write token, and read the server's reason;
  6. run a bulk resume by selector: a dry run's count, then the run;
and records each page's time to first render and API calls (timings.json).

  .venv/bin/python tests/browser/console_browser_test.py --belfry build/belfry --source-dir . --artifacts DIR

By default the node serves the console compiled into the binary; --console-dir serves it from a
directory (admin.console_dir) instead. Needs $BELFRY_DATABASE_URL and $BELFRY_KAFKA_BROKERS
(`eval "$(scripts/local-stack env)"`), /usr/bin/chromium and /usr/bin/chromedriver.
"""

import argparse
import base64
import datetime
import hashlib
import hmac
import json
import os
import sys
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
import uuid

SECRET = "console-browser-test-secret-" + uuid.uuid4().hex  # > 32 bytes
ACTOR = "ana@ops"
WAIT = 20  # seconds for a page state
TRIGGER_WAIT = 90  # seconds for the manual trigger to reach Kafka (fired at the shard's next tick)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def expired_token(actor):
    """An HS256 write token signed with the node's secret whose `exp` passed an hour ago."""
    now = int(time.time())
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = b64url(json.dumps({"sub": actor, "iat": now - 7200, "exp": now - 3600, "scope": "belfry:write"},
                               separators=(",", ":")).encode())
    sig = b64url(hmac.new(SECRET.encode(), f"{header}.{claims}".encode(), hashlib.sha256).digest())
    return f"{header}.{claims}.{sig}"


def http(base, path, method="GET", body=None, token=None):
    """(status, parsed JSON body) of one API request."""
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = "Bearer " + token
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def shown_time_to_iso(text):
    """'2027-03-07 01:30:13 UTC' or '... 01:30:13.500 UTC' (the page) -> '2027-03-07T01:30:13.000Z'."""
    t = text.strip()
    assert t.endswith(" UTC"), t
    t = t[:-4].replace(" ", "T")
    if "." not in t:
        t += ".000"
    return t + "Z"


class Skip(str):
    """A step's answer when the node cannot do what it checks."""


class TriggerWatch(threading.Thread):
    """Consumes a trigger topic from its start (a group of its own) until a manual trigger of the
    job, keyed by its key, arrives or the deadline passes."""

    def __init__(self, brokers, topic, key, job_id):
        super().__init__(daemon=True)
        from confluent_kafka import Consumer

        self.consumer = Consumer({"bootstrap.servers": brokers, "group.id": "console-browser-" + uuid.uuid4().hex,
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.consumer.subscribe([topic])
        self.key, self.job_id = key.encode(), job_id
        self.deadline = None
        self.found = None
        self.seen = 0
        self.started_at = None

    def arm(self):
        self.started_at = time.monotonic()
        self.deadline = self.started_at + TRIGGER_WAIT
        self.start()

    def run(self):
        try:
            while time.monotonic() < self.deadline and self.found is None:
                m = self.consumer.poll(1.0)  # polling Kafka: the one place with a timed wait
                if m is None or m.error():
                    continue
                self.seen += 1
                if m.key() != self.key:
                    continue
                v = json.loads(m.value())
                headers = dict(m.headers() or [])
                if v.get("jobId") == self.job_id and v.get("manual") == "trigger":
                    self.found = {"value": v, "headers": {k: h.decode() for k, h in headers.items()},
                                  "after_s": round(time.monotonic() - self.started_at, 1)}
        finally:
            self.consumer.close()


class Run:
    def __init__(self, args):
        self.args = args
        self.results = []  # (name, ok, detail); ok None: skipped
        self.shot_n = 0

    # ---- reporting -----------------------------------------------------------------------------

    def check(self, name, fn):
        t0 = time.monotonic()
        try:
            detail = fn() or ""
            if isinstance(detail, Skip):
                self.results.append((name, None, str(detail)))
                print(f"SKIP {name}: {detail}", flush=True)
                return
            self.results.append((name, True, detail))
            print(f"PASS {name} ({time.monotonic() - t0:.1f}s) {detail}", flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is reported, the run goes on
            self.results.append((name, False, f"{type(e).__name__}: {e}"))
            print(f"FAIL {name} ({time.monotonic() - t0:.1f}s): {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=3)
            self.shot(name.split(" ")[0] + "-failure")

    def shot(self, name):
        self.shot_n += 1
        path = os.path.join(self.args.artifacts, f"{self.shot_n:02d}-{name}.png")
        try:
            # The whole page (up to 2,400 px high): the viewport grows to it for the shot.
            height = min(2400, int(self.js("return document.documentElement.scrollHeight")))
            self.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": 1366, "height": max(height, 600), "deviceScaleFactor": 1, "mobile": False})
            self.d.save_screenshot(path)
            self.d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        except Exception as e:  # noqa: BLE001
            print(f"(no screenshot {path}: {e})")
        return path

    # ---- browser helpers -----------------------------------------------------------------------

    def wait(self, cond, what, timeout=WAIT):
        from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait

        def guarded(d):  # the page may be re-rendering: a missing or replaced element is "not yet"
            try:
                return cond(d)
            except (AssertionError, StaleElementReferenceException):
                return False
        try:
            return WebDriverWait(self.d, timeout, poll_frequency=0.1).until(guarded)
        except TimeoutException:
            msgs = self.js("return document.getElementById('messages').innerText")
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; page messages: {msgs!r}") from None

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def css(self, sel):
        from selenium.webdriver.common.by import By

        return self.d.find_elements(By.CSS_SELECTOR, sel)

    def el(self, sel):
        found = self.css(sel)
        if not found:
            raise AssertionError(f"no element {sel}")
        return found[0]

    def render_count(self):
        return int(self.js("return Number(document.body.dataset.renderCount || 0)"))

    def open(self, route, rendered):
        """Loads the console afresh at a route and waits until the page marks it rendered."""
        self.d.get("about:blank")
        self.d.get(self.ui + route)
        self.wait(lambda d: self.js("return document.body.dataset.rendered") == rendered, f"the {rendered} page to render")

    def type_into(self, sel, text):
        e = self.el(sel)
        e.clear()
        e.send_keys(text)

    def use_token(self, token):
        """Pastes a token into the header's field; the page reloads its data with it."""
        before = self.render_count()
        self.type_into("#token-input", token)
        self.el("#token-save").click()
        self.wait(lambda d: self.render_count() > before, "the page to render again with the token")

    def messages(self):
        return self.el("#messages").text

    # ---- the run -------------------------------------------------------------------------------

    def main(self):
        a = self.args
        os.makedirs(a.artifacts, exist_ok=True)
        sys.path.insert(0, os.path.join(a.source_dir, "tests", "contract"))
        from belfry_node import BelfryNode

        extra = {"BELFRY_ADMIN_WRITE_TOKEN_SECRET": SECRET}
        if a.console_dir:
            extra["BELFRY_ADMIN_CONSOLE_DIR"] = os.path.abspath(a.console_dir)
        node = BelfryNode(a.belfry, a.source_dir, "console", extra_env=extra)
        if not a.console_dir:
            node.env.pop("BELFRY_ADMIN_CONSOLE_DIR", None)  # the files compiled into the binary
        # Its own audit and trigger-DLQ topics too (belfry_node leaves those at the defaults).
        node.env["BELFRY_KAFKA_CHANGES_TOPIC"] = f"contract.{node.run_id}.changes"
        node.env["BELFRY_KAFKA_TRIGGERS_DLQ_TOPIC"] = f"contract.{node.run_id}.triggers-dlq"
        t_start = time.monotonic()
        with node:
            self.node = node
            self.base = node.base_url
            self.ui = node.base_url + "/ui/"
            print(f"node {node.base_url} (console from {'dir ' + a.console_dir if a.console_dir else 'the binary'})", flush=True)
            self.compare_console_files(node)
            self.setup_jobs(node)
            self.start_browser()
            try:
                self.steps()
            finally:
                self.d.quit()
        return time.monotonic() - t_start

    def compare_console_files(self, node):
        """Says whether the served console matches web/console/ (a stale embedded copy fails the steps)."""
        src = os.path.join(self.args.source_dir, "web", "console")
        stale = []
        for name in sorted(os.listdir(src)):
            with open(os.path.join(src, name), "rb") as f:
                want = f.read()
            with urllib.request.urlopen(self.ui + name, timeout=10) as r:
                got = r.read()
            if got != want:
                stale.append(f"{name} ({len(got)} bytes served, {len(want)} in web/console)")
        if stale:
            print("NOTE: the served console differs from web/console/: " + ", ".join(stale) +
                  " (rebuild belfry, or pass --console-dir)", flush=True)

    def setup_jobs(self, node):
        from confluent_kafka.admin import AdminClient, NewTopic

        r = uuid.uuid4().hex[:6]
        self.topic = node.topics["triggers"]
        admin = AdminClient({"bootstrap.servers": node.brokers})
        for f in admin.create_topics([NewTopic(self.topic, num_partitions=3, replication_factor=1)]).values():
            try:
                f.result(30)
            except Exception as e:  # noqa: BLE001 - it may exist
                if "TOPIC_ALREADY_EXISTS" not in str(e):
                    raise
        self.label = f"carrier=acme-{r}"
        self.job = f"shipment-acme-{r}"
        self.key = f"shipment-key-{r}"
        self.decoy = f"shipment-dhl-{r}"
        self.cron_job = f"report-berlin-{r}"
        node.put_jobs([
            {"id": self.job, "every": "EVERY_HOUR", "topic": self.topic, "owner": "tracking-svc", "key": self.key,
             "label": [self.label, "team=tracking"], "details": '{"shipmentId":42}'},
            {"id": self.decoy, "every": "EVERY_15_MINUTES", "topic": self.topic, "owner": "tracking-svc",
             "label": [f"carrier=dhl-{r}", "team=tracking"]},
            # Sundays of March and October at 02:30 Berlin: any 10 fires reach a DST change (the
            # March 02:30 does not exist, the October one happens twice).
            {"id": self.cron_job, "cron": "30 2 * 3,10 SUN", "time-zone": "Europe/Berlin", "topic": self.topic,
             "owner": "reports"},
        ])
        out = node.belfry(["token", "--actor", ACTOR, "--ttl", "1h"]).stdout.strip()
        self.token = out.split()[-1] if out else ""
        if self.token.count(".") != 2:
            raise RuntimeError(f"belfry token printed no token: {out!r}")

    def start_browser(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service

        o = Options()
        o.binary_location = self.args.chromium
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1366,1000",
                    "--disable-gpu", "--no-first-run", "--lang=en-US"):
            o.add_argument(arg)
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.d = webdriver.Chrome(options=o, service=Service(self.args.chromedriver))
        self.d.set_page_load_timeout(30)

    def steps(self):
        self.d.get(self.ui + "#/jobs")
        self.wait(lambda d: self.js("return document.body.dataset.rendered") == "jobs", "the jobs page")
        self.use_token(self.token)
        self.wait(lambda d: ACTOR in self.el("#token-status").text, "the token status to name the actor")
        self.check("1 find a job by label", self.step_find)
        self.check("1b find a job by id prefix", self.step_prefix)
        self.check("2 pause with a reason, audit entry", self.step_pause)
        watch = None

        def trigger():
            nonlocal watch
            watch = TriggerWatch(self.node.brokers, self.topic, self.key, self.job)
            return self.step_trigger(watch)
        self.check("3a trigger now (outcome and audit entry)", trigger)
        self.check("4 next fires across a DST change = GET /next", self.step_dst)
        self.check("5a expired write token refused, page says so", self.step_expired)
        self.check("5b missing write token refused, page says so", self.step_missing)
        self.check("6 bulk resume by label: dry run count, then run", self.step_bulk)
        self.check("3b the manual trigger arrives on Kafka", lambda: self.step_trigger_arrived(watch))
        self.check("7 page timings and API calls", self.step_timings)
        self.check("8 no CSP violation or script error in the browser log", self.step_log)

    # ---- the steps -----------------------------------------------------------------------------

    def step_find(self):
        self.el("#nav-jobs").click()
        self.type_into("#jobs-labels", self.label)
        self.el("#jobs-search").click()
        sel = f'tr[data-testid="job-row"][data-job-id="{self.job}"]'
        self.wait(lambda d: self.css(sel), f"the row of {self.job}")
        ids = [e.get_attribute("data-job-id") for e in self.css('tr[data-testid="job-row"]')]
        assert ids == [self.job], f"the label search listed {ids}, want only {self.job}"
        row = self.el(sel).text
        assert "tracking-svc" in row and "every hour" in row, f"row text: {row!r}"
        # The row's next trigger is the server's, as GET /v1/jobs gives it.
        status, listed = http(self.base, "/v1/jobs?label=" + urllib.parse.quote(self.label), token=self.token)
        assert status == 200, f"GET /v1/jobs?label= answered {status}"
        shown = self.el(sel + " td.next time").get_attribute("datetime")
        assert shown == listed["jobs"][0]["nextTriggerAt"], f"row shows {shown}, the API {listed['jobs'][0]['nextTriggerAt']}"
        self.shot("find-by-label")
        self.el(sel + " a").click()
        self.wait(lambda d: self.js("return document.body.dataset.rendered") == "job"
                  and self.el("#job-id").text == self.job, "the job page")
        return f"listed {ids}"

    def step_prefix(self):
        status, body = http(self.base, "/v1/jobs?limit=1&id_prefix=" + urllib.parse.quote(self.job[:-2]))
        if status == 400 and "id_prefix" in (body or {}).get("error", ""):
            return Skip("this belfry has no GET /v1/jobs?id_prefix= yet: " + body["error"])
        self.el("#nav-jobs").click()
        self.wait(lambda d: self.js("return document.body.dataset.rendered") == "jobs", "the jobs page")
        before = self.render_count()
        self.type_into("#jobs-labels", "")
        self.type_into("#jobs-prefix", self.job[:-2])  # "shipment-acme-xxxx": not the decoy "shipment-dhl-..."
        self.el("#jobs-search").click()
        self.wait(lambda d: self.render_count() > before and self.js("return document.body.dataset.rendered") == "jobs",
                  "the prefix search's results")
        ids = [e.get_attribute("data-job-id") for e in self.css('tr[data-testid="job-row"]')]
        assert ids == [self.job], f"the prefix search listed {ids}, want only {self.job}"
        self.shot("find-by-id-prefix")
        self.el(f'tr[data-job-id="{self.job}"] a').click()
        self.wait(lambda d: self.js("return document.body.dataset.rendered") == "job"
                  and self.el("#job-id").text == self.job, "the job page")
        return f"listed {ids}"

    def step_pause(self):
        reason = "carrier API outage " + uuid.uuid4().hex[:4]
        self.type_into("#action-reason", reason)
        self.el("#action-pause").click()
        self.wait(lambda d: self.el("#action-outcome").get_attribute("data-status") not in (None, "", "sending"), "the pause outcome")
        status = self.el("#action-outcome").get_attribute("data-status")
        assert status == "applied", f"pause outcome {status}: {self.el('#action-outcome').text}"
        entry = 'li[data-testid="audit-entry"][data-op="pause"]'
        self.wait(lambda d: self.css(entry), "the pause entry in the audit trail")
        e = self.el(entry)
        assert e.get_attribute("data-actor") == ACTOR, f"audit actor {e.get_attribute('data-actor')!r}"
        assert reason in e.text and ACTOR in e.text, f"audit entry text: {e.text!r}"
        assert "paused: false → true" in e.text, f"the diff does not show paused: {e.text!r}"
        self.wait(lambda d: self.css("#pause-note") and reason in self.el("#pause-note").text, "the pause note")
        self.shot("paused-audit-entry")
        return f"audit: {e.text.splitlines()[0]!r}"

    def step_trigger(self, watch):
        before = len(self.css('li[data-testid="audit-entry"][data-op="trigger"]'))
        self.type_into("#action-reason", "manual check from the console test")
        self.el("#action-trigger").click()
        watch.arm()
        self.wait(lambda d: self.el("#action-outcome").get_attribute("data-status") not in (None, "", "sending"), "the trigger outcome")
        status = self.el("#action-outcome").get_attribute("data-status")
        assert status == "applied", f"trigger outcome {status}: {self.el('#action-outcome').text}"
        self.wait(lambda d: len(self.css('li[data-testid="audit-entry"][data-op="trigger"]')) > before, "the trigger's audit entry")
        self.shot("triggered")
        return self.el("#action-outcome").text

    def step_trigger_arrived(self, watch):
        assert watch is not None and watch.started_at is not None, "the trigger was never sent"
        watch.join(max(0.0, watch.deadline - time.monotonic()) + 5)
        assert watch.found, f"no manual trigger of {self.job} keyed {self.key} on {self.topic} within {TRIGGER_WAIT}s ({watch.seen} messages seen)"
        f = watch.found
        assert f["headers"].get("belfry-job-id") == self.job and f["headers"].get("belfry-manual") == "trigger", f["headers"]
        return f"arrived {f['after_s']}s after the click: {json.dumps(f['value'])}"

    def step_dst(self):
        self.el("#nav-jobs").click()
        self.wait(lambda d: self.js("return document.body.dataset.rendered") == "jobs", "the jobs page")
        self.type_into("#jobs-labels", "")
        self.type_into("#jobs-owner", "reports")
        self.el("#jobs-search").click()
        link = f'tr[data-job-id="{self.cron_job}"] a'
        self.wait(lambda d: self.css(link), "the calendar job's row")
        self.el(link).click()
        rows = 'tr[data-testid="next-fire"]'
        self.wait(lambda d: self.js("return document.body.dataset.rendered") == "job" and len(self.css(rows)) == 10, "10 next fires")
        status, api = http(self.base, f"/v1/jobs/{urllib.parse.quote(self.cron_job, safe='')}/next?n=10")
        assert status == 200, (status, api)
        shown = [shown_time_to_iso(r.find_element("css selector", "td.utc").text) for r in self.css(rows)]
        attrs = [r.get_attribute("data-utc") for r in self.css(rows)]
        assert shown == api["next"], f"page shows {shown}, GET /next says {api['next']}"
        assert attrs == api["next"], f"data-utc {attrs} != {api['next']}"
        locals_shown = [r.find_element("css selector", "td.local").text for r in self.css(rows)]
        for f, text in zip(api["fires"], locals_shown):
            want = f["local"][:10] + " " + f["local"][11:16] + " (UTC" + f["local"][19:] + ")"
            assert text == want, f"local time {text!r}, want {want!r}"
        marked = [(r.get_attribute("data-dst"), r.find_elements("css selector", ".dst")) for r in self.css(rows)]
        api_dst = [f["dst"] or "" for f in api["fires"]]
        assert [m[0] for m in marked] == api_dst, f"DST marks {[m[0] for m in marked]} != {api_dst}"
        assert any(api_dst), f"no DST rule in the next 10 fires: {api['fires']}"
        for dst, els in marked:
            if dst:
                assert any(dst.replace("_", " ") in e.text for e in els), f"the {dst} row shows no mark"
        assert "Europe/Berlin" in self.el("#next-zone").text
        self.el("#next-fires-table").location_once_scrolled_into_view
        self.shot("dst-next-fires")
        return f"10 fires equal, DST marks {[d for d in api_dst if d]}"

    def goto_job(self):
        self.d.get(self.ui + "#/jobs/" + urllib.parse.quote(self.job, safe=""))
        self.wait(lambda d: self.js("return document.body.dataset.rendered") == "job" and self.el("#job-id").text == self.job, "the job page")

    def step_expired(self):
        token = expired_token(ACTOR)
        status, body = http(self.base, "/v1/commands", "POST", {"op": "resume", "id": self.job}, token)
        assert status == 401 and "expired" in body["error"], (status, body)
        self.goto_job()
        self.use_token(token)
        self.wait(lambda d: "EXPIRED" in self.el("#token-status").text, "the token status to say expired")
        self.el("#action-resume").click()
        self.wait(lambda d: body["error"] in self.messages(), "the server's expired message on the page")
        text = self.messages()
        assert "HTTP 401" in text and "write token is missing, expired or was refused" in text, text
        assert self.el("#action-outcome").get_attribute("data-status") == "refused"
        self.shot("expired-token-refused")
        st, job = http(self.base, "/v1/jobs/" + urllib.parse.quote(self.job, safe=""))
        assert st == 200 and job["paused"], "the job was resumed with an expired token"
        return repr(body["error"])

    def step_missing(self):
        self.el("#token-clear").click()
        self.wait(lambda d: "No token" in self.el("#token-status").text, "the token status to say no token")
        stored = self.js("return [sessionStorage.getItem('belfry.token'), localStorage.length, document.cookie]")
        assert stored == [None, 0, ""], f"token left behind: {stored}"
        self.el("#action-trigger").click()
        self.wait(lambda d: "a command needs a write token" in self.messages(), "the missing-token message")
        assert "HTTP 401" in self.messages()
        self.shot("missing-token-refused")
        return repr(" ".join(self.messages().split())[:200])

    def step_bulk(self):
        self.use_token(self.token)
        self.wait(lambda d: ACTOR in self.el("#token-status").text, "the token status to name the actor")
        self.el("#nav-bulk").click()
        self.wait(lambda d: self.js("return document.body.dataset.rendered") == "bulk", "the bulk page")
        from selenium.webdriver.support.ui import Select

        Select(self.el("#bulk-op")).select_by_value("resume")
        assert self.el("#bulk-op").get_attribute("value") == "resume"
        self.type_into("#bulk-labels", self.label)
        self.type_into("#bulk-reason", "outage over")
        assert not self.el("#bulk-run").is_enabled(), "Run is enabled before a dry run"
        self.el("#bulk-dry").click()
        self.wait(lambda d: self.css("#bulk-dry-count"), "the dry run's count", timeout=60)
        matched = self.el("#bulk-dry-count").get_attribute("data-matched")
        assert matched == "1", f"dry run matched {matched}"
        self.wait(lambda d: self.el("#bulk-run").is_enabled(), "Run to be enabled")
        self.shot("bulk-dry-run")
        self.el("#bulk-run").click()
        self.wait(lambda d: self.el("#bulk-outcome").get_attribute("data-status") == "applied"
                  and "changed 1" in self.el("#bulk-outcome").text, "the bulk run's outcome", timeout=60)
        self.wait(lambda d: len(self.css('tr[data-testid="bulk-row"][data-state="finished"]')) >= 2, "both operations listed as finished")
        self.shot("bulk-run")
        st, job = http(self.base, "/v1/jobs/" + urllib.parse.quote(self.job, safe=""))
        assert st == 200 and not job["paused"], "the bulk resume did not resume the job"
        return self.el("#bulk-outcome").text

    def step_timings(self):
        pages = [("jobs", "#/jobs", "jobs"), ("job", "#/jobs/" + urllib.parse.quote(self.cron_job, safe=""), "job"),
                 ("shards", "#/shards", "shards"), ("load", "#/load", "load"), ("bulk", "#/bulk", "bulk")]
        rows = []
        for name, route, rendered in pages:
            self.open(route, rendered)
            t = self.js("""
              const nav = performance.getEntriesByType('navigation')[0];
              const m = performance.getEntriesByName('rendered')[0];
              return {render_ms: Math.round(m.startTime - nav.responseStart), response_start_ms: Math.round(nav.responseStart),
                      dom_content_loaded_ms: Math.round(nav.domContentLoadedEventEnd),
                      api_calls: Number(document.body.dataset.apiCalls), ok: document.body.dataset.renderOk === 'true'};""")
            t["page"] = name
            rows.append(t)
            self.shot("page-" + name)
        with open(os.path.join(self.args.artifacts, "timings.json"), "w") as f:
            json.dump(rows, f, indent=2)
        print("\n| page | responseStart→rendered (ms) | DOMContentLoaded (ms) | API calls | rendered ok |")
        print("|---|---:|---:|---:|---|")
        for t in rows:
            print(f"| {t['page']} | {t['render_ms']} | {t['dom_content_loaded_ms']} | {t['api_calls']} | {t['ok']} |")
        print(flush=True)
        bad = [t["page"] for t in rows if not t["ok"]]
        assert not bad, f"pages rendered with an error: {bad}"
        return "written to timings.json"

    def step_log(self):
        log = self.d.get_log("browser")
        bad = [e["message"] for e in log if e["level"] == "SEVERE" and "Failed to load resource" not in e["message"]]
        bad += [e["message"] for e in log if "Content Security Policy" in e["message"] or "Content-Security-Policy" in e["message"]]
        assert not bad, "\n".join(bad[:10])
        return f"{len(log)} log entries, none bad"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--belfry", required=True, help="the belfry binary")
    p.add_argument("--source-dir", required=True, help="the source tree (migrations/, tests/contract/, web/console/)")
    p.add_argument("--artifacts", required=True, help="where screenshots and timings.json go")
    p.add_argument("--console-dir", default="", help="serve the console from this directory (admin.console_dir) instead of the binary")
    p.add_argument("--chromium", default="/usr/bin/chromium")
    p.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    args = p.parse_args()
    args.belfry = os.path.abspath(args.belfry)
    args.source_dir = os.path.abspath(args.source_dir)
    args.artifacts = os.path.abspath(args.artifacts)
    run = Run(args)
    try:
        took = run.main()
    except Exception as e:  # noqa: BLE001 - setup failed: one failure, reported
        traceback.print_exc()
        run.results.append(("setup", False, str(e)))
        took = None
    passed = sum(1 for r in run.results if r[1] is True)
    skipped = sum(1 for r in run.results if r[1] is None)
    failed = len(run.results) - passed - skipped
    print()
    for name, ok, detail in run.results:
        word = {True: "PASS", None: "SKIP", False: "FAIL"}[ok]
        print(f"{word}  {name}" + ("" if ok else f": {detail}"))
    if took is not None:
        print(f"took {took:.0f}s at {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%M:%SZ}")
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
