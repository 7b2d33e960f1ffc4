# What maxFires and labels cost the command path: batches of upserts with and without maxFires, and pause +
# resume of limited and unlimited jobs, through Kafka into a running node (scheduler off). The apply
# time is the increase of belfry_command_apply_seconds_sum (the PostgreSQL transactions); the wall
# time runs from the first publish to the last command applied (parse and validation included).
# Variants alternate, fresh ids each run.
import json, os, re, sys, time, urllib.request, statistics
from confluent_kafka import Producer

admin = os.environ['BELFRY_ADMIN_LISTEN']
topic = os.environ.get('BELFRY_KAFKA_COMMANDS_TOPIC', 'belfry.commands')
N = int(os.environ.get('N', '20000'))
ROUNDS = int(os.environ.get('ROUNDS', '3'))
INTERVALS = [1, 5, 15, 60, 1440]


def metrics():
    t = urllib.request.urlopen(f'http://{admin}/metrics').read().decode()
    s = float(re.search(r'^belfry_command_apply_seconds_sum (\S+)', t, re.M).group(1))
    applied = 0.0
    for m in re.finditer(r'^belfry_commands_total\{([^}]*)\} (\S+)', t, re.M):
        if 'status="applied"' in m.group(1):
            applied += float(m.group(2))
    return s, applied


producer = Producer({'bootstrap.servers': os.environ['BELFRY_KAFKA_BROKERS'], 'linger.ms': 20})


def publish(cmds):
    s0, a0 = metrics()
    t0 = time.time()
    for key, value in cmds:
        producer.produce(topic, key=key, value=json.dumps(value))
        producer.poll(0)
    producer.flush()
    while True:
        s1, a1 = metrics()
        if a1 - a0 >= len(cmds):
            break
        if time.time() - t0 > 600:
            sys.exit(f'timeout: {a1 - a0} of {len(cmds)} applied')
        time.sleep(0.05)
    return round((s1 - s0) * 1000, 1), round((time.time() - t0) * 1000, 1)


def upserts(prefix, kind, limited):
    out = []
    for i in range(N):
        jid = f'{prefix}-{i}'
        cmd = {'id': jid, 'topic': 'bench.maxfires', 'owner': 'bench'}
        if kind == 'cron':
            cmd.update({'cron': f'{i % 60} 9 * * MON-FRI', 'timeZone': 'Europe/Berlin'})
        else:
            cmd['intervalMinutes'] = INTERVALS[i % len(INTERVALS)]
        if limited:
            cmd['maxFires'] = 1000
        if kind == 'labelled':
            cmd['labels'] = {'team': f't{i % 10}', 'carrier': f'c{i % 50}', 'region': 'eu' if i % 2 else 'us'}
        out.append((jid, cmd))
    return out


results = {}
run = int(time.time())
for r in range(ROUNDS):
    for kind in ('interval', 'cron', 'labelled'):
        for limited in ((False, True) if r % 2 == 0 else (True, False)):
            if kind == 'labelled' and limited:
                continue
            name = f'{kind}-{"limited" if limited else "unlimited"}'
            prefix = f'mf{run}-{r}-{name}'
            cmds = upserts(prefix, kind, limited)
            ms, ms_wall = publish(cmds)
            pause, _ = publish([(k, {'op': 'pause', 'id': k}) for k, _ in cmds[:5000]])
            resume, resume_wall = publish([(k, {'op': 'resume', 'id': k}) for k, _ in cmds[:5000]])
            publish([(k, {'op': 'delete', 'id': k}) for k, _ in cmds])
            results.setdefault(name, []).append({'upsert_ms': ms, 'upsert_wall_ms': ms_wall, 'pause_5000_ms': pause,
                                                 'resume_5000_ms': resume, 'resume_5000_wall_ms': resume_wall})
            print(name, results[name][-1], flush=True)

summary = {name: {k: statistics.median(x[k] for x in runs) for k in runs[0]} for name, runs in results.items()}
print(json.dumps({'n': N, 'rounds': ROUNDS, 'runs': results, 'median': summary}, indent=1))
