import os, re, subprocess, time, json, statistics, urllib.request, datetime
os.chdir('/work/main')
admin = os.environ['BELFRY_ADMIN_LISTEN']
def apply_sum():
    txt = urllib.request.urlopen(f'http://{admin}/metrics').read().decode()
    s = float(re.search(r'^belfry_command_apply_seconds_sum (\S+)', txt, re.M).group(1))
    c = float(re.search(r'^belfry_command_apply_seconds_count (\S+)', txt, re.M).group(1))
    return s, c
def run(args):
    s0, c0 = apply_sum()
    t0 = time.time()
    out = subprocess.run(['build/belfry'] + args, capture_output=True, text=True)
    wall = time.time() - t0
    for _ in range(50):
        s1, c1 = apply_sum()
        if c1 > c0: break
        time.sleep(0.05)
    return (s1 - s0) * 1000, wall * 1000, out.stdout.strip()
ids = [l.strip() for l in open('/tmp/bf_ids.txt') if l.strip()]
now = datetime.datetime.now(datetime.timezone.utc).replace(second=0, microsecond=0)
to = now - datetime.timedelta(minutes=1)
frm = to - datetime.timedelta(minutes=9990)
iso = lambda d: d.strftime('%Y-%m-%dT%H:%M:%SZ')
res = {'pause': [], 'dry': [], 'backfill': [], 'repeat': [], 'trigger': []}
for jid in ids:
    for kind, args in [('pause', ['jobs', 'pause', jid]),
                       ('dry', ['jobs', 'backfill', jid, '--from', iso(frm), '--to', iso(to), '--dry-run']),
                       ('backfill', ['jobs', 'backfill', jid, '--from', iso(frm), '--to', iso(to), '--rate', '10000']),
                       ('repeat', ['jobs', 'backfill', jid, '--from', iso(frm), '--to', iso(to), '--rate', '10000']),
                       ('trigger', ['jobs', 'trigger', jid])]:
        a, w, out = run(args)
        res[kind].append((a, w, out))
    subprocess.run(['build/belfry', 'jobs', 'resume', jid], capture_output=True)
summary = {}
for k, v in res.items():
    summary[k] = {'apply_ms_median': round(statistics.median(x[0] for x in v), 1),
                  'apply_ms_min': round(min(x[0] for x in v), 1), 'apply_ms_max': round(max(x[0] for x in v), 1),
                  'cli_ms_median': round(statistics.median(x[1] for x in v), 1), 'n': len(v),
                  'example_outcome': v[0][2]}
print(json.dumps(summary, indent=1))
