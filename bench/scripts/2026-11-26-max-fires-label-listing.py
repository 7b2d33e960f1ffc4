# GET /v1/jobs by label against 1M jobs (10% labelled), over one kept-alive HTTP connection as a
# client library holds it: the median and p99 of 100 pages per filter, and pages 2-3 by cursor.
import http.client, json, os, statistics, sys, time

host, port = os.environ['BELFRY_ADMIN_LISTEN'].split(':')
conn = http.client.HTTPConnection(host, int(port))


def get(path):
    t0 = time.perf_counter()
    conn.request('GET', path)
    r = conn.getresponse()
    body = r.read()
    return (time.perf_counter() - t0) * 1000, r.status, json.loads(body)


filters = {
    'owner (50k jobs), the reference': 'owner=owner-3',
    'label team=t3 (10k jobs)': 'label=team=t3',
    'labels team=t3 and carrier=c13 (2k jobs)': 'label=team=t3&label=carrier=c13',
    'label carrier=c7 (2k jobs)': 'label=carrier=c7',
    'label team=nobody (no job)': 'label=team=nobody',
    'label team=t3 with owner-0 (no job: team t3 ids are all owner-10)': 'label=team=t3&owner=owner-0',
}
out = {}
for name, q in filters.items():
    get(f'/v1/jobs?{q}&limit=100')  # warm
    times, statuses, counts = [], set(), set()
    for _ in range(100):
        ms, status, body = get(f'/v1/jobs?{q}&limit=100')
        times.append(ms)
        statuses.add(status)
        counts.add(len(body.get('jobs', [])))
    times.sort()
    # Two more pages by cursor.
    _, _, page = get(f'/v1/jobs?{q}&limit=100')
    pages = []
    for _ in range(2):
        if not page.get('next_cursor'):
            break
        ms, _, page = get(f"/v1/jobs?{q}&limit=100&cursor={page['next_cursor']}")
        pages.append(round(ms, 1))
    out[name] = {'median_ms': round(statistics.median(times), 1), 'p99_ms': round(times[98], 1),
                 'statuses': sorted(statuses), 'jobs_per_page': sorted(counts), 'next_pages_ms': pages}
    print(name, out[name], file=sys.stderr, flush=True)
print(json.dumps(out, indent=1))
