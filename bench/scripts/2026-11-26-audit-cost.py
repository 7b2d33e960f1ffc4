# What the audit trail costs the command path and a bulk step: one round of commands through Kafka
# into a running node (scheduler and execution consumer off), timed from the node's own metrics.
# Run once per binary per round by bench/scripts/2026-11-26-audit.sh, which alternates the
# binaries. Per step, *apply* is the increase of belfry_command_apply_seconds_sum (the PostgreSQL
# transactions) and *wall* runs from the first publish to the last command applied. The bulk pause's time is its walk, from
# bulk_ops (accepted_at to finished_at), with commands.bulk_step_pause 0 so that it is all work.
# Afterwards, for a binary with the audit trail, how long the change publisher needed to drain
# what was left, and how many changes were recorded.
import json, os, re, sys, time, urllib.request
import psycopg
from confluent_kafka import Producer

admin = os.environ['BELFRY_ADMIN_LISTEN']
topic = os.environ.get('BELFRY_KAFKA_COMMANDS_TOPIC', 'belfry.commands')
db = os.environ['BELFRY_DATABASE_URL']
N = int(os.environ.get('N', '20000'))
prefix = sys.argv[1]
INTERVALS = [1, 5, 15, 60, 1440]


def metrics():
    t = urllib.request.urlopen(f'http://{admin}/metrics').read().decode()
    s = float(re.search(r'^belfry_command_apply_seconds_sum (\S+)', t, re.M).group(1))
    done = 0.0
    for m in re.finditer(r'^belfry_commands_total\{([^}]*)\} (\S+)', t, re.M):
        done += float(m.group(2))
    return s, done


producer = Producer({'bootstrap.servers': os.environ['BELFRY_KAFKA_BROKERS'], 'linger.ms': 20})


def publish(cmds):
    s0, a0 = metrics()
    t0 = time.time()
    for key, value in cmds:
        producer.produce(topic, key=key, value=json.dumps(value), headers=[('belfry-actor', 'bench')])
        producer.poll(0)
    producer.flush()
    while True:
        s1, a1 = metrics()
        if a1 - a0 >= len(cmds):
            break
        if time.time() - t0 > 600:
            sys.exit(f'timeout: {a1 - a0} of {len(cmds)} done')
        time.sleep(0.05)
    return round((s1 - s0) * 1000, 1), round((time.time() - t0) * 1000, 1)


def job(i, interval_shift=0):
    jid = f'{prefix}-{i}'
    return jid, {'id': jid, 'topic': 'bench.audit', 'owner': prefix, 'key': f'k{i}',
                 'intervalMinutes': INTERVALS[(i + interval_shift) % len(INTERVALS)],
                 'labels': {'team': f't{i % 10}'}, 'jobDetails': {'shipmentId': i, 'carrier': 'acme'}}


out = {}
ids = [job(i)[0] for i in range(N)]
out['create_ms'], out['create_wall_ms'] = publish([job(i) for i in range(N)])
out['update_ms'], out['update_wall_ms'] = publish([job(i, 1) for i in range(N)])
out['same_ms'], _ = publish([job(i, 1) for i in range(N)])
out['pause_5000_ms'], _ = publish([(k, {'op': 'pause', 'id': k, 'reason': 'bench'}) for k in ids[:5000]])
out['resume_5000_ms'], _ = publish([(k, {'op': 'resume', 'id': k}) for k in ids[:5000]])

bulk_id = f'{prefix}-bulk'
producer.produce(topic, key=bulk_id, value=json.dumps({'op': 'pause', 'id': bulk_id, 'selector': {'owner': prefix}}))
producer.flush()
with psycopg.connect(db, autocommit=True) as conn:
    while True:
        row = conn.execute('SELECT extract(epoch FROM finished_at - accepted_at) * 1000, steps, changed FROM bulk_ops '
                           'WHERE id = %s AND finished_at IS NOT NULL', (bulk_id,)).fetchone()
        if row:
            out['bulk_pause_ms'], out['bulk_steps'], out['bulk_changed'] = round(float(row[0]), 1), row[1], row[2]
            break
        time.sleep(0.1)
out['delete_ms'], out['delete_wall_ms'] = publish([(k, {'op': 'delete', 'id': k}) for k in ids])

with psycopg.connect(db, autocommit=True) as conn:
    has = conn.execute("SELECT to_regclass('job_changes') IS NOT NULL").fetchone()[0]
    if has:
        t0 = time.time()
        while conn.execute('SELECT count(*) FROM job_changes WHERE NOT published').fetchone()[0] > 0:
            time.sleep(0.1)
        out['drain_after_last_ms'] = round((time.time() - t0) * 1000)
        out['changes'] = conn.execute('SELECT count(*) FROM job_changes WHERE job_id LIKE %s',
                                      (prefix + '-%',)).fetchone()[0]
print(json.dumps(out), flush=True)
