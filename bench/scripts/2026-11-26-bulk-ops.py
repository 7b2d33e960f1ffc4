# Bulk operations over 1M jobs on a firing node: each op's time (publish to outcome, through the
# CLI as an operator runs it), and, for each op's span against a quiet baseline, the triggers
# fired per minute, the lateness quantiles and tick-query time from the node's own histograms,
# and the round trip of a per-job command published meanwhile (the command partition's health).
# Usage: python3 bench/scripts/2026-11-26-bulk-ops.py OWNER LABEL > result.json  (env: BELFRY_ADMIN_LISTEN, BELFRY_* for the CLI)
import json, os, re, statistics, subprocess, sys, threading, time, urllib.request

ADMIN = os.environ['BELFRY_ADMIN_LISTEN']
BELFRY = os.environ.get('BELFRY_BIN', 'build/belfry')
OWNER, LABEL = sys.argv[1], sys.argv[2]
PROBE = 'bulk-bench-probe'


def log(*a):
    print(time.strftime('%H:%M:%S'), *a, file=sys.stderr, flush=True)


def scrape():
    text = urllib.request.urlopen(f'http://{ADMIN}/metrics', timeout=10).read().decode()
    out = {}
    for name in ('belfry_trigger_lateness_seconds', 'belfry_tick_query_seconds', 'belfry_tick_duration_seconds'):
        buckets = [(float('inf') if le == '+Inf' else float(le), float(v))
                   for le, v in re.findall(name + r'_bucket\{le="([^"]+)"\} (\S+)', text)]
        out[name] = buckets
    m = re.search(r'^belfry_triggers_emitted_total(?:\{\})? (\S+)$', text, re.M)
    out['emitted'] = float(m.group(1)) if m else 0.0
    return out


def quantile(b0, b1, q):
    """q-quantile of the observations between two scrapes of a cumulative histogram (bucket upper bound)."""
    d = [(le, c1 - c0) for (le, c0), (_, c1) in zip(b0, b1)]
    total = d[-1][1] if d else 0
    if total <= 0:
        return None
    for le, c in d:
        if c >= q * total:
            return le
    return None


def span_stats(s0, s1, t0, t1):
    minutes = (t1 - t0) / 60
    r = {'seconds': round(t1 - t0, 1), 'triggers_per_min': round((s1['emitted'] - s0['emitted']) / minutes)}
    for key, name in (('lateness', 'belfry_trigger_lateness_seconds'), ('tick_query', 'belfry_tick_query_seconds'),
                      ('tick', 'belfry_tick_duration_seconds')):
        for q in (0.5, 0.99):
            v = quantile(s0[name], s1[name], q)
            r[f'{key}_p{int(q * 100)}_le_s'] = v
    return r


probe_times = []  # (wall time, round-trip ms)
stop = threading.Event()


def prober():
    flag = True
    while not stop.is_set():
        t0 = time.time()
        r = subprocess.run([BELFRY, 'jobs', 'pause' if flag else 'resume', PROBE, '--timeout', '60s'],
                           capture_output=True, text=True)
        ms = (time.time() - t0) * 1000
        if r.returncode == 0:
            probe_times.append((t0, ms))
        else:
            log('probe failed', r.stdout, r.stderr)
        flag = not flag
        stop.wait(5)


def probes_between(t0, t1):
    v = sorted(ms for t, ms in probe_times if t0 <= t < t1)
    if not v:
        return {}
    return {'probe_commands': len(v), 'probe_median_ms': round(statistics.median(v)),
            'probe_max_ms': round(v[-1])}


def bulk(op, args):
    cmd = [BELFRY, 'bulk', op, *args, '--timeout', '30m']
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    t1 = time.time()
    outcome = None
    for line in r.stdout.splitlines():
        if line.startswith('{'):
            outcome = json.loads(line)
    log(op, args, f'{t1 - t0:.1f}s', outcome)
    return t0, t1, outcome


subprocess.run([BELFRY, 'jobs', 'put', '--id', PROBE, '--every', 'EVERY_HOUR', '--topic', 'lt.triggers.0',
                '--owner', 'bench-probe'], check=True, capture_output=True)
threading.Thread(target=prober, daemon=True).start()
result = {'owner': OWNER, 'label': LABEL, 'ops': [],
          'bulk_step_pause': os.environ.get('BELFRY_COMMANDS_BULK_STEP_PAUSE', '20ms (default)'),
          'bulk_step_jobs': os.environ.get('BELFRY_COMMANDS_BULK_STEP_JOBS', '1000 (default)')}

log('baseline 120 s')
t0, s0 = time.time(), scrape()
time.sleep(120)
t1, s1 = time.time(), scrape()
result['baseline'] = {**span_stats(s0, s1, t0, t1), **probes_between(t0, t1)}
log('baseline', result['baseline'])

plan = [
    ('pause', ['--owner', OWNER, '--dry-run'], 'dry run, owner'),
    ('pause', ['--label', LABEL, '--dry-run'], 'dry run, label'),
    ('pause', ['--label', LABEL, '--reason', 'bench'], 'pause, label'),
    ('resume', ['--label', LABEL], 'resume, label'),
    ('trigger', ['--label', LABEL], 'trigger, label'),
    ('pause', ['--owner', OWNER, '--reason', 'bench'], 'pause, owner'),
    ('resume', ['--owner', OWNER], 'resume, owner'),
    ('trigger', ['--owner', OWNER], 'trigger, owner'),
    ('delete', ['--owner', OWNER], 'delete, owner'),
]
# BULK_OPS="pause, owner;resume, owner" runs only those (by name), in plan order.
if os.environ.get('BULK_OPS'):
    wanted = set(os.environ['BULK_OPS'].split(';'))
    plan = [p for p in plan if p[2] in wanted]
for op, args, name in plan:
    s0 = scrape()
    a, b, outcome = bulk(op, args)
    s1 = scrape()
    entry = {'name': name, 'seconds': round(b - a, 1),
             'matched': outcome and outcome.get('matched'), 'changed': outcome and outcome.get('changed'),
             'status': outcome and outcome.get('status'),
             'during': {**span_stats(s0, s1, a, b), **probes_between(a, b)}}
    result['ops'].append(entry)
    log(name, entry)
    time.sleep(30 if op != 'trigger' else 90)  # a bulk trigger's rows fire after its walk
stop.set()
print(json.dumps(result, indent=1))
