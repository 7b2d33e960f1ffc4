#!/usr/bin/env python3
"""The belfry console's timings as an operator meets them, against a node that is already running.

  .venv/bin/python bench/console_timings.py --url http://127.0.0.1:18177 --token TOKEN --out DIR \
      [--rounds 5] [--job-id ID] [--id-prefix P] [--owner O] [--clicks 20]

Starts no node. In headless Chromium (Selenium, /usr/bin/chromium via /usr/bin/chromedriver), each
view is loaded ROUNDS times, each time as a full page load (about:blank, then the /ui/#/... URL):

  jobs        #/jobs                 the default list (50 a page)
  jobs-prefix #/jobs?prefix=P        the id prefix search (--id-prefix; skipped without it)
  jobs-owner  #/jobs?owner=O         one owner's jobs (--owner; skipped without it)
  job         #/jobs/ID              a job's page (--job-id, else the first id of GET /v1/jobs?limit=1)
  shards      #/shards
  load-1h     #/load                 the projected load, 1 h (the console's default)
  load-24h    #/load?h=24            the projected load, 24 h (the console's 24 h button)
  bulk        #/bulk

Per load it records the time to first render: from the navigation's responseStart to the
performance mark 'rendered' that console.js sets (with document.body.dataset.rendered = the route)
when the view has drawn its data; the API calls made by then (dataset.apiCalls) and in all once the
page is quiet (window.__belfryApiCalls: the jobs list asks GET /next for up to 20 calendar jobs
after it has rendered); and the bytes, from the Resource and Navigation Timing entries, of the
page's own files (index.html, console.js, console.css) and of the API answers, each as
transferSize (on the wire, headers included), encodedBodySize (the body as sent) and
decodedBodySize (uncompressed). A load that does not render within --timeout is recorded as failed
and the run goes on.

Paging: one full load of #/jobs, then CLICKS clicks in a row on "Next page", each timed from the
click (a capture-phase listener's performance.now()) to the page's next 'rendered' mark (the
renderCount that console.js bumps), waiting for the page's API calls to finish before the next
click. Keyset pagination should make page 20 cost what page 1 costs.

Also: the console's files as served (GET /ui/, /ui/console.js, /ui/console.css), their bytes, what
the node sends to Accept-Encoding: gzip and to Chromium's "gzip, deflate, br, zstd" with the
Content-Encoding it chose, and their gzip -9 size computed here for reference. The node of
2026-11-30 compresses (cpp-httplib built with zlib and brotli): Chromium gets br. Unless --no-probe,
GET /v1/jobs?limit=50 and the 24 h GET /v1/load are timed outside the browser per Accept-Encoding
(identity, gzip, Chromium's), to show what the compression costs the node.

Writes DIR/console-timings.json (everything raw) and prints the tables. The browser's HTTP cache is
not cleared between rounds (one browser for the whole run); the output says what it held.
"""

import argparse
import datetime
import gzip
import json
import os
import statistics
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

TIMEOUT = 60  # seconds, for any one page state
TOKEN_KEY = "belfry.token"  # console.js: sessionStorage key
CONSOLE_FILES = ["", "console.js", "console.css"]  # as served under /ui/


class BenchError(Exception):
    """A failure that stops the run, with a message saying what was wrong."""


# ---- plain HTTP ---------------------------------------------------------------------------------

BROWSER_ENCODINGS = "gzip, deflate, br, zstd"  # what Chromium sends


def http_get(url, token=None, accept_gzip=False, timeout=60, encoding=None):
    """(status, headers, body bytes) of one GET."""
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    if accept_gzip:
        headers["Accept-Encoding"] = "gzip"
    if encoding:
        headers["Accept-Encoding"] = encoding
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers.items()), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers.items()), e.read()
    except (urllib.error.URLError, OSError) as e:
        raise BenchError(f"GET {url} failed: {e}") from None


def api_json(base, path, token):
    status, _, body = http_get(base + path, token)
    if status != 200:
        raise BenchError(f"GET {path} answered {status}: {body[:300]!r}")
    return json.loads(body)


def console_file_sizes(base):
    out = []
    for name in CONSOLE_FILES:
        status, headers, body = http_get(base + "/ui/" + name, accept_gzip=True)
        if status != 200:
            raise BenchError(f"GET /ui/{name} answered {status}: is this a belfry node with the console?")
        enc = {k.lower(): v for k, v in headers.items()}.get("content-encoding", "")
        plain = body
        if enc == "gzip":
            plain = gzip.decompress(body)
        _, bh, bbody = http_get(base + "/ui/" + name, encoding=BROWSER_ENCODINGS)
        out.append({"file": "/ui/" + name, "bytes_served": len(body), "content_encoding": enc or None,
                    "bytes_served_to_browser": len(bbody),
                    "browser_content_encoding": {k.lower(): v for k, v in bh.items()}.get("content-encoding"),
                    "bytes": len(plain), "gzip_bytes_local": len(gzip.compress(plain, compresslevel=9)),
                    "cache_control": {k.lower(): v for k, v in headers.items()}.get("cache-control")})
    return out


def encoding_probe(base, token, paths, tries=2):
    """What the node's compression costs on API answers: per path and Accept-Encoding, the body's
    size, the Content-Encoding answered and the best time of `tries` GETs (urllib, no browser)."""
    out = []
    for label, path in paths:
        for enc in ("identity", "gzip", BROWSER_ENCODINGS):
            best, size, got, status = None, None, None, None
            for _ in range(tries):
                t = time.monotonic()
                try:
                    status, h, body = http_get(base + path, token, encoding=enc, timeout=TIMEOUT)
                except BenchError as e:  # a note, not a reason to stop
                    status, h, body = str(e), {}, b""
                dt = (time.monotonic() - t) * 1000
                best = dt if best is None else min(best, dt)
                size, got = len(body), {k.lower(): v for k, v in h.items()}.get("content-encoding")
            out.append({"answer": label, "path": path, "accept_encoding": enc, "status": status,
                        "content_encoding": got, "bytes": size, "best_ms": round(best, 1)})
    return out


def compare_with_source(sizes_base, source_dir):
    """Which served files differ from web/console/ of this checkout (a node built from an older tree)."""
    src = os.path.join(source_dir, "web", "console")
    if not os.path.isdir(src):
        return None
    differ = []
    for name in CONSOLE_FILES:
        path = os.path.join(src, name or "index.html")
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            want = f.read()
        _, _, got = http_get(sizes_base + "/ui/" + name)
        if got != want:
            differ.append(f"/ui/{name} ({len(got)} bytes served, {len(want)} in web/console)")
    return differ


# ---- statistics ---------------------------------------------------------------------------------

def pct(values, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[k]


def med(values):
    return statistics.median(values) if values else None


def fmt_ms(x):
    return "-" if x is None else f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def fmt_bytes(n):
    if n is None:
        return "-"
    if n >= 1024 * 1024:
        return f"{n / 1048576:.2f} MiB"
    if n >= 10 * 1024:
        return f"{n / 1024:.0f} KiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} B"


# ---- the browser --------------------------------------------------------------------------------

# Run in the page after it rendered: the timings and the bytes of this load.
LOAD_FACTS_JS = r"""
const nav = performance.getEntriesByType('navigation')[0];
const marks = performance.getEntriesByName('rendered');
const m = marks[0];
const b = document.body.dataset;
const start = nav ? (nav.responseStart || nav.startTime) : 0;
const res = performance.getEntriesByType('resource').map((e) => ({
  name: e.name, type: e.initiatorType, start: e.startTime, end: e.responseEnd,
  transfer: e.transferSize, encoded: e.encodedBodySize, decoded: e.decodedBodySize}));
return {
  render_ms: m ? m.startTime - start : null,
  rendered_at_ms: m ? m.startTime : null,
  response_start_ms: nav ? nav.responseStart : null,
  dom_content_loaded_ms: nav ? nav.domContentLoadedEventEnd : null,
  load_event_ms: nav ? nav.loadEventEnd : null,
  nav: nav ? {name: nav.name, transfer: nav.transferSize, encoded: nav.encodedBodySize, decoded: nav.decodedBodySize} : null,
  rendered: b.rendered || null, render_ok: b.renderOk === 'true', render_count: Number(b.renderCount || 0),
  api_calls_at_render: Number(b.apiCalls || 0), api_calls_total: Number(window.__belfryApiCalls || 0),
  resources: res,
  messages: (document.getElementById('messages') || {}).innerText || '',
};
"""

# True once every API call the page started has an entry (its answer has arrived).
SETTLED_JS = r"""
const calls = Number(window.__belfryApiCalls || 0);
const done = performance.getEntriesByType('resource').filter((e) => new URL(e.name).pathname.startsWith('/v1/')).length;
return [calls, done];
"""


def split_bytes(facts, base):
    """Bytes of the page's own files (navigation + non-API resources) and of the API answers."""
    origin = urllib.parse.urlsplit(base)
    page = {"files": 0, "transfer": 0, "encoded": 0, "decoded": 0, "from_cache": 0}
    api = {"answers": 0, "transfer": 0, "encoded": 0, "decoded": 0}
    if facts.get("nav"):
        n = facts["nav"]
        page["files"] += 1
        page["transfer"] += n["transfer"] or 0
        page["encoded"] += n["encoded"] or 0
        page["decoded"] += n["decoded"] or 0
    for e in facts["resources"]:
        u = urllib.parse.urlsplit(e["name"])
        if u.scheme in ("data", "blob") or (u.netloc and u.netloc != origin.netloc):
            continue
        if u.path.startswith("/v1/"):
            api["answers"] += 1
            api["transfer"] += e["transfer"] or 0
            api["encoded"] += e["encoded"] or 0
            api["decoded"] += e["decoded"] or 0
        else:
            page["files"] += 1
            page["transfer"] += e["transfer"] or 0
            page["encoded"] += e["encoded"] or 0
            page["decoded"] += e["decoded"] or 0
            if (e["transfer"] or 0) == 0 and (e["encoded"] or 0) > 0:
                page["from_cache"] += 1  # served from the HTTP cache without a request
    return page, api


class Browser:
    def __init__(self, args):
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service

        for path in (args.chromium, args.chromedriver):
            if not os.path.exists(path):
                raise BenchError(f"{path} does not exist (apt-get install chromium chromium-driver)")
        o = Options()
        o.binary_location = args.chromium
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1366,900",
                    "--disable-gpu", "--no-first-run", "--lang=en-US"):
            o.add_argument(arg)
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        try:
            self.d = webdriver.Chrome(options=o, service=Service(args.chromedriver))
        except Exception as e:  # noqa: BLE001 - say which part failed
            raise BenchError(f"could not start Chromium through {args.chromedriver}: {type(e).__name__}: {e}") from None
        self.d.set_page_load_timeout(TIMEOUT)
        self.d.set_script_timeout(TIMEOUT)
        self.version = self.d.capabilities.get("browserVersion")

    def quit(self):
        try:
            self.d.quit()
        except Exception:  # noqa: BLE001
            pass

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def wait(self, cond, what, timeout=None):
        from selenium.common.exceptions import (JavascriptException, StaleElementReferenceException,
                                                TimeoutException)
        from selenium.webdriver.support.ui import WebDriverWait

        timeout = timeout or TIMEOUT

        def guarded(d):
            try:
                return cond(d)
            except (StaleElementReferenceException, JavascriptException):
                return False
        try:
            return WebDriverWait(self.d, timeout, poll_frequency=0.05).until(guarded)
        except TimeoutException:
            try:
                state = self.js("return [location.href, document.body && document.body.dataset.rendered,"
                                " (document.getElementById('messages') || {}).innerText]")
            except Exception as e:  # noqa: BLE001
                state = f"(page state unreadable: {e})"
            raise BenchError(f"timed out after {timeout}s waiting for {what}; url, rendered, messages: {state!r}") from None

    def settle(self, timeout=None):
        """Waits until every API call the page made has answered; False if it did not in time."""
        last = [None, 0.0]

        def quiet(_):
            calls, done = self.js(SETTLED_JS)
            now = time.monotonic()
            if done < calls:
                last[0] = None
                return False
            if last[0] != (calls, done):  # no new call for 150 ms
                last[0], last[1] = (calls, done), now
                return False
            return now - last[1] >= 0.15
        try:
            self.wait(quiet, "the page's API calls to finish", timeout)
            return True
        except BenchError:
            return False

    def load(self, url, rendered, check=None):
        """A full page load of url; waits for the page's first 'rendered' mark with the route name."""
        self.d.get("about:blank")
        self.d.get(url)
        self.wait(lambda d: self.js("return document.body.dataset.rendered === arguments[0]"
                                    " && performance.getEntriesByName('rendered').length > 0", rendered),
                  f"{url} to render as {rendered!r}")
        self.js("performance.setResourceTimingBufferSize(5000)")
        if check:
            self.wait(lambda d: check(self), f"{url}: the expected content")


def measure_views(br, args, views, results):
    ui = args.url + "/ui/"
    for rnd in range(1, args.rounds + 1):
        for v in views:
            t0 = time.monotonic()
            try:
                br.load(ui + v["route"], v["rendered"], v.get("check"))
            except BenchError as e:  # recorded as a failed load; the run goes on
                results.append({"view": v["name"], "round": rnd, "route": v["route"], "failed": str(e),
                                "wall_s": round(time.monotonic() - t0, 3)})
                print(f"  round {rnd} {v['name']:12} FAILED: {e}", flush=True)
                continue
            first = br.js(LOAD_FACTS_JS)  # as of the first render
            settled = br.settle()
            after = br.js(LOAD_FACTS_JS)  # once quiet: the calls and bytes after the render too
            page, api = split_bytes(after, args.url)
            page_r, api_r = split_bytes(first, args.url)
            extra = br.js(v["extra_js"]) if v.get("extra_js") else None
            row = {
                "view": v["name"], "round": rnd, "route": v["route"],
                "render_ms": first["render_ms"], "response_start_ms": first["response_start_ms"],
                "dom_content_loaded_ms": first["dom_content_loaded_ms"], "load_event_ms": first["load_event_ms"],
                "render_ok": first["render_ok"], "render_count": after["render_count"],
                "api_calls_at_render": first["api_calls_at_render"], "api_calls_total": after["api_calls_total"],
                "settled": settled,
                "page_bytes": page, "api_bytes": api, "api_bytes_at_render": api_r,
                "resources": after["resources"], "nav": after["nav"],
                "messages": first["messages"].strip(), "shown": extra,
                "wall_s": round(time.monotonic() - t0, 3),
            }
            results.append(row)
            flag = "" if row["render_ok"] else f"  RENDERED WITH AN ERROR: {row['messages'][:200]!r}"
            print(f"  round {rnd} {v['name']:12} {fmt_ms(row['render_ms']):>7} ms, API calls {row['api_calls_at_render']}"
                  f"/{row['api_calls_total']}, API {fmt_bytes(api['transfer'])}, page files {fmt_bytes(page['transfer'])}{flag}",
                  flush=True)


CLICK_HOOK_JS = r"""
if (!window.__benchClicks) {
  window.__benchClicks = [];
  document.addEventListener('click', (e) => {
    if (e.target && e.target.id === 'jobs-next') window.__benchClicks.push(performance.now());
  }, true);
}
return true;
"""

PAGE_STATE_JS = r"""
const b = document.body.dataset;
const marks = performance.getEntriesByName('rendered');
const rows = document.querySelectorAll('tr[data-testid="job-row"]');
const next = document.getElementById('jobs-next');
return {render_count: Number(b.renderCount || 0), rendered: b.rendered || null, render_ok: b.renderOk === 'true',
        api_calls_at_render: Number(b.apiCalls || 0), api_calls_total: Number(window.__belfryApiCalls || 0),
        last_mark: marks.length ? marks[marks.length - 1].startTime : null, marks: marks.length,
        clicks: (window.__benchClicks || []).slice(),
        info: (document.getElementById('jobs-page-info') || {}).textContent || '',
        rows: rows.length, first_id: rows.length ? rows[0].getAttribute('data-job-id') : null,
        last_id: rows.length ? rows[rows.length - 1].getAttribute('data-job-id') : null,
        next_enabled: !!(next && !next.disabled),
        messages: (document.getElementById('messages') || {}).innerText || ''};
"""


def measure_paging(br, args):
    ui = args.url + "/ui/"
    t0 = time.monotonic()
    br.load(ui + "#/jobs", "jobs")
    first = br.js(LOAD_FACTS_JS)
    br.settle()
    br.js(CLICK_HOOK_JS)
    st = br.js(PAGE_STATE_JS)
    out = {"first_load_render_ms": first["render_ms"], "page1": {k: st[k] for k in ("info", "rows", "first_id", "last_id")},
           "clicks": [], "stopped": None}
    try:
        paging_clicks(br, args, out)
    except BenchError as e:
        out["error"] = str(e)
        print(f"PAGING STOPPED: {e}", flush=True)
    out["wall_s"] = round(time.monotonic() - t0, 3)
    return out


def paging_clicks(br, args, out):
    from selenium.webdriver.common.by import By

    for i in range(1, args.clicks + 1):
        st = br.js(PAGE_STATE_JS)
        if not st["next_enabled"]:
            out["stopped"] = f"no next page after page {i} ({st['info']})"
            break
        before_count, before_calls = st["render_count"], st["api_calls_total"]
        before_res = len(br.js("return performance.getEntriesByType('resource')"))
        br.d.find_element(By.ID, "jobs-next").click()
        br.wait(lambda d: br.js("return Number(document.body.dataset.renderCount || 0)") > before_count,
                f"page {i + 1} to render after click {i}")
        st = br.js(PAGE_STATE_JS)
        if len(st["clicks"]) < i:
            raise BenchError(f"click {i} on #jobs-next was not seen by the page's click listener")
        click_at = st["clicks"][i - 1]
        settled = br.settle()
        res = br.js("return performance.getEntriesByType('resource').slice(arguments[0]).map((e) => ({name: e.name,"
                    " transfer: e.transferSize, encoded: e.encodedBodySize, start: e.startTime, end: e.responseEnd}))", before_res)
        list_call = [e for e in res if "/v1/jobs?" in e["name"]]
        row = {"click": i, "page": i + 1, "render_ms": st["last_mark"] - click_at,
               "list_request_ms": (list_call[0]["end"] - list_call[0]["start"]) if list_call else None,
               "render_ok": st["render_ok"], "api_calls_at_render": st["api_calls_at_render"] - before_calls,
               "api_calls_total": br.js("return Number(window.__belfryApiCalls || 0)") - before_calls,
               "api_transfer_bytes": sum(e["transfer"] or 0 for e in res), "api_encoded_bytes": sum(e["encoded"] or 0 for e in res),
               "info": st["info"], "rows": st["rows"], "first_id": st["first_id"], "last_id": st["last_id"],
               "settled": settled, "messages": st["messages"].strip()}
        out["clicks"].append(row)
        print(f"  click {i:2} -> page {i + 1:2}: {fmt_ms(row['render_ms']):>6} ms (GET /v1/jobs {fmt_ms(row['list_request_ms'])} ms),"
              f" {row['rows']} rows {row['first_id']}..{row['last_id']}, API calls {row['api_calls_at_render']}/{row['api_calls_total']}"
              + ("" if row["render_ok"] else f"  RENDERED WITH AN ERROR: {row['messages'][:200]!r}"), flush=True)


# ---- the report ---------------------------------------------------------------------------------

def summarize_views(rows, view_names):
    out = []
    for name in view_names:
        failed = [r for r in rows if r["view"] == name and r.get("failed")]
        rs = [r for r in rows if r["view"] == name and not r.get("failed")]
        if not rs:
            if failed:
                out.append({"view": name, "route": failed[0]["route"], "rounds": 0, "failed_loads": len(failed),
                            "failure": failed[0]["failed"], "errors": len(failed)})
            continue
        ms = [r["render_ms"] for r in rs if r["render_ms"] is not None]
        out.append({
            "view": name, "route": rs[0]["route"], "rounds": len(rs),
            "render_ms_median": med(ms), "render_ms_max": max(ms) if ms else None, "render_ms_min": min(ms) if ms else None,
            "api_calls_at_render_median": med([r["api_calls_at_render"] for r in rs]),
            "api_calls_total_median": med([r["api_calls_total"] for r in rs]),
            "page_transfer_median": med([r["page_bytes"]["transfer"] for r in rs]),
            "page_encoded_median": med([r["page_bytes"]["encoded"] for r in rs]),
            "page_decoded_median": med([r["page_bytes"]["decoded"] for r in rs]),
            "page_files_from_cache": sum(r["page_bytes"]["from_cache"] for r in rs),
            "page_files": sum(r["page_bytes"]["files"] for r in rs),
            "api_transfer_median": med([r["api_bytes"]["transfer"] for r in rs]),
            "api_encoded_median": med([r["api_bytes"]["encoded"] for r in rs]),
            "api_decoded_median": med([r["api_bytes"]["decoded"] for r in rs]),
            "errors": sum(1 for r in rs if not r["render_ok"]) + len(failed), "failed_loads": len(failed),
            "shown": rs[-1]["shown"],
        })
    return out


def summarize_paging(p):
    ms = [c["render_ms"] for c in p["clicks"]]
    if not ms:
        return {"clicks": 0}
    s = {"clicks": len(ms), "median_ms": med(ms), "p90_ms": pct(ms, 90), "max_ms": max(ms), "min_ms": min(ms),
         "first5_median_ms": med(ms[:5]), "last5_median_ms": med(ms[-5:]),
         "list_request_median_ms": med([c["list_request_ms"] for c in p["clicks"] if c["list_request_ms"] is not None]),
         "api_transfer_median": med([c["api_transfer_bytes"] for c in p["clicks"]]),
         "errors": sum(1 for c in p["clicks"] if not c["render_ok"])}
    return s


def print_report(doc):
    m = doc["meta"]
    print()
    print(f"belfry console timings: {m['url']} at {m['started_at']}, {m['rounds']} round(s), Chromium {m['browser_version']},"
          f" window 1366x900, headless")
    print(f"job page: {m['job_id']!r}; id prefix {m['id_prefix']!r}; owner {m['owner']!r}")
    print()
    cf = doc["console_files"]
    compressed = [f["file"] for f in cf if f["content_encoding"]]
    print("Console files as served: bytes; the body the node sent to Accept-Encoding: gzip, and to Chromium's"
          f" '{BROWSER_ENCODINGS}', with the Content-Encoding; gzip -9 computed here for reference. "
          + (f"NOTE: the node DOES compress ({', '.join(compressed)}), so the browser's bytes below are compressed ones."
             if compressed else "The node does not compress."))
    print("| file | bytes | sent to gzip | sent to Chromium's set | gzip -9 here (reference) | Cache-Control |")
    print("|---|---:|---:|---:|---:|---|")
    for f in cf:
        print(f"| {f['file']} | {f['bytes']} | {f['bytes_served']} ({f['content_encoding'] or 'none'}) |"
              f" {f['bytes_served_to_browser']} ({f['browser_content_encoding'] or 'none'}) | {f['gzip_bytes_local']} | {f['cache_control']} |")
    print(f"| all | {sum(f['bytes'] for f in cf)} | {sum(f['bytes_served'] for f in cf)} | {sum(f['bytes_served_to_browser'] for f in cf)} |"
          f" {sum(f['gzip_bytes_local'] for f in cf)} | |")
    if doc.get("encoding_probe"):
        print()
        print("API answers by Accept-Encoding (outside the browser, best of 2 GETs): what compression costs the node")
        print("| answer | Accept-Encoding | Content-Encoding | bytes | ms |")
        print("|---|---|---|---:|---:|")
        for e in doc["encoding_probe"]:
            print(f"| {e['answer']} | {e['accept_encoding']} | {e['content_encoding'] or 'none'} | {e['bytes']} | {fmt_ms(e['best_ms'])}"
                  + ("" if e["status"] == 200 else f" (status {e['status']})") + " |")
    if doc.get("served_differs_from_source"):
        print("NOTE: the served console differs from this checkout's web/console/: " + ", ".join(doc["served_differs_from_source"]))
    print()
    print("Views: time to first render = navigation responseStart -> performance mark 'rendered' (ms);"
          " API calls by the render / in all (once quiet); bytes per load (median) on the wire (transferSize,"
          " headers included) / decoded (decodedBodySize)")
    print("| view | route | median ms | max ms | API calls (render/all) | page files (wire / decoded) | API answers (wire / decoded) | errors |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for s in doc["summary"]["views"]:
        if not s["rounds"]:
            print(f"| {s['view']} | `{s['route']}` | - | - | - | - | - | {s['errors']} (every load failed: {s['failure'][:120]}) |")
            continue
        print(f"| {s['view']} | `{s['route']}` | {fmt_ms(s['render_ms_median'])} | {fmt_ms(s['render_ms_max'])} |"
              f" {s['api_calls_at_render_median']:g}/{s['api_calls_total_median']:g} |"
              f" {fmt_bytes(s['page_transfer_median'])} / {fmt_bytes(s['page_decoded_median'])} |"
              f" {fmt_bytes(s['api_transfer_median'])} / {fmt_bytes(s['api_decoded_median'])} | {s['errors']} |")
    print()
    print("Shown (last round): " + "; ".join(f"{s['view']}: {(s['shown'] or '')[:160]}" for s in doc["summary"]["views"] if s.get("shown")))
    print("Browser cache: " + doc["summary"]["cache_note"])
    p, ps = doc["paging"], doc["summary"]["paging"]
    print()
    if not ps.get("clicks"):
        print(f"Paging: no click measured ({p.get('stopped') or p.get('error') or 'clicks: 0'})")
        return
    if p.get("error"):
        print(f"PAGING STOPPED after {ps['clicks']} click(s): {p['error']}")
    print(f"Paging through #/jobs: {ps['clicks']} clicks on Next page in a row, click -> next 'rendered' mark (ms);"
          f" page 1's full load rendered in {fmt_ms(p['first_load_render_ms'])} ms"
          + (f"; stopped: {p['stopped']}" if p.get("stopped") else ""))
    print("| clicks | median | p90 | max | first 5 median | last 5 median | GET /v1/jobs median | API bytes/click (median) | errors |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {ps['clicks']} | {fmt_ms(ps['median_ms'])} | {fmt_ms(ps['p90_ms'])} | {fmt_ms(ps['max_ms'])} |"
          f" {fmt_ms(ps['first5_median_ms'])} | {fmt_ms(ps['last5_median_ms'])} | {fmt_ms(ps['list_request_median_ms'])} |"
          f" {fmt_bytes(ps['api_transfer_median'])} | {ps['errors']} |")
    print("per click (ms): " + " ".join(fmt_ms(c["render_ms"]) for c in p["clicks"]))
    last = p["clicks"][-1]
    print(f"last page reached: {last['info']!r} ({last['first_id']}..{last['last_id']})")


def main():
    global TIMEOUT
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="the node's admin base URL, e.g. http://127.0.0.1:8080")
    ap.add_argument("--token", default="", help="a write or read token (empty: none, for a loopback node without admin.token)")
    ap.add_argument("--out", required=True, help="directory for console-timings.json")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--job-id", default="", help="the job page's job (default: the first id of GET /v1/jobs?limit=1)")
    ap.add_argument("--id-prefix", default="", help="id prefix for the prefix-search view (skipped when empty)")
    ap.add_argument("--owner", default="", help="owner for the owner view (skipped when empty)")
    ap.add_argument("--clicks", type=int, default=20, help="Next page clicks in the paging run")
    ap.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds to wait for any one page state (default 60)")
    ap.add_argument("--no-probe", dest="probe", action="store_false",
                    help="skip timing GET /v1/jobs and the 24 h /v1/load per Accept-Encoding outside the browser")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    ap.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="a checkout whose web/console/ the served files are compared with (a note only)")
    args = ap.parse_args()
    args.url = args.url.rstrip("/")
    TIMEOUT = args.timeout
    if args.rounds < 1 or args.clicks < 0:
        ap.error("--rounds must be >= 1 and --clicks >= 0")
    os.makedirs(args.out, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    t_start = time.monotonic()

    # The node, before any browser: it answers, the token reads, a job to show.
    status, _, body = http_get(args.url + "/readyz")
    if status != 200:
        print(f"NOTE: {args.url}/readyz answered {status}: {body[:200]!r} (measuring anyway)", flush=True)
    first = api_json(args.url, "/v1/jobs?limit=1", args.token)
    if not args.job_id:
        if not first.get("jobs"):
            raise BenchError("GET /v1/jobs?limit=1 lists no job: give --job-id, or seed the node first")
        args.job_id = first["jobs"][0]["id"]
    api_json(args.url, "/v1/jobs/" + urllib.parse.quote(args.job_id, safe=""), args.token)  # 404 -> a clear error
    if args.id_prefix:
        pre = api_json(args.url, "/v1/jobs?limit=50&id_prefix=" + urllib.parse.quote(args.id_prefix), args.token)
        if not pre.get("jobs"):
            print(f"NOTE: no job id starts with {args.id_prefix!r}: the prefix view measures an empty answer", flush=True)
    if args.owner:
        own = api_json(args.url, "/v1/jobs?limit=1&owner=" + urllib.parse.quote(args.owner), args.token)
        if not own.get("jobs"):
            print(f"NOTE: owner {args.owner!r} has no job: the owner view measures an empty answer", flush=True)
    files = console_file_sizes(args.url)
    differs = compare_with_source(args.url, args.source_dir)
    now_min = (int(time.time()) // 60 + 1) * 60
    iso = lambda t: datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    probe = encoding_probe(args.url, args.token, [
        ("GET /v1/jobs?limit=50", "/v1/jobs?limit=50"),
        ("GET /v1/load 24 h", f"/v1/load?from={iso(now_min)}&to={iso(now_min + 86400)}")]) if args.probe else []

    job_js = ("return (document.getElementById('job-id') || {}).textContent + ': '"
              " + document.querySelectorAll('tr[data-testid=\"next-fire\"]').length + ' next fires, '"
              " + document.querySelectorAll('tr[data-testid=\"execution\"]').length + ' executions, '"
              " + document.querySelectorAll('li[data-testid=\"audit-entry\"]').length + ' audit entries'")
    list_js = "return (document.getElementById('jobs-page-info') || document.getElementById('jobs-empty') || {}).textContent"
    views = [
        {"name": "jobs", "route": "#/jobs", "rendered": "jobs", "extra_js": list_js},
        {"name": "jobs-prefix", "route": "#/jobs?" + urllib.parse.urlencode({"prefix": args.id_prefix}), "rendered": "jobs",
         "extra_js": list_js, "skip": not args.id_prefix},
        {"name": "jobs-owner", "route": "#/jobs?" + urllib.parse.urlencode({"owner": args.owner}), "rendered": "jobs",
         "extra_js": list_js, "skip": not args.owner},
        {"name": "job", "route": "#/jobs/" + urllib.parse.quote(args.job_id, safe=""), "rendered": "job", "extra_js": job_js,
         "check": lambda br: br.js("return (document.getElementById('job-id') || {}).textContent") == args.job_id},
        {"name": "shards", "route": "#/shards", "rendered": "shards",
         "extra_js": "return (document.getElementById('shards-summary') || {}).textContent"},
        {"name": "load-1h", "route": "#/load", "rendered": "load",
         "extra_js": "return 'total ' + (document.getElementById('load-total') || {}).textContent + ', peak ' + (document.getElementById('load-peak') || {}).textContent"},
        {"name": "load-24h", "route": "#/load?h=24", "rendered": "load",
         "extra_js": "return 'total ' + (document.getElementById('load-total') || {}).textContent + ', peak ' + (document.getElementById('load-peak') || {}).textContent"},
        {"name": "bulk", "route": "#/bulk", "rendered": "bulk",
         "extra_js": "return document.querySelectorAll('tr[data-testid=\"bulk-row\"]').length + ' bulk operations listed'"},
    ]
    skipped = [v["name"] for v in views if v.get("skip")]
    views = [v for v in views if not v.get("skip")]
    if skipped:
        print(f"NOTE: skipped {', '.join(skipped)} (no --id-prefix / --owner given)", flush=True)

    br = Browser(args)
    rows, paging = [], {"clicks": []}
    try:
        # The token, as an operator's tab has it: the origin loaded once, then sessionStorage.
        br.d.get(args.url + "/ui/#/jobs")
        br.wait(lambda d: br.js("return !!document.body.dataset.rendered"), "the console's first render")
        if args.token:
            br.js("sessionStorage.setItem(arguments[0], arguments[1])", TOKEN_KEY, args.token)
        br.d.get("about:blank")
        br.d.get(args.url + "/ui/#/jobs")
        br.wait(lambda d: br.js("return document.body.dataset.rendered === 'jobs'"), "the jobs page with the token")
        if args.token and br.js("return sessionStorage.getItem(arguments[0])", TOKEN_KEY) != args.token:
            raise BenchError("the token did not survive a reload in sessionStorage")
        if br.js("return document.body.dataset.renderOk") != "true":
            raise BenchError("the jobs page rendered with an error with this token: "
                             + br.js("return document.getElementById('messages').innerText"))
        token_status = br.js("return document.getElementById('token-status').textContent")
        print(f"console at {args.url}/ui/, token status: {token_status!r}", flush=True)
        print(f"views, {args.rounds} round(s) each, interleaved:", flush=True)
        measure_views(br, args, views, rows)
        if args.clicks:
            print(f"paging: {args.clicks} clicks on Next page:", flush=True)
            try:
                paging = measure_paging(br, args)
            except BenchError as e:  # page 1 did not load
                paging = {"clicks": [], "error": str(e)}
                print(f"PAGING FAILED: {e}", flush=True)
        log = br.d.get_log("browser")
        bad_log = [e["message"] for e in log if e["level"] == "SEVERE" or "Content Security Policy" in e["message"]]
    finally:
        br.quit()

    # The cache: one browser for the whole run. Files with transferSize 0 and a body came from it.
    cached = sum(r["page_bytes"]["from_cache"] for r in rows if not r.get("failed"))
    total_files = sum(r["page_bytes"]["files"] for r in rows if not r.get("failed"))
    cache_note = (f"one browser for all loads, its HTTP cache not cleared (warm after the first load); "
                  f"{cached} of {total_files} page-file fetches were served from the cache without a request"
                  + (" (the files answer Cache-Control: no-cache, so each load asks the node again)"
                     if any((f["cache_control"] or "").startswith("no-cache") for f in files) else ""))
    doc = {
        "meta": {"url": args.url, "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"), "rounds": args.rounds,
                 "clicks": args.clicks, "browser_version": br.version, "window": "1366x900", "headless": "new",
                 "job_id": args.job_id, "id_prefix": args.id_prefix or None, "owner": args.owner or None,
                 "skipped_views": skipped, "cache_warm": True,
                 "jobs_note": "first id " + (first["jobs"][0]["id"] if first.get("jobs") else "(none)"),
                 "took_s": round(time.monotonic() - t_start, 1)},
        "console_files": files,
        "served_differs_from_source": differs,
        "encoding_probe": probe,
        "summary": {"views": summarize_views(rows, [v["name"] for v in views]), "paging": summarize_paging(paging),
                    "cache_note": cache_note},
        "views": rows,
        "paging": paging,
        "browser_log_bad": bad_log,
    }
    path = os.path.join(args.out, "console-timings.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print_report(doc)
    if bad_log:
        print(f"\nbrowser log: {len(bad_log)} SEVERE/CSP entries, e.g. {bad_log[:3]}")
    errors = sum(s["errors"] for s in doc["summary"]["views"]) + doc["summary"]["paging"].get("errors", 0)
    errors += 1 if paging.get("error") else 0
    print(f"\nwrote {path}; took {doc['meta']['took_s']} s" + (f"; {errors} load(s) rendered with an error" if errors else ""))
    return 1 if errors or paging.get("error") else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"console_timings: {e}", file=sys.stderr)
        sys.exit(2)
