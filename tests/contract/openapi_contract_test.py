#!/usr/bin/env python3
"""Checks every admin API route of a live belfry node against docs/openapi.yaml.

Starts `belfry serve` (with a bearer token) on its own database and topics, creates jobs of
every kind through the real command path (`belfry jobs put`) and reports executions through
Kafka, then calls every route with realistic and erroneous inputs, GET and HEAD and the other
methods, and validates each answer (status, headers, body) with openapi-core. It also requires
that every operation and documented status of the spec was seen, and that every route the server
registers (src/http/admin_server.cc) is in the spec.

Exit 0 when everything conforms; otherwise every violation is printed and the exit code is 1.
Run by ctest (tests/contract/CMakeLists.txt) with the venv that scripts/setup creates:
  .venv/bin/python tests/contract/openapi_contract_test.py --belfry build/belfry
"""

import argparse
import base64
import copy
import hashlib
import hmac
import http.client
import json
import os
import re
import socket
import sys
import time
import urllib.parse

import jsonschema
import yaml
from openapi_core import OpenAPI
from openapi_core.datatypes import RequestParameters
from werkzeug.datastructures import Headers

from belfry_node import BelfryNode, iso_ms

TOKEN = "contract-token-3f9a"
# The node's admin.write_token_secret: POST /v1/commands takes tokens signed with it (minted here
# with Python's hmac, independently of the node's own code).
WRITE_SECRET = "contract-write-secret-of-at-least-32-bytes"


def write_token(actor="contract@ops", ttl_s=3600, now_s=None, secret=WRITE_SECRET):
    """An HS256 JWT with the claims belfry's write tokens carry (docs/console.md)."""
    def b64(b):
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    now_s = int(time.time()) if now_s is None else now_s
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = b64(json.dumps({"sub": actor, "iat": now_s, "exp": now_s + ttl_s, "scope": "belfry:write"},
                            separators=(",", ":")).encode())
    sig = b64(hmac.new(secret.encode(), f"{header}.{claims}".encode(), hashlib.sha256).digest())
    return f"{header}.{claims}.{sig}"
# The bulk operations seed() runs (ids of operations, not of jobs).
BULK_DRY = "count-tracking"
BULK_RESUME = "resume tracking/svc"
METHODS = ("get", "head", "post", "put", "patch", "delete", "options", "trace")
# Documented statuses a healthy test node cannot be made to answer; each needs a reason.
UNREACHABLE = {
    ("*", "500"): "an internal failure (a bug) cannot be provoked on purpose",
    ("/v1/jobs/{id}/executions", "404"): "the handler's 'history not enabled' answer: belfry serve "
    "always gives the admin server the execution store, even with executions.enabled false",
    ("/healthz", "503"): "load shedding (every connection worker busy) is not provoked here",
    ("/metrics", "503"): "load shedding (every connection worker busy) is not provoked here",
    ("/v1/commands", "503"): "a command the broker does not acknowledge needs Kafka down while the node "
    "runs; CommandRouteTest covers the answer",
    ("/v1/load", "422"): "a breakdown over more than 1,000,000 groups of jobs needs a database far larger than "
    "this node's; PgJobStoreTest.ReadLoadGroupsCountsJobsThatFireAlike checks the cap",
}


def unreachable(template, status):
    return (template, status) in UNREACHABLE or ("*", status) in UNREACHABLE


class RawRequest:
    """openapi-core's Request protocol over a byte-exact target (no client re-encoding)."""

    def __init__(self, host_url, method, target, headers):
        self.host_url = host_url
        self.method = method.lower()
        split = urllib.parse.urlsplit(target)
        self.path = split.path
        query = {}
        for k, v in urllib.parse.parse_qsl(split.query, keep_blank_values=True):
            query.setdefault(k, v)
        self.parameters = RequestParameters(query=query, header=Headers(headers))
        self.content_type = ""
        self.body = None


class RawResponse:
    def __init__(self, status, headers, body):
        self.status_code = status
        self.headers = Headers(headers)
        self.content_type = (self.headers.get("Content-Type") or "").lower()
        self.data = body

    def json(self):
        return json.loads(self.data)


class Contract:
    def __init__(self, spec_path, source_dir):
        with open(spec_path) as f:
            self.spec = yaml.safe_load(f)
        live = copy.deepcopy(self.spec)
        live["servers"] = [{"url": "/"}]  # whichever node answers
        self.openapi = OpenAPI.from_dict(live)
        self.conn = None
        self.failures = []
        self.seen = set()  # (path template, method, status)
        self.seen_connection = set()  # the same, for x-belfry-connection-answers
        self.calls = 0
        self.source_dir = source_dir
        # Path templates as regexes over the raw (still percent-encoded) path, as the server routes.
        self.templates = [
            (t, re.compile("^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(t)) + "$")) for t in self.spec["paths"]
        ]

    # ---- transport -------------------------------------------------------------------------

    def use(self, base_url):
        """Sends the following calls to this node."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        self.base_url = base_url
        self.host, self.port = urllib.parse.urlsplit(base_url).netloc.split(":")

    def _send(self, method, target, headers, body=None):
        for attempt in range(2):  # one reconnect: the server closes idle keep-alive connections
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, int(self.port), timeout=15)
            try:
                self.conn.putrequest(method, target, skip_accept_encoding=True)
                for k, v in headers.items():
                    self.conn.putheader(k, v)
                self.conn.endheaders(body)
                r = self.conn.getresponse()
                body = r.read()
                if r.will_close:
                    self.conn.close()
                    self.conn = None
                return RawResponse(r.status, list(r.getheaders()), body)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.conn.close()
                self.conn = None
                if attempt == 1:
                    raise

    def template_of(self, target):
        path = urllib.parse.urlsplit(target).path
        for t, rx in self.templates:
            if rx.match(path):
                return t
        return None

    def fail(self, what, why):
        self.failures.append(f"{what}: {why}")
        print(f"FAIL {what}: {why}", flush=True)

    # ---- one call, checked ------------------------------------------------------------------

    def call(self, method, target, expect, auth=True, token=None, headers=None, body=None):
        """Sends `method target` (with `body`, bytes, when given), requires a status in `expect`
        (an int or a set), and validates the answer against the spec. Returns the response."""
        h = {"Host": f"{self.host}:{self.port}"}
        if auth:
            h["Authorization"] = f"Bearer {token or TOKEN}"
        if body is not None:
            h["Content-Length"] = str(len(body))
        elif method in ("POST", "PUT", "PATCH"):
            h["Content-Length"] = "0"  # as client libraries send a bodiless POST
        h.update(headers or {})
        resp = self._send(method, target, h, body)
        self.calls += 1
        what = f"{method} {target}" + ("" if auth else " (no token)") + f" -> {resp.status_code}"
        expected = {expect} if isinstance(expect, int) else set(expect)
        if resp.status_code not in expected:
            self.fail(what, f"expected status {sorted(expected)}; body {resp.data[:300]!r}")
        template = self.template_of(target)
        m = method.lower()
        if template is None:
            self.check_unrouted(what, method, target, resp, auth)
        elif m in self.spec["paths"][template]:
            self.seen.add((template, m, str(resp.status_code)))
            req = RawRequest(self.base_url, method, target, h)
            errors = list(self.openapi.iter_response_errors(req, resp))
            for e in errors:
                self.fail(what, describe(e))
            if m == "head" and resp.data:
                self.fail(what, f"HEAD answered with a body: {resp.data[:100]!r}")
        else:
            self.seen.add((template, m, str(resp.status_code)))
            ref = self.spec["paths"][template].get("x-belfry-other-methods")
            if ref is None:
                self.fail(what, f"{template} has no x-belfry-other-methods")
            else:
                self.check_component_response(what, resp, ref, body=(m != "head"))
        return resp

    def check_unrouted(self, what, method, target, resp, auth):
        """A path the spec does not have: the server must not serve it (404, or 401 under /v1 or
        /metrics without the token), with a JSON error body."""
        path = urllib.parse.urlsplit(target).path
        needs_token = path == "/metrics" or path == "/v1" or path.startswith("/v1/")
        allowed = {401, 404} if (needs_token and not auth) else {404}
        if resp.status_code not in allowed:
            self.fail(what, f"a path outside the spec answered {resp.status_code}, not {sorted(allowed)}")
        self.check_schema(what, resp, self.spec["components"]["schemas"]["Error"])

    def check_component_response(self, what, resp, ref, body=True):
        comp = self.resolve(ref)
        for name, header in comp.get("headers", {}).items():
            header = self.resolve(header)
            value = resp.headers.get(name)
            if value is None:
                if header.get("required"):
                    self.fail(what, f"missing header {name}")
                continue
            self.validate(what, f"header {name}", value, header["schema"])
        if not body and resp.data:
            self.fail(what, f"HEAD answered with a body: {resp.data[:100]!r}")
        for media, content in (comp.get("content", {}) if body else {}).items():
            if not resp.content_type.startswith(media):
                self.fail(what, f"content type {resp.content_type!r}, spec says {media}")
            self.check_schema(what, resp, content["schema"])

    def check_schema(self, what, resp, schema):
        if not resp.content_type.startswith("application/json"):
            self.fail(what, f"content type {resp.content_type!r} is not application/json")
            return
        try:
            body = resp.json()
        except ValueError as e:
            self.fail(what, f"body is not JSON ({e}): {resp.data[:200]!r}")
            return
        self.validate(what, "body", body, schema)

    def resolve(self, node):
        return resolve_ref(self.spec, node)

    def validate(self, what, part, value, schema):
        wrapped = dict(schema)
        wrapped["components"] = self.spec["components"]  # so that #/components/... refs resolve
        validator = jsonschema.Draft202012Validator(wrapped, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        for e in validator.iter_errors(value):
            self.fail(what, f"{part}: {e.message} at {list(e.absolute_path)}")

    # ---- coverage ----------------------------------------------------------------------------

    def check_coverage(self):
        for template, item in self.spec["paths"].items():
            for m in METHODS:
                if m in item:
                    statuses = set(item[m]["responses"])
                elif "x-belfry-other-methods" in item:
                    statuses = {"405"}
                else:
                    self.fail(f"{m.upper()} {template}", "neither an operation nor x-belfry-other-methods")
                    continue
                for status in sorted(statuses):
                    if (template, m, status) not in self.seen and not unreachable(template, status):
                        self.fail(f"{m.upper()} {template}", f"documented status {status} was never exercised")
                for status in sorted({s for (t, mm, s) in self.seen if t == template and mm == m} - statuses):
                    self.fail(f"{m.upper()} {template}", f"answered {status}, which the spec does not document")

    def check_server_routes(self):
        """Every route src/http/admin_server.cc registers must be a path of the spec."""
        src_path = os.path.join(self.source_dir, "src", "http", "admin_server.cc")
        with open(src_path) as f:
            src = f.read()
        consts = dict(re.findall(r'constexpr std::string_view (k\w+) = "([^"]*)";', src))
        # /ui is the console's page (docs/console.md), not part of the JSON API.
        exact = set(re.findall(r'\.Get\(\s*"(/[^"]*)"', src)) - {"/ui"}
        if not exact:
            self.fail("server routes", f"found no .Get(\"/...\") route in {src_path}: update this check")
        prefix = consts.get("kJobsPrefix")
        suffixes = {v for k, v in consts.items() if k.endswith("Suffix")}
        if not prefix or not suffixes:
            self.fail("server routes", f"no kJobsPrefix / k*Suffix constants in {src_path}: update this check")
            prefix = prefix or "/v1/jobs/"
        routes = set(exact)
        routes.add(prefix + "{id}")
        if "kBulkOpsPrefix" in consts:
            routes.add(consts["kBulkOpsPrefix"] + "{id}")
        routes |= {prefix + "{id}" + s for s in suffixes}
        if "kCommandsPath" in consts and re.search(r"\.Post\(\s*std::string\(kCommandsPath\)", src):
            routes.add(consts["kCommandsPath"])
        spec_paths = set(self.spec["paths"])
        for r in sorted(routes - spec_paths):
            self.fail("server routes", f"the server routes {r}, which is not in the spec")
        for r in sorted(spec_paths - routes):
            self.fail("server routes", f"the spec has {r}, which the server does not route")


def resolve_ref(spec, node):
    while isinstance(node, dict) and "$ref" in node:
        target = spec
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def describe(error):
    text = f"{type(error).__name__}: {str(error)[:200]}"
    cause = error.__cause__
    while cause is not None:
        text += f" <- {type(cause).__name__}: {str(cause)[:200]}"
        schema_errors = list(getattr(cause, "schema_errors", []) or [])
        for se in schema_errors[:6]:
            text += f"\n      {se.message[:300]} at {list(se.absolute_path)}"
        if len(schema_errors) > 6:
            text += f"\n      ... and {len(schema_errors) - 6} more"
        cause = cause.__cause__
    return text


def q(job_id):
    return urllib.parse.quote(job_id, safe="")


# ---- the scenario -------------------------------------------------------------------------------


def seed(node):
    """Jobs of every kind, through `belfry jobs put`; returns their ids by role."""
    now_ms = int(time.time() * 1000)
    topic = node.topics["triggers"]
    ids = {
        "interval": "shipment-42-poll",
        "cron": "report-berlin",
        "cron_gap": "report-0230",
        "cron_interval": "quarter-hourly",
        "once": "invoice-77-remind",
        "paused": "paused-hourly",
        "ended": "ended-job",
        "retry": "flaky-import",
        "slash": "team/a next%",
        "unicode": "δοκιμή-ジョブ",
        "owner2": "shipment-43-poll",
        "limited": "limited-hourly",
    }
    node.put_jobs(
        [
            {
                "id": ids["interval"],
                "every": "EVERY_15_MINUTES",
                "topic": topic,
                "owner": "tracking-svc",
                "key": "shipment-42",
                "start": iso_ms(now_ms - 3_600_000),
                "priority": 5,
                "details": json.dumps({"shipmentId": 42, "carrier": {"name": "acme", "legs": [1, 2]}}),
            },
            {"id": ids["owner2"], "interval-minutes": 5, "topic": topic, "owner": "tracking-svc"},
            {"id": ids["cron"], "cron": "0 9 * * MON-FRI", "time-zone": "Europe/Berlin", "topic": topic},
            {"id": ids["cron_gap"], "cron": "30 2 * * *", "time-zone": "Europe/Berlin", "topic": topic, "owner": "reports"},
            {"id": ids["cron_interval"], "cron": "*/15 * * * *", "topic": topic},
            {"id": ids["once"], "run-at": iso_ms(now_ms + 2 * 86_400_000), "topic": topic, "owner": "billing"},
            {"id": ids["paused"], "every": "EVERY_HOUR", "topic": topic},
            {
                "id": ids["ended"],
                "every": "EVERY_MINUTE",
                "topic": topic,
                "start": iso_ms(now_ms - 7_200_000),
                "end": iso_ms(now_ms - 3_600_000),
            },
            {
                "id": ids["retry"],
                "every": "EVERY_MINUTE",
                "topic": topic,
                "owner": "importer",
                "max-retries": 3,
                "retry-initial-seconds": 3600,
                "retry-multiplier": 1.5,
                "retry-max-seconds": 7200,
            },
            {"file": {"id": ids["slash"], "intervalMinutes": 10, "topic": topic, "jobDetails": {}}},
            {"id": ids["unicode"], "every": "EVERY_2_HOURS", "topic": topic, "owner": "ünïcode"},
            {"id": ids["limited"], "every": "EVERY_HOUR", "topic": topic, "max-fires": 3,
             "label": ["team=tracking", "tier=gold"]},
        ]
    )
    node.belfry(["jobs", "pause", ids["paused"], "--reason", "carrier outage", "--actor", "oncall-ana",
                 "--timeout", "60s"])
    # Bulk operations (docs/bulk-operations.md): a dry run by label and a resume that finds nothing
    # paused; the CLI waits for each outcome, published when the walk has finished.
    node.belfry(["bulk", "pause", "--label", "team=tracking", "--id", BULK_DRY, "--dry-run",
                 "--timeout", "60s"])
    node.belfry(["bulk", "resume", "--owner", "tracking-svc", "--id", BULK_RESUME, "--actor", "contract",
                 "--timeout", "60s"])

    minute = now_ms // 60_000 * 60_000
    s1, s2 = minute - 120_000, minute - 60_000
    node.report_executions(
        [
            {
                "jobId": ids["interval"],
                "scheduledFor": iso_ms(s1),
                "status": "succeeded",
                "startedAt": iso_ms(s1 + 400),
                "finishedAt": iso_ms(s1 + 1_200),
                "worker": "poller-7",
            },
            {
                "jobId": ids["interval"],
                "scheduledFor": iso_ms(s2),
                "status": "failed",
                "error": "HTTP 503 from carrier",
                "startedAt": iso_ms(s2 + 300),
                "finishedAt": iso_ms(s2 + 900),
                "worker": "poller-7",
                "attempt": 0,
            },
            {"jobId": ids["interval"], "scheduledFor": s2 + 1, "status": "running"},
            {"jobId": ids["cron"], "scheduledFor": iso_ms(s2), "status": "running", "worker": None},
            {
                "jobId": ids["retry"],
                "scheduledFor": iso_ms(s2),
                "status": "failed",
                "error": "timeout",
                "finishedAt": iso_ms(now_ms),
            },
        ]
    )
    node.wait_for(
        lambda: len(node.get_json(f"/v1/jobs/{q(ids['interval'])}/executions")["executions"]) >= 3
        and any("#retry#" in j["id"] for j in node.get_json("/v1/jobs?owner=importer")["jobs"])
        and node.get_json(f"/v1/jobs/{q(ids['retry'])}").get("lastOutcome") is not None,
        60,
        "the execution reports were not stored (3 for the interval job, a retry row for the retry job)",
    )
    retry_rows = [j["id"] for j in node.get_json("/v1/jobs?owner=importer")["jobs"] if "#retry#" in j["id"]]
    ids["retry_row"] = retry_rows[0]
    return ids


def exercise(c, node, ids):
    # Probes: never need the token.
    for p in ("/healthz", "/readyz"):
        c.call("GET", p, 200, auth=False)
        c.call("HEAD", p, 200, auth=False)
        c.call("GET", p, 200, auth=True, token="wrong")
    # Metrics.
    r = c.call("GET", "/metrics", 200)
    for name in ("belfry_triggers_emitted_total", "belfry_commands_total", "belfry_execution_reports_total"):
        if name.encode() not in r.data:
            c.fail("GET /metrics", f"no {name}")
    c.call("HEAD", "/metrics", 200)
    c.call("GET", "/metrics", 401, auth=False)
    c.call("GET", "/metrics", 401, token="wrong")
    c.call("HEAD", "/metrics", 401, auth=False)
    c.call("GET", "/metrics", 200, headers={"Authorization": f"bEaReR   {TOKEN}  "})

    # Shards.
    r = c.call("GET", "/v1/shards", 200)
    if r.status_code == 200 and len(r.json().get("shards", [])) != 120:
        c.fail("GET /v1/shards", f"{len(r.json().get('shards', []))} shards, expected 120")
    c.call("GET", "/v1/shards?unknown=1", 200)  # /v1/shards takes no parameters and ignores them
    c.call("HEAD", "/v1/shards", 200)
    c.call("GET", "/v1/shards", 401, auth=False)
    c.call("HEAD", "/v1/shards", 401, auth=False)

    # Load projection: the default window, a breakdown, and what it refuses.
    r = c.call("GET", "/v1/load", 200)
    if r.status_code == 200 and len(r.json().get("minutes", [])) != 60:
        c.fail("GET /v1/load", f"{len(r.json().get('minutes', []))} minutes, expected the default 60")
    r = c.call("GET", "/v1/load?from=2030-01-01T00:00:00Z&to=2030-01-01T00:10:00Z&by=owner&top=3&shards=true", 200)
    if r.status_code == 200:
        body = r.json()
        if len(body["minutes"]) != 10 or len(body["minutes"][0].get("shards", [])) != 120 or body.get("by") != "owner":
            c.fail("GET /v1/load?by=owner&shards=true", "wrong shape: " + r.text[:200])
    # By a label's value: the seeded labelled job's labels are {"team": "tracking", "tier": "gold"}.
    r = c.call("GET", "/v1/load?by=label:team&top=1000", 200)  # the next hour: the limited job fires in it
    if r.status_code == 200:
        values = {item.get("value") for item in r.json().get("top", [])}
        if "tracking" not in values or r.json().get("by") != "label:team":
            c.fail("GET /v1/load?by=label:team", f"values {sorted(map(str, values))}: {r.data[:200]!r}")
    c.call("GET", "/v1/load?by=label:", 400)
    c.call("GET", "/v1/load?by=label:-bad-", 400)
    c.call("HEAD", "/v1/load", 200)
    c.call("GET", "/v1/load?from=yesterday", 400)
    c.call("GET", "/v1/load?from=2030-01-01T00:00:00Z&to=2030-01-03T00:00:00Z", 400)  # over a day
    c.call("GET", "/v1/load?by=shard", 400)
    c.call("GET", "/v1/load?unknown=1", 400)
    c.call("GET", "/v1/load", 401, auth=False)
    c.call("HEAD", "/v1/load?by=shard", 400)
    c.call("HEAD", "/v1/load", 401, auth=False)
    r = c.call("GET", "/v1/load/rebalance?ids=2", 200)
    if r.status_code == 200 and r.json().get("dryRun") is not True:
        c.fail("GET /v1/load/rebalance", "not a dry run: " + r.text[:200])
    c.call("HEAD", "/v1/load/rebalance", 200)
    c.call("GET", "/v1/load/rebalance?ids=101", 400)
    c.call("GET", "/v1/load/rebalance", 401, auth=False)
    c.call("HEAD", "/v1/load/rebalance?ids=-1", 400)
    c.call("HEAD", "/v1/load/rebalance", 401, auth=False)

    # Listing, every page.
    all_ids = set()
    target = "/v1/jobs?limit=2"
    pages = 0
    while True:
        r = c.call("GET", target, 200)
        body = r.json() if r.status_code == 200 else {"jobs": [], "next_cursor": None}
        all_ids |= {j["id"] for j in body["jobs"]}
        pages += 1
        if body["next_cursor"] is None or pages > 20:
            break
        target = "/v1/jobs?limit=2&cursor=" + body["next_cursor"]
    expected_ids = {v for k, v in ids.items()}
    if all_ids != expected_ids:
        c.fail("GET /v1/jobs pages", f"saw {sorted(all_ids)}, expected {sorted(expected_ids)}")
    r = c.call("GET", "/v1/jobs", 200)
    if r.status_code == 200 and {j["id"] for j in r.json()["jobs"]} != expected_ids:
        c.fail("GET /v1/jobs", "one page of everything does not list every job")
    r = c.call("GET", "/v1/jobs?owner=tracking-svc&limit=1000", 200)
    if r.status_code == 200 and {j["id"] for j in r.json()["jobs"]} != {ids["interval"], ids["owner2"]}:
        c.fail("GET /v1/jobs?owner=tracking-svc", f"listed {[j['id'] for j in r.json()['jobs']]}")
    prefix = ids["interval"][: max(1, len(ids["interval"]) - 3)]
    r = c.call("GET", "/v1/jobs?limit=1000&id_prefix=" + q(prefix), 200)
    if r.status_code == 200 and {j["id"] for j in r.json()["jobs"]} != {i for i in expected_ids if i.startswith(prefix)}:
        c.fail("GET /v1/jobs?id_prefix=", f"listed {[j['id'] for j in r.json()['jobs']]} for the prefix {prefix!r}")
    c.call("GET", "/v1/jobs?id_prefix=%FF", 400)
    c.call("GET", f"/v1/jobs?topic={q(node.topics['triggers'])}&owner=", 200)
    c.call("GET", "/v1/jobs?owner=" + q("ünïcode"), 200)
    r = c.call("GET", "/v1/jobs?owner=nobody", 200)
    if r.status_code == 200 and r.json() != {"jobs": [], "next_cursor": None}:
        c.fail("GET /v1/jobs?owner=nobody", f"expected an empty last page, got {r.data[:200]!r}")
    for bad in ("limit=0", "limit=1001", "limit=abc", "limit=1.5", "limit=-1", "cursor=***", "cursor=a",
                "cursor=%ZZ", "ownr=x", "limit=10&extra="):
        c.call("GET", "/v1/jobs?" + bad, 400)
    # Values no job can have must not be a server error or widen the filter.
    # (Both were bugs: invalid UTF-8 made PostgreSQL fail the statement, a 500, and a NUL dropped
    # the filter at libpq.)
    c.call("GET", "/v1/jobs?owner=%FF", 400)
    c.call("GET", "/v1/jobs?owner=%00", 400)
    c.call("GET", "/v1/jobs?cursor=_w", 400)  # a cursor that decodes to the byte 0xFF
    c.call("GET", "/v1/jobs?cursor=_w", 400)  # base64url of the byte 0xFF: not a job id
    c.call("HEAD", "/v1/jobs", 200)
    c.call("HEAD", "/v1/jobs?limit=0", 400)
    c.call("GET", "/v1/jobs", 401, auth=False)
    c.call("HEAD", "/v1/jobs", 401, auth=False)

    # One job, each kind.
    views = {}
    for role, job_id in ids.items():
        r = c.call("GET", f"/v1/jobs/{q(job_id)}", 200)
        if r.status_code == 200:
            views[role] = r.json()
            if r.json().get("id") != job_id:
                c.fail(f"GET /v1/jobs/{q(job_id)}", f"answered the job {r.json().get('id')!r}")
        c.call("HEAD", f"/v1/jobs/{q(job_id)}", 200)
    check_views(c, views, ids)
    for target in ("/v1/jobs?label=team=tracking", "/v1/jobs?label=team%3Dtracking&label=tier=gold"):
        r = c.call("GET", target, 200)
        if r.status_code == 200 and [j["id"] for j in r.json()["jobs"]] != [ids["limited"]]:
            c.fail(f"GET {target}", f"expected only {ids['limited']}: {r.data[:300]!r}")
    c.call("GET", "/v1/jobs?label=team", 400)
    c.call("HEAD", "/v1/jobs?label=team=tracking", 200)
    c.call("GET", "/v1/jobs/no-such-job", 404)
    c.call("HEAD", "/v1/jobs/no-such-job", 404)
    c.call("GET", "/v1/jobs/team%2Fa%20next%25/next/", 404)  # "team/a next%/next/" is no job
    c.call("GET", f"/v1/jobs/{q(ids['interval'])}?verbose=1", 400)
    c.call("GET", "/v1/jobs/%ZZ", 400)
    c.call("GET", "/v1/jobs/abc%2", 400)
    c.call("HEAD", "/v1/jobs/%ZZ", 400)
    c.call("GET", "/v1/jobs/%FF", {400})  # not UTF-8: no job can have this id
    c.call("GET", f"/v1/jobs/{q(ids['interval'])}%00suffix", 400)  # not cut at the NUL
    c.call("GET", f"/v1/jobs/{q(ids['interval'])}", 401, auth=False)
    c.call("HEAD", f"/v1/jobs/{q(ids['interval'])}", 401, auth=False)

    # Next fires.
    for role, job_id in ids.items():
        c.call("GET", f"/v1/jobs/{q(job_id)}/next", 200)
    r = c.call("GET", f"/v1/jobs/{q(ids['cron_gap'])}/next?n=1000", 200)
    if r.status_code == 200:
        marks = {f["dst"] for f in r.json()["fires"]}
        if "moved_from_gap" not in marks or None not in marks:
            c.fail("GET /next?n=1000 of 30 2 * * * in Europe/Berlin", f"dst marks {marks}: expected a gap fire")
        if len(r.json()["next"]) != 1000 or r.json().get("timeZone") != "Europe/Berlin":
            c.fail("GET /next?n=1000", "not 1000 fires, or no timeZone for a calendar job")
    r = c.call("GET", f"/v1/jobs/{q(ids['paused'])}/next?n=3", 200)
    if r.status_code == 200 and r.json() != {"id": ids["paused"], "paused": True, "next": [], "fires": []}:
        c.fail("GET /next of a paused job", f"{r.data!r}")
    r = c.call("GET", f"/v1/jobs/{q(ids['ended'])}/next", 200)
    if r.status_code == 200 and r.json()["next"]:
        c.fail("GET /next of an ended job", f"{r.data!r}")
    r = c.call("GET", f"/v1/jobs/{q(ids['once'])}/next?n=5", 200)
    if r.status_code == 200 and len(r.json()["next"]) != 1:
        c.fail("GET /next of a one-shot", f"{r.data!r}")
    c.call("HEAD", f"/v1/jobs/{q(ids['interval'])}/next?n=2", 200)
    for bad in ("n=0", "n=1001", "n=x", "n=", "count=3"):
        expect = 200 if bad == "n=" else 400  # an empty value is "not given"
        c.call("GET", f"/v1/jobs/{q(ids['interval'])}/next?{bad}", expect)
    c.call("HEAD", f"/v1/jobs/{q(ids['interval'])}/next?n=0", 400)
    c.call("GET", "/v1/jobs/no-such-job/next", 404)
    c.call("HEAD", "/v1/jobs/no-such-job/next", 404)
    c.call("GET", "/v1/jobs/%FF/next", {400})
    c.call("GET", f"/v1/jobs/{q(ids['interval'])}/next", 401, auth=False)
    c.call("HEAD", f"/v1/jobs/{q(ids['interval'])}/next", 401, auth=False)

    # Executions, every page.
    base = f"/v1/jobs/{q(ids['interval'])}/executions"
    r = c.call("GET", base, 200)
    if r.status_code == 200 and len(r.json()["executions"]) != 3:
        c.fail(f"GET {base}", f"{len(r.json()['executions'])} executions, expected 3")
    seen, target = [], base + "?limit=1"
    for _ in range(10):
        r = c.call("GET", target, 200)
        if r.status_code != 200:
            break
        seen += r.json()["executions"]
        if r.json()["next_cursor"] is None:
            break
        target = base + "?limit=1&cursor=" + r.json()["next_cursor"]
    if len(seen) != 3:
        c.fail(f"GET {base}?limit=1 pages", f"{len(seen)} executions over the pages, expected 3")
    for role in ("retry", "cron", "retry_row", "slash"):
        c.call("GET", f"/v1/jobs/{q(ids[role])}/executions?limit=1000", 200)
    r = c.call("GET", "/v1/jobs/no-such-job/executions", 200)
    if r.status_code == 200 and r.json()["executions"]:
        c.fail("GET /v1/jobs/no-such-job/executions", "executions of a job that does not exist")
    for bad in ("limit=0", "limit=1001", "limit=x", "cursor=***", "cursor=a", "order=asc"):
        c.call("GET", f"{base}?{bad}", 400)
    c.call("GET", "/v1/jobs/%FF/executions", {400})  # not UTF-8: no job can have this id
    c.call("HEAD", base, 200)
    c.call("HEAD", base + "?limit=0", 400)
    c.call("GET", base, 401, auth=False)
    c.call("HEAD", base, 401, auth=False)

    # A backfill's dry run (docs/manual-fires.md): an hour of a 5-minute job without dates is 12
    # slots, a day of it 288, and the 15-minute job, which starts an hour ago, had none in January; a one-shot cannot be backfilled; a range in the future, reversed or too long is a 400.
    base = f"/v1/jobs/{q(ids['owner2'])}/backfill"
    r = c.call("GET", base + "?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z", 200)
    if r.status_code == 200 and (r.json()["slots"], r.json()["covered"]) != (12, 0):
        c.fail(f"GET {base}", f"{r.json()}: expected 12 slots, 0 covered")
    r = c.call("GET", base + "?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z", 200)
    if r.status_code == 200 and r.json()["slots"] != 288:
        c.fail(f"GET {base} over a day", f"{r.json()}: expected 288 slots")
    c.call("HEAD", base + "?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z", 200)
    r = c.call("GET", f"/v1/jobs/{q(ids['interval'])}/backfill?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z", 200)
    if r.status_code == 200 and r.json()["slots"] != 0:
        c.fail("GET /backfill before a job's startDateTime", f"{r.json()}: expected 0 slots")
    c.call("GET", f"/v1/jobs/{q(ids['once'])}/backfill?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z", 422)
    c.call("HEAD", f"/v1/jobs/{q(ids['once'])}/backfill?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z", 422)
    for bad in ("from=2026-01-01T00:00:00Z", "to=2026-01-01T00:00:00Z", "from=x&to=2026-01-01T00:00:00Z",
                "from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "from=2026-01-01T00:00:00Z&to=2999-01-01T00:00:00Z",
                "from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z",
                "from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z&rate=5"):
        c.call("GET", f"{base}?{bad}", 400)
    c.call("HEAD", base + "?from=x&to=y", 400)
    c.call("GET", "/v1/jobs/no-such-job/backfill?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z", 404)
    c.call("HEAD", "/v1/jobs/no-such-job/backfill?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z", 404)
    c.call("GET", base + "?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z", 401, auth=False)
    c.call("HEAD", base + "?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z", 401, auth=False)

    # Bulk operations.
    r = c.call("GET", "/v1/bulk-ops", 200)
    if r.status_code == 200:
        got = {o["id"]: o for o in r.json()["bulkOps"]}
        dry, resume = got.get(BULK_DRY), got.get(BULK_RESUME)
        if not dry or dry["matched"] != 1 or dry["changed"] != 0 or dry["state"] != "finished":
            c.fail("GET /v1/bulk-ops", f"the dry run should have matched the 1 labelled job: {dry}")
        if not resume or resume["selector"] != {"owner": "tracking-svc"} or resume["actor"] != "contract":
            c.fail("GET /v1/bulk-ops", f"the resume by owner is not as published: {resume}")
    c.call("GET", "/v1/bulk-ops?limit=1", 200)
    c.call("HEAD", "/v1/bulk-ops", 200)
    for bad in ("limit=0", "limit=101", "limit=x", "owner=a"):
        c.call("GET", "/v1/bulk-ops?" + bad, 400)
    c.call("HEAD", "/v1/bulk-ops?limit=0", 400)
    c.call("GET", "/v1/bulk-ops", 401, auth=False)
    c.call("HEAD", "/v1/bulk-ops", 401, auth=False)
    bulk_one = "/v1/bulk-ops/" + q(BULK_RESUME)
    c.call("GET", bulk_one, 200)
    c.call("HEAD", bulk_one, 200)
    c.call("GET", bulk_one + "?x=1", 400)
    c.call("HEAD", bulk_one + "?x=1", 400)
    c.call("GET", "/v1/bulk-ops/no-such-op", 404)
    c.call("HEAD", "/v1/bulk-ops/no-such-op", 404)
    c.call("GET", "/v1/bulk-ops/%zz", 400)
    c.call("GET", bulk_one, 401, auth=False)
    c.call("HEAD", bulk_one, 401, auth=False)

    # The audit trail (docs/audit-trail.md): the seed's upsert made the job; a page at a time.
    base = f"/v1/jobs/{q(ids['interval'])}/changes"
    r = c.call("GET", base, 200)
    if r.status_code == 200:
        changes = r.json()["changes"]
        if not changes or changes[-1]["op"] != "upsert" or changes[-1]["before"] is not None:
            c.fail(f"GET {base}", f"the oldest change should be the upsert that created the job: {changes}")
        ids_seen, cursor = [], None
        while True:
            page = c.call("GET", base + "?limit=1" + (f"&cursor={cursor}" if cursor else ""), 200)
            if page.status_code != 200:
                break
            ids_seen += [ch["changeId"] for ch in page.json()["changes"]]
            cursor = page.json()["next_cursor"]
            if cursor is None or len(ids_seen) > len(changes):
                break
        if ids_seen != [ch["changeId"] for ch in changes]:
            c.fail(f"GET {base}?limit=1 pages", f"{ids_seen} over the pages, expected {[ch['changeId'] for ch in changes]}")
    for role in ("slash", "unicode", "once", "cron"):
        c.call("GET", f"/v1/jobs/{q(ids[role])}/changes?limit=1000", 200)
    r = c.call("GET", "/v1/jobs/no-such-job/changes", 200)
    if r.status_code == 200 and r.json()["changes"]:
        c.fail("GET /v1/jobs/no-such-job/changes", "changes of a job that never existed")
    c.call("HEAD", base, 200)
    for bad in ("limit=0", "limit=1001", "limit=x", "cursor=x", "cursor=0", "owner=a"):
        c.call("GET", f"{base}?{bad}", 400)
    c.call("HEAD", base + "?limit=0", 400)
    c.call("GET", base, 401, auth=False)
    c.call("HEAD", base, 401, auth=False)

    # Every other method on every route: 405 with Allow (with the token; without, 401 for /v1).
    concrete = {
        "/v1/jobs/{id}": f"/v1/jobs/{q(ids['interval'])}",
        "/v1/jobs/{id}/next": f"/v1/jobs/{q(ids['interval'])}/next",
        "/v1/jobs/{id}/executions": f"/v1/jobs/{q(ids['interval'])}/executions",
        "/v1/jobs/{id}/backfill": f"/v1/jobs/{q(ids['interval'])}/backfill",
        "/v1/bulk-ops/{id}": f"/v1/bulk-ops/{q(BULK_RESUME)}",
        "/v1/jobs/{id}/changes": f"/v1/jobs/{q(ids['interval'])}/changes",
    }
    for template, item in c.spec["paths"].items():
        target = concrete.get(template, template)
        for m in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"):
            if m.lower() not in item:
                c.call(m, target, 405)

    # Paths outside the spec are not served.
    for target in ("/", "/nope", "/v1", "/v1/", "/v1/nope", "/v2/jobs", "/healthz/x", "/metrics/x",
                   "/v1/shards/0", "/v1/jobs/", "/v1/job", "/openapi.yaml"):
        c.call("GET", target, 404)
    for target in ("/v1/nope", "/v1/jobs/x/../../shards"):
        c.call("GET", target, 401, auth=False)
    c.call("POST", "/nope", 404)


def exercise_commands(c, node):
    """POST /v1/commands on the node with a write secret: every answer a healthy node gives."""
    topic = node.topics["triggers"]
    token = write_token()
    js = {"Content-Type": "application/json"}

    def post(command, expect, token=token, target="/v1/commands", headers=js, raw=None):
        body = raw if raw is not None else json.dumps(command).encode()
        return c.call("POST", target, expect, token=token, headers=headers, body=body)

    r = post({"id": "contract-http-1", "intervalMinutes": 5, "topic": topic, "owner": "console"}, 200)
    if r.status_code == 200 and (r.json().get("status") != "applied" or r.json().get("op") != "upsert"):
        c.fail("POST /v1/commands (upsert)", f"outcome {r.data[:200]!r}")
    job = c.call("GET", "/v1/jobs/contract-http-1", 200, token=token)  # a write token reads too
    if job.status_code == 200 and job.json().get("owner") != "console":
        c.fail("GET /v1/jobs/contract-http-1", "the job the command put is not there")
    r = post({"id": "contract-http-2", "intervalMinutes": 7, "topic": topic}, 422)
    if r.status_code == 422 and "unsupported_interval" not in (r.json().get("error") or ""):
        c.fail("POST /v1/commands (interval 7)", f"outcome {r.data[:200]!r}")
    # No outcome can arrive in 0 ms: published, answered with where.
    post({"op": "pause", "id": "contract-http-1", "reason": "contract"}, 202, target="/v1/commands?wait_ms=0")
    for raw in (b"[1]", b"{", b'{"op":"pause"}', b'{"id":7}'):
        post(None, 400, raw=raw)
    post({"op": "pause", "id": "contract-http-1", "actor": "mallory"}, 400)
    post({"op": "pause", "id": "contract-http-1"}, 400, target="/v1/commands?wait_ms=60001")
    post({"op": "pause", "id": "contract-http-1"}, 415, headers={"Content-Type": "text/plain"})
    for bad in (TOKEN, write_token(now_s=int(time.time()) - 7200), write_token(secret="x" * 40), "a.b.c"):
        post({"op": "pause", "id": "contract-http-1"}, 401, token=bad)
    c.call("POST", "/v1/commands", 401, auth=False, headers=js, body=b'{"id":"x"}')
    big = json.dumps({"id": "contract-http-big", "topic": topic, "intervalMinutes": 5,
                      "jobDetails": {"pad": "x" * 200_000}}).encode()
    post(None, 413, raw=big)


def exercise_plain(c, ids):
    """A loopback node without a token serves /metrics and /v1 without one, and ignores any
    Authorization header. It does not consume execution reports (executions.enabled false); the
    docs say its /executions is a 404, the server serves the stored history: either conforms."""
    job = f"/v1/jobs/{q(ids['interval'])}"
    c.call("GET", "/metrics", 200, auth=False)
    c.call("GET", "/v1/shards", 200, auth=False)
    c.call("GET", "/v1/jobs?limit=1", 200, auth=False)
    c.call("GET", job, 200, auth=False)
    c.call("GET", job + "/next", 200, auth=False)
    c.call("GET", job + "/executions", {200, 404}, auth=False)
    c.call("HEAD", job + "/executions", {200, 404}, auth=False)
    c.call("GET", job + "/executions?limit=0", 400, auth=False)
    c.call("GET", job, 200, token="any token at all")
    # No admin.write_token_secret: writes are off, whatever the token.
    c.call("POST", "/v1/commands", 403, token=write_token(), headers={"Content-Type": "application/json"},
           body=b'{"op":"pause","id":"x"}')


def connection_answers(c, node, ids, head_timeout_ms):
    """The gate's answers before routing (x-belfry-connection-answers): on every path of the spec
    and with every method, a head larger than 16 KiB answers 431, and a head that stops short of
    its end answers 408 once `head_timeout_ms` have passed since the accept. Each answer is
    validated against its component response, and the connection must be closed after it. The
    408s are awaited together, a few connections at a time (under the per-client limit)."""
    answers = c.spec.get("x-belfry-connection-answers") or {}
    if set(answers) != {"408", "431"}:
        c.fail("x-belfry-connection-answers", f"documents {sorted(answers)}, the gate answers 408 and 431")
        return
    targets = []
    for template in c.spec["paths"]:
        target = template.replace("{id}", q(ids["interval"]))
        for m in ("GET", "HEAD", "POST"):
            targets.append((template, m, target))

    def read_answer(sock):
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                return data, True  # closed with our unread bytes in its buffer: a reset
            if not chunk:
                return data, True  # the server closed the connection
            data += chunk

    def check(template, method, status, raw, closed):
        what = f"{method} {template} ({'slow' if status == '408' else 'oversized'} head) -> "
        head, _, body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        got = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "?"
        what += got
        if got != status:
            c.fail(what, f"expected {status}; answer {raw[:200]!r}")
            return
        headers = Headers([tuple(x.strip() for x in l.split(":", 1)) for l in lines[1:] if ":" in l])
        resp = RawResponse(int(got), list(headers.items()), body)
        c.check_component_response(what, resp, answers[status])
        if not closed:
            c.fail(what, "the connection stayed open after the answer")
        c.seen_connection.add((template, method.lower(), status))

    auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
    for template, method, target in targets:  # 431: one at a time, answered at once
        with socket.create_connection(("127.0.0.1", node.port), timeout=10) as sock:
            filler = b"X-Filler: " + b"a" * (17 * 1024) + b"\r\n"
            try:
                sock.sendall(f"{method} {target} HTTP/1.1\r\nHost: t\r\n".encode() + auth + filler + b"\r\n")
            except (ConnectionResetError, BrokenPipeError):
                pass  # the gate may answer and close before the whole head is written
            raw, closed = read_answer(sock)
            check(template, method, "431", raw, closed)
    batch = 16  # below admin.max_connections_per_client (32)
    for i in range(0, len(targets), batch):  # 408: a head without its blank line, awaited together
        socks = []
        try:
            for template, method, target in targets[i:i + batch]:
                sock = socket.create_connection(("127.0.0.1", node.port), timeout=10)
                socks.append((template, method, sock))
                sock.sendall(f"{method} {target} HTTP/1.1\r\nHost: t\r\n".encode() + auth)
            started = time.monotonic()
            for template, method, sock in socks:
                raw, closed = read_answer(sock)
                check(template, method, "408", raw, closed)
            waited = (time.monotonic() - started) * 1000
            if waited > head_timeout_ms + 5000:
                c.fail(f"408 batch {i // batch}", f"answered after {waited:.0f} ms, the timeout is {head_timeout_ms} ms")
        finally:
            for _, _, sock in socks:
                sock.close()
    for template in c.spec["paths"]:
        for m in ("get", "head", "post"):
            for status in ("408", "431"):
                if (template, m, status) not in c.seen_connection:
                    c.fail(f"{m.upper()} {template}", f"connection answer {status} was never exercised")


def check_views(c, views, ids):
    """Field values the spec cannot express: what each kind of job must show."""

    def expect(role, cond, why):
        if role in views and not cond(views[role]):
            c.fail(f"GET /v1/jobs/{q(ids[role])}", why + f": {json.dumps(views[role])[:400]}")

    expect("interval", lambda v: v["owner"] == "tracking-svc" and v["key"] == "shipment-42", "owner and key")
    expect("interval", lambda v: v["jobDetails"] == {"shipmentId": 42, "carrier": {"name": "acme", "legs": [1, 2]}},
           "jobDetails as given")
    expect("interval", lambda v: v["intervalMinutes"] == 15 and v["priority"] == 5 and v["cron"] is None, "interval")
    expect("interval", lambda v: v["lastOutcome"] is not None and v["lastOutcome"]["status"] == "failed"
           and v["lastOutcome"]["error"] == "HTTP 503 from carrier" and v["consecutiveFailures"] == 1
           and v.get("totalSucceeded") == 1 and v.get("totalFailed") == 1, "lastOutcome and counters")
    expect("interval", lambda v: v["nextTriggerAt"] is not None and len(v["nextFires"]) == 3, "next fires")
    expect("cron", lambda v: v["owner"] is None, "owner null when the command gave none")
    expect("cron", lambda v: v["cron"] == "0 9 * * MON-FRI" and v["timeZone"] == "Europe/Berlin", "cron and zone")
    expect("cron", lambda v: v["lastOutcome"] is None and v.get("totalSucceeded") == 0 and v.get("totalFailed") == 0
           and v["consecutiveFailures"] == 0, "a running report is no outcome; counters 0")
    expect("cron_interval", lambda v: v["intervalMinutes"] == 15 and v["cron"] is not None, "a fixed-interval cron")
    expect("once", lambda v: v["runAt"] is not None and v["scheduledFor"] is not None and len(v["nextFires"]) == 1,
           "one-shot fields")
    expect("paused", lambda v: v["paused"] is True and v["nextTriggerAt"] is None and v["nextFires"] == [], "paused")
    expect("paused", lambda v: v["pause"]["reason"] == "carrier outage" and v["pause"]["actor"] == "oncall-ana"
           and v["pause"]["since"] is not None, "the pause's note")
    expect("interval", lambda v: v["pause"] is None, "no pause note while running")
    expect("ended", lambda v: v["endDateTime"] is not None and v["nextTriggerAt"] is None, "ended")
    expect("retry", lambda v: v.get("maxRetries") == 3 and v.get("retryBackoff") ==
           {"initialSeconds": 3600, "multiplier": 1.5, "maxSeconds": 7200} and "retryOf" not in v, "retry policy")
    expect("retry_row", lambda v: v.get("retryOf") == ids["retry"] and v.get("attempt") == 1, "a retry row")
    expect("slash", lambda v: v["id"] == ids["slash"], "an id with / and % round-trips")
    expect("interval", lambda v: v["maxFires"] is None and v["firesEndAt"] is None and v["firesRemaining"] is None,
           "an unlimited job")
    expect("limited", lambda v: v["labels"] == {"team": "tracking", "tier": "gold"}, "labels as given")
    expect("interval", lambda v: v["labels"] == {}, "no labels")
    expect("limited", lambda v: v["maxFires"] == 3 and v["endDateTime"] is None and v["firesEndAt"] is not None
           and v["firesRemaining"] in (2, 3) and len(v["nextFires"]) == v["firesRemaining"],
           "a limited job: its end, its count, and only the fires it has left")
    expect("unicode", lambda v: v["owner"] == "ünïcode", "a UTF-8 owner")


def check_cli_view(c, node, ids):
    """`belfry jobs get --json` prints the same document as GET /v1/jobs/{id} (one job view)."""
    schema = {"$ref": "#/components/schemas/JobView"}
    for role, job_id in ids.items():
        what = f"belfry jobs get {job_id!r} --json"
        r = node.belfry(["jobs", "get", job_id, "--json"], check=False)
        if r.returncode != 0:
            c.fail(what, f"exit {r.returncode}: {r.stderr.strip()}")
            continue
        try:
            cli = json.loads(r.stdout)
        except ValueError as e:
            c.fail(what, f"not JSON ({e}): {r.stdout[:200]!r}")
            continue
        c.validate(what, "output", cli, schema)
        resp = c.call("GET", f"/v1/jobs/{q(job_id)}", 200)
        if resp.status_code != 200:
            continue
        http_view = resp.json()
        # The next fires move on with the clock between the two reads; everything else must match.
        for k in ("nextTriggerAt", "nextFires"):
            cli.pop(k, None)
            http_view.pop(k, None)
        if cli != http_view:
            diff = sorted(k for k in set(cli) | set(http_view) if cli.get(k, "<absent>") != http_view.get(k, "<absent>"))
            c.fail(what, "differs from GET /v1/jobs/{id} in " + ", ".join(
                f"{k}: cli {cli.get(k, '<absent>')!r} vs http {http_view.get(k, '<absent>')!r}" for k in diff))


def database_gone(c, node, ids):
    """The database disappears under the node: the /v1 routes and /readyz must answer 503."""
    node.drop_database()
    job = f"/v1/jobs/{q(ids['interval'])}"
    node.wait_for(lambda: c.call("GET", "/readyz", {200, 503}, auth=False).status_code == 503, 30,
                  "/readyz did not turn 503 after the database was dropped")
    c.call("HEAD", "/readyz", 503, auth=False)
    backfill = job + "/backfill?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z"
    for target in ("/v1/shards", "/v1/jobs", job, job + "/next", job + "/executions", job + "/changes", backfill,
                   "/v1/load",
                   "/v1/load/rebalance", "/v1/bulk-ops", "/v1/bulk-ops/" + q(BULK_RESUME)):
        c.call("GET", target, 503)
        c.call("HEAD", target, 503)
    c.call("GET", "/healthz", 200, auth=False)


def sanity_check_validator(c):
    """The validator itself must reject what the spec forbids (else every check above is moot)."""
    req = RawRequest(c.base_url, "GET", "/healthz", {})
    bad = [
        RawResponse(200, [("Content-Type", "application/json"), ("Cache-Control", "no-store")], b'{"status":"ok","x":1}'),
        RawResponse(200, [("Content-Type", "application/json")], b'{"status":"ok"}'),
        RawResponse(418, [("Content-Type", "application/json"), ("Cache-Control", "no-store")], b'{"status":"ok"}'),
    ]
    for resp in bad:
        if not list(c.openapi.iter_response_errors(req, resp)):
            c.fail("validator sanity", f"accepted a non-conforming /healthz answer {resp.status_code} {resp.data!r}")
    req = RawRequest(c.base_url, "GET", "/v1/jobs/x/executions", {})
    for when in ("2026-11-22T13:37:32Z", "2026-13-22T13:37:32.500Z", "yesterday"):
        body = json.dumps({"id": "x", "next_cursor": None, "executions": [{
            "jobId": "x", "scheduledFor": when, "attempt": 0, "status": "failed", "error": None,
            "startedAt": None, "finishedAt": None, "worker": None, "receivedAt": None}]}).encode()
        resp = RawResponse(200, [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body)
        if not list(c.openapi.iter_response_errors(req, resp)):
            c.fail("validator sanity", f"accepted the time {when!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--belfry", required=True, help="the belfry binary")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(here)))
    ap.add_argument("--spec", default=None, help="default: <source-dir>/docs/openapi.yaml")
    args = ap.parse_args()
    spec = args.spec or os.path.join(args.source_dir, "docs", "openapi.yaml")

    started = time.monotonic()
    with BelfryNode(args.belfry, args.source_dir, "openapi", token=TOKEN,
                    extra_env={"BELFRY_ADMIN_WRITE_TOKEN_SECRET": WRITE_SECRET}) as node:
        c = Contract(spec, args.source_dir)
        c.use(node.base_url)
        sanity_check_validator(c)
        c.check_server_routes()
        ids = seed(node)
        print(f"seeded {len(ids)} jobs and their executions in {time.monotonic() - started:.1f}s", flush=True)
        exercise(c, node, ids)
        exercise_commands(c, node)
        check_cli_view(c, node, ids)
        print(f"exercised every route and the CLI's view in {time.monotonic() - started:.1f}s", flush=True)
        # A second node on the same database and topics: no token, execution history disabled.
        # Its request heads time out after 300 ms, for the 408s.
        with BelfryNode(args.belfry, args.source_dir, "openapi-plain", share=node,
                        extra_env={"BELFRY_EXECUTIONS_ENABLED": "false",
                                   "BELFRY_ADMIN_REQUEST_HEAD_TIMEOUT": "300ms"}) as plain:
            c.use(plain.base_url)
            exercise_plain(c, ids)
            connection_answers(c, plain, ids, head_timeout_ms=300)
        c.use(node.base_url)
        print(f"exercised a node without token or history, and the gate's 408 and 431, in "
              f"{time.monotonic() - started:.1f}s", flush=True)
        database_gone(c, node, ids)
        print(f"database gone checked in {time.monotonic() - started:.1f}s", flush=True)
        c.check_coverage()
        if c.failures:
            print(f"\n--- node log (tail) ---\n{node.log_tail(30)}")
    elapsed = time.monotonic() - started
    if c.failures:
        print(f"\n{len(c.failures)} violation(s) of {spec} in {c.calls} calls ({elapsed:.1f}s)")
        for f in c.failures:
            print("  " + f.replace("\n", "\n    "))
        print(f"0 passed, 1 failed")
        return 1
    print(f"{c.calls} calls, every route and documented status, all conform to {spec} ({elapsed:.1f}s)")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
