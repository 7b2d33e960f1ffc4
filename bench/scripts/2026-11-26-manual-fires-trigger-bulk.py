# 5,000 trigger commands published at once; the node's apply time for them, from its metrics.
import json, os, re, sys, time, urllib.request
from confluent_kafka import Producer
admin = os.environ['BELFRY_ADMIN_LISTEN']
ids = [l.strip() for l in open('/tmp/trig_ids.txt') if l.strip()]
def metrics():
    t = urllib.request.urlopen(f'http://{admin}/metrics').read().decode()
    s = float(re.search(r'^belfry_command_apply_seconds_sum (\S+)', t, re.M).group(1))
    c = float(re.search(r'^belfry_command_apply_seconds_count (\S+)', t, re.M).group(1))
    m = re.search(r'^belfry_commands_total\{[^}]*op="trigger"[^}]*status="applied"[^}]*\} (\S+)', t, re.M) or \
        re.search(r'^belfry_commands_total\{[^}]*status="applied"[^}]*op="trigger"[^}]*\} (\S+)', t, re.M)
    return s, c, float(m.group(1)) if m else 0.0
s0, c0, a0 = metrics()
p = Producer({'bootstrap.servers': os.environ['BELFRY_KAFKA_BROKERS'], 'linger.ms': 20})
t0 = time.time()
for i in ids:
    p.produce(os.environ['BELFRY_KAFKA_COMMANDS_TOPIC'], key=i, value=json.dumps({'op': 'trigger', 'id': i}))
p.flush()
while True:
    s1, c1, a1 = metrics()
    if a1 - a0 >= len(ids): break
    if time.time() - t0 > 300: print('timeout', a1 - a0); break
    time.sleep(0.05)
print(json.dumps({'triggers': len(ids), 'batches': c1 - c0, 'apply_ms_total': round((s1 - s0) * 1000, 1),
                  'wall_ms_publish_to_applied': round((time.time() - t0) * 1000, 1)}))
