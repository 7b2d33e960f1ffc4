"""Hermetic tests of belfry_client: exact encodings, the client-side rules, dedupe, and the
trigger consumer's order of work (handler, reports, then commit) with fake Kafka clients."""

import json
import os
import sys
import unittest
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from belfry_client import (  # noqa: E402
    Backfill, Cron, Deduper, Delete, Every, ExecutionReport, Once, Pause, Resume, RetryBackoff, Trigger, TriggerJob,
    Upsert, ValidationError,
)
from belfry_client.consumer import TriggerConsumer  # noqa: E402


def reason(cmd):
    try:
        cmd.validate()
    except ValidationError as e:
        return e.reason
    return None


class Encoding(unittest.TestCase):
    def test_readme_interval_job(self):
        cmd = Upsert("shipment-42-poll", Every("EVERY_15_MINUTES", start="2026-11-22T13:00:00Z"), topic="tracking.poll",
                     key="shipment-42", owner="tracking-svc", job_details={"shipmentId": 42})
        self.assertEqual(cmd.validate().to_json(),
                         b'{"op":"upsert","id":"shipment-42-poll","executionInterval":"EVERY_15_MINUTES",'
                         b'"startDateTime":"2026-11-22T13:00:00Z","topic":"tracking.poll","key":"shipment-42",'
                         b'"owner":"tracking-svc","jobDetails":{"shipmentId":42}}')

    def test_cron_one_shot_and_id_only_ops(self):
        self.assertEqual(Upsert("report-berlin", Cron("0 9 * * MON-FRI", "Europe/Berlin"), topic="reports.daily").to_json(),
                         b'{"op":"upsert","id":"report-berlin","cron":"0 9 * * MON-FRI","timeZone":"Europe/Berlin",'
                         b'"topic":"reports.daily"}')
        run_at = datetime(2026, 11, 22, 19, 0, 0, 250000, tzinfo=timezone(timedelta(hours=1)))
        self.assertEqual(json.loads(Upsert("invoice-77-remind", Once(run_at), topic="billing.remind").validate().to_json())["runAt"],
                         "2026-11-22T18:00:00.250Z")
        self.assertEqual(Pause("j", reason="carrier API outage", actor="oncall-ana").to_json(),
                         b'{"op":"pause","id":"j","reason":"carrier API outage","actor":"oncall-ana"}')
        self.assertEqual(Resume("j").to_json(), b'{"op":"resume","id":"j"}')
        self.assertEqual(Delete("j").to_json(), b'{"op":"delete","id":"j"}')

    def test_every_field(self):
        cmd = Upsert("j", Every(interval_minutes=60, offset_minutes=5, start="2026-01-01T00:00:00Z", end="2027-01-01T00:00:00Z"),
                     topic="t", key="k", owner="o", labels={"team": "x"}, job_details={"a": [1]}, priority=-3,
                     max_retries=2, retry_backoff=RetryBackoff(10, 1.5, 100), max_fires=7, reason="r", actor="a")
        self.assertEqual(json.loads(cmd.validate().to_json()), {
            "op": "upsert", "id": "j", "intervalMinutes": 60, "offsetMinutes": 5, "startDateTime": "2026-01-01T00:00:00Z",
            "endDateTime": "2027-01-01T00:00:00Z", "topic": "t", "key": "k", "owner": "o", "labels": {"team": "x"},
            "jobDetails": {"a": [1]}, "priority": -3, "maxRetries": 2,
            "retryBackoff": {"initialSeconds": 10, "multiplier": 1.5, "maxSeconds": 100}, "maxFires": 7,
            "reason": "r", "actor": "a"})

    def test_manual_fires_and_tombstones(self):
        self.assertEqual(TriggerJob("j", reason="customer asked").validate().to_json(),
                         b'{"op":"trigger","id":"j","reason":"customer asked"}')
        self.assertEqual(Backfill("j", "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z").validate().to_json(),
                         b'{"op":"backfill","id":"j","from":"2026-11-20T00:00:00Z","to":"2026-11-21T00:00:00Z"}')
        utc1 = timezone(timedelta(hours=1))
        b = Backfill("j", datetime(2026, 11, 20, 1, 0, tzinfo=utc1), datetime(2026, 11, 21, tzinfo=timezone.utc),
                     rate_per_minute=120, dry_run=False, actor="oncall-ana")
        self.assertEqual(b.validate().to_json(),
                         b'{"op":"backfill","id":"j","from":"2026-11-20T00:00:00.000Z","to":"2026-11-21T00:00:00.000Z",'
                         b'"ratePerMinute":120,"dryRun":false,"actor":"oncall-ana"}')
        # A tombstone: key = id, no value, the note (or the producer's actor) as headers.
        self.assertEqual(Delete("j", reason="customer left", actor="ana", tombstone=True).validate().record("svc"),
                         (b"j", None, [("belfry-reason", b"customer left"), ("belfry-actor", b"ana")]))
        self.assertEqual(Delete("j", tombstone=True).record("svc"), (b"j", None, [("belfry-actor", b"svc")]))
        self.assertEqual(Delete("j", tombstone=True).record(), (b"j", None, None))
        self.assertEqual(Delete("j").record("svc"), (b"j", b'{"op":"delete","id":"j"}', [("belfry-actor", b"svc")]))

    def test_report(self):
        t = Trigger.parse(b'{"jobId":"j","scheduledFor":"2026-11-22T13:37:32.500Z","intervalMinutes":15,"attempt":2,'
                          b'"jobDetails":{"x":1}}')
        r = ExecutionReport.for_trigger(t, "failed", error="HTTP 503", started_at_ms=1795354653010,
                                        finished_at_ms=1795354654200, worker="poller-7")
        self.assertEqual(r.validate().to_json(),
                         b'{"jobId":"j","scheduledFor":"2026-11-22T13:37:32.500Z","status":"failed","error":"HTTP 503",'
                         b'"startedAt":"2026-11-22T13:37:33.010Z","finishedAt":"2026-11-22T13:37:34.200Z",'
                         b'"worker":"poller-7","attempt":2}')


class Validation(unittest.TestCase):
    def test_ids(self):
        self.assertEqual(reason(Pause("")), "missing_id")
        self.assertEqual(reason(Pause("x" * 256)), "invalid_id")
        self.assertEqual(reason(Pause("é" * 127)), None)  # 254 bytes
        self.assertEqual(reason(Pause("é" * 128)), "invalid_id")  # 256 bytes
        self.assertEqual(reason(Pause("a\x7fb")), "invalid_id")
        self.assertEqual(reason(Pause("a#backfill#b")), "invalid_id")

    def test_topics_and_intervals(self):
        ok = dict(schedule=Every("EVERY_MINUTE"))
        self.assertEqual(reason(Upsert("j", topic="a" * 249, **ok)), None)
        self.assertEqual(reason(Upsert("j", topic="a" * 250, **ok)), "invalid_topic")
        self.assertEqual(reason(Upsert("j", topic="..", **ok)), "invalid_topic")
        self.assertEqual(reason(Upsert("j", topic="__x", **ok)), "forbidden_topic")
        self.assertEqual(reason(Upsert("j", Every("EVERY_2_HOURS"), topic="t")), None)
        self.assertEqual(reason(Upsert("j", Every("EVERY_7_MINUTES"), topic="t")), "unsupported_interval")
        self.assertEqual(reason(Upsert("j", Every("EVERY_0_MINUTES"), topic="t")), "unsupported_interval")
        self.assertEqual(reason(Upsert("j", Every("EVERY_HOUR", 30), topic="t")), "conflicting_interval")
        self.assertEqual(reason(Upsert("j", Every(interval_minutes=5, offset_minutes=5), topic="t")), "offset_out_of_range")
        self.assertEqual(reason(Upsert("j", Every(), topic="t")), "missing_field")

    def test_cron_and_zones(self):
        def cron(expr, zone=None):
            return reason(Upsert("j", Cron(expr, zone), topic="t"))
        for good in ("0 9 * * MON-FRI", "*/60 * * * *", "0 0 1 jan *", "@hourly", "5/15 1-5/2 * * 1/3", "0 0 * * 7", "0\t0 * * *"):
            self.assertIsNone(cron(good), good)
        for bad in ("0 9 * *", "60 * * * *", "*/61 * * * *", "0 0 * * 8", "5-1 * * * *", "@reboot", "@daily x",
                    "0 0 0 * *", "0 0 * FOO *", "0,,1 * * * *", "* * * * * *", "*/0 * * * *", "0 0 * * */8", "0 9 * * MON\n"):
            self.assertEqual(cron(bad), "invalid_cron", bad)
        self.assertIsNone(cron("0 9 * * *", "America/New_York"))
        self.assertEqual(cron("0 9 * * *", "Mars/Base"), "invalid_time_zone")
        self.assertEqual(cron("0 9 * * *", ""), "invalid_time_zone")

    def test_dates(self):
        def at(text):
            return reason(Upsert("j", Once(text), topic="t"))
        for good in ("2026-11-22T18:00:00Z", "2026-11-22 18:00:00", "2026-11-22T18:00:00.123456789+05:30", "2028-02-29T00:00:00Z"):
            self.assertIsNone(at(good), good)
        for bad in ("2026-11-22", "2026-02-29T00:00:00Z", "1969-12-31T23:59:59Z", "1970-01-01T00:30:00+01:00",
                    "9999-12-31T23:30:00-01:00", "2026-11-22T24:00:00Z", "2026-11-22T18:00:00+24:00", "2026-11-22T18:00:00.Z"):
            self.assertEqual(at(bad), "invalid_date", bad)
        self.assertEqual(reason(Upsert("j", Once(datetime(2026, 1, 1)), topic="t")), "invalid_date")  # naive
        self.assertEqual(reason(Upsert("j", Every("EVERY_HOUR", start="2026-01-02T00:00:00Z", end="2026-01-01T00:00:00Z"),
                                       topic="t")), "end_before_start")

    def test_other_fields(self):
        def up(**kw):
            return reason(Upsert("j", Every("EVERY_HOUR"), topic="t", **kw))
        self.assertEqual(up(key="k" * 1025), "invalid_key")
        self.assertEqual(up(owner="o\n"), "invalid_owner")
        self.assertEqual(up(priority=1_000_001), "invalid_priority")
        self.assertEqual(up(max_retries=-1), "invalid_retries")
        self.assertEqual(up(retry_backoff=RetryBackoff(multiplier=11)), "invalid_retry_backoff")
        self.assertEqual(up(retry_backoff=RetryBackoff(max_seconds=30)), "invalid_retry_backoff")  # below the default 60
        self.assertEqual(up(labels={"a/b": "x", "-c": "y"}), "invalid_labels")
        self.assertEqual(up(labels={str(i): "x" for i in range(17)}), "invalid_labels")
        self.assertEqual(up(job_details={"big": "x" * 65536}), "details_too_large")
        self.assertEqual(up(job_details={"k\0": 1}), "invalid_details")
        self.assertEqual(up(max_fires=0), "invalid_max_fires")
        self.assertEqual(up(reason="r" * 1025), "invalid_reason")
        self.assertEqual(up(actor="a\tb"), "invalid_actor")
        self.assertEqual(reason(Upsert("j", Once("2026-11-22T18:00:00Z"), topic="t", max_fires=2)), "invalid_max_fires")


    def test_backfill(self):
        now = 1795766400000  # 2026-11-27T08:00:00Z

        def bf(frm="2026-11-20T00:00:00Z", to="2026-11-21T00:00:00Z", **kw):
            try:
                Backfill("j", frm, to, **kw).validate(now_ms=now)
            except ValidationError as e:
                return e.reason
            return None

        self.assertIsNone(bf(to="2026-11-27T08:00:00Z"))  # to may equal the record's timestamp
        self.assertEqual(bf(to="2026-11-27T08:00:00.001Z"), "invalid_backfill")
        self.assertEqual(bf(frm="2026-11-21T00:00:00Z"), "invalid_backfill")  # from == to
        self.assertIsNone(bf(frm="2025-11-26T08:00:00Z", to="2026-11-27T08:00:00Z"))  # 366 days
        self.assertEqual(bf(frm="2025-11-26T07:59:59.999Z", to="2026-11-27T08:00:00Z"), "invalid_backfill")
        self.assertEqual(bf(frm=None), "missing_field")
        self.assertEqual(bf(to="2026-11-21"), "invalid_date")
        self.assertEqual(bf(frm=datetime(2026, 11, 20)), "invalid_date")  # naive
        self.assertEqual(bf(frm=1795766400000), "wrong_type")
        self.assertIsNone(bf(rate_per_minute=1))
        self.assertIsNone(bf(rate_per_minute=10_000))
        for bad in (0, 10_001, 1.5, 60.0):
            self.assertEqual(bf(rate_per_minute=bad), "invalid_rate", bad)
        for bad in (True, "60"):
            self.assertEqual(bf(rate_per_minute=bad), "wrong_type", bad)
        self.assertEqual(bf(dry_run="yes"), "wrong_type")
        self.assertEqual(reason(Backfill("a#trigger#1", "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z")), "invalid_id")
        self.assertEqual(reason(Backfill("j", "2099-01-01T00:00:00Z", "2099-01-02T00:00:00Z")), "invalid_backfill")  # this host's clock
        self.assertEqual(reason(TriggerJob("")), "missing_id")
        self.assertEqual(reason(Delete("j", reason="a\nb", tombstone=True)), "invalid_reason")  # a header too
        self.assertEqual(reason(Delete(None, tombstone=True)), "missing_id")


class Dedupe(unittest.TestCase):
    def test_window_and_capacity(self):
        now = [0.0]
        d = Deduper(window_s=10, max_keys=2, clock=lambda: now[0])
        d.remember("a")
        now[0] = 9.9
        self.assertTrue(d.seen("a"))
        now[0] = 10.0
        self.assertFalse(d.seen("a"))
        d.remember("b")
        d.remember("c")
        d.remember("d")  # over capacity: b goes
        self.assertFalse(d.seen("b"))
        self.assertTrue(d.seen("c") and d.seen("d"))

    def test_a_retry_is_not_a_repeat(self):
        base = b'{"jobId":"j","scheduledFor":"2026-11-22T13:37:32.500Z","intervalMinutes":15,%s"jobDetails":{}}'
        first, repeat, retry = (Trigger.parse(base % x) for x in (b"", b"", b'"attempt":1,'))
        self.assertEqual(first.dedupe_key, repeat.dedupe_key)
        self.assertNotEqual(first.dedupe_key, retry.dedupe_key)


class FakeMessage:
    def __init__(self, value, offset, key=b"j", topic="jobs", partition=0):
        self._v, self._o, self._k, self._t, self._p = value, offset, key, topic, partition

    def value(self): return self._v
    def key(self): return self._k
    def topic(self): return self._t
    def partition(self): return self._p
    def offset(self): return self._o
    def error(self): return None


class FakeConsumer:
    def __init__(self, messages, log):
        self.messages, self.log = list(messages), log

    def subscribe(self, topics): self.log.append(("subscribe", tuple(topics)))
    def poll(self, timeout): return self.messages.pop(0) if self.messages else None
    def commit(self, message, asynchronous): self.log.append(("commit", message.offset()))
    def close(self): pass


class FakeProducer:
    def __init__(self, log):
        self.log, self.unflushed = log, 0

    def produce(self, topic, key, value):
        self.unflushed += 1
        self.log.append(("produce", topic, key, json.loads(value)))

    def poll(self, timeout): return 0

    def flush(self, timeout):
        self.log.append(("flush", self.unflushed))
        self.unflushed = 0
        return 0


TRIGGER = b'{"jobId":"j","scheduledFor":"2026-11-22T13:37:32.500Z","intervalMinutes":15,"jobDetails":{"n":%d}}'


class Consumer(unittest.TestCase):
    def consumer(self, messages, log):
        return TriggerConsumer("unused:9092", "g", ["jobs"], executions_topic="execs", worker="w-1",
                               _clients=(FakeConsumer(messages, log), FakeProducer(log)))

    def test_reports_then_commits_and_skips_repeats(self):
        log, seen = [], []
        c = self.consumer([FakeMessage(TRIGGER % 1, 10), FakeMessage(TRIGGER % 1, 11)], log)

        def handler(t):
            log.append(("handler", t.job_details["n"]))
            seen.append(t)

        self.assertIsNotNone(c.poll(handler))
        self.assertIsNone(c.poll(handler))  # the repeat: committed, not handled, not reported
        kinds = [e[0] if e[0] != "produce" else e[3]["status"] for e in log[1:]]
        self.assertEqual(kinds, ["running", "handler", "succeeded", "flush", "commit", "commit"])
        done = log[3][3]
        self.assertEqual(done["jobId"], "j")
        self.assertEqual(done["scheduledFor"], "2026-11-22T13:37:32.500Z")
        self.assertEqual(done["worker"], "w-1")
        self.assertEqual(done["attempt"], 0)
        self.assertLessEqual(done["startedAt"], done["finishedAt"])
        self.assertEqual(log[3][1:3], ("execs", b"j"))
        self.assertEqual([e[1] for e in log if e[0] == "commit"], [10, 11])
        self.assertEqual(len(seen), 1)

    def test_a_failing_handler_is_reported_failed_and_still_committed(self):
        log = []
        c = self.consumer([FakeMessage(TRIGGER % 2, 5)], log)

        def handler(t):
            raise RuntimeError("carrier said 503")

        c.poll(handler)
        reports = [e[3] for e in log if e[0] == "produce"]
        self.assertEqual([r["status"] for r in reports], ["running", "failed"])
        self.assertEqual(reports[1]["error"], "carrier said 503")
        self.assertEqual(log[-1], ("commit", 5))

    def test_a_commit_refused_after_a_rebalance_is_not_the_triggers_failure(self):
        from confluent_kafka import KafkaError, KafkaException

        log = []
        c = self.consumer([FakeMessage(TRIGGER % 4, 8)], log)

        def refuse(message, asynchronous):
            raise KafkaException(KafkaError(KafkaError.REBALANCE_IN_PROGRESS))

        c._consumer.commit = refuse
        self.assertIsNotNone(c.poll(lambda t: None))
        self.assertEqual([e[3]["status"] for e in log if e[0] == "produce"], ["running", "succeeded"])

    def test_a_value_that_is_not_a_trigger_is_committed_unhandled(self):
        log = []
        c = self.consumer([FakeMessage(b"not json", 3)], log)
        self.assertIsNone(c.poll(lambda t: self.fail("handled")))
        self.assertEqual(log[-1], ("commit", 3))
        self.assertFalse([e for e in log if e[0] == "produce"])


class FakeCommandProducer:
    """Acknowledges each command at the next offset of partition 2."""

    def __init__(self):
        self.sent, self.next_offset = [], 40

    def produce(self, topic, key, value, headers, on_delivery):
        self.sent.append((topic, key, None if value is None else json.loads(value), headers))
        msg = FakeMessage(value, self.next_offset, key, topic, 2)
        self.next_offset += 1
        self.pending = lambda: on_delivery(None, msg)

    def poll(self, timeout):
        if getattr(self, "pending", None):
            self.pending, deliver = None, self.pending
            deliver()
        return 0

    def flush(self, timeout):
        return 0


class FakeResults:
    def __init__(self, outcomes):
        self.messages = [FakeMessage(json.dumps(o).encode(), i, o["id"].encode(), "results", 0) for i, o in enumerate(outcomes)]

    def poll(self, timeout):
        return self.messages.pop(0) if self.messages else None

    def close(self):
        pass


class Producer(unittest.TestCase):
    def test_the_outcome_is_the_one_for_this_commands_partition_and_offset(self):
        from belfry_client import BelfryProducer, OutcomeTimeout

        def outcome(job_id, offset, status="applied", error=None):
            return {"id": job_id, "op": "pause", "status": status, "error": error, "partition": 2, "offset": offset}

        results = FakeResults([
            outcome("j", 39, "rejected", "invalid_reason: an earlier command"),  # same job, earlier command
            outcome("other", 40),  # same position, another id (cannot happen; still not ours)
            outcome("j", 40),
        ])
        p = BelfryProducer("unused:9092", commands_topic="cmds", actor="svc@host",
                           _clients=(FakeCommandProducer(), results))
        got = p.pause("j", reason="maintenance", wait=True, timeout=5)
        self.assertEqual((got.id, got.status, got.partition, got.offset, got.error), ("j", "applied", 2, 40, None))
        topic, key, value, headers = p._producer.sent[0]
        self.assertEqual((topic, key, value, headers),
                         ("cmds", b"j", {"op": "pause", "id": "j", "reason": "maintenance"}, [("belfry-actor", b"svc@host")]))
        with self.assertRaises(OutcomeTimeout):  # nothing for the next command (offset 41)
            p.resume("j", wait=True, timeout=0.3)
        with self.assertRaises(ValidationError):  # refused before anything is sent
            p.pause("bad#retry#id")
        self.assertEqual(len(p._producer.sent), 2)

    def test_manual_fires_and_a_tombstone_are_awaited_with_their_counts(self):
        from belfry_client import BelfryProducer

        results = FakeResults([
            {"id": "j", "op": "trigger", "status": "applied", "error": None, "slots": 1, "partition": 2, "offset": 40},
            {"id": "j", "op": "backfill", "status": "applied", "error": None, "slots": 96, "covered": 48, "dryRun": True,
             "partition": 2, "offset": 41},
            {"id": "j", "op": "delete", "status": "applied", "error": None, "partition": 2, "offset": 42},
            {"id": "gone", "op": "trigger", "status": "rejected", "error": 'not_found: job "gone" does not exist',
             "partition": 2, "offset": 43},
        ])
        p = BelfryProducer("unused:9092", commands_topic="cmds", actor="svc@host", _clients=(FakeCommandProducer(), results))
        t = p.trigger("j", wait=True, timeout=5)
        self.assertEqual((t.op, t.applied, t.slots, t.covered, t.dry_run), ("trigger", True, 1, None, None))
        b = p.backfill("j", "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z", rate_per_minute=120, dry_run=True,
                       reason="outage replay", wait=True, timeout=5)
        self.assertEqual((b.op, b.slots, b.covered, b.dry_run, b.offset), ("backfill", 96, 48, True, 41))
        d = p.delete("j", tombstone=True, reason="customer left", wait=True, timeout=5)
        self.assertEqual((d.op, d.applied, d.offset), ("delete", True, 42))
        g = p.trigger("gone", wait=True, timeout=5)
        self.assertEqual((g.status, g.reason, g.slots), ("rejected", "not_found", None))
        self.assertEqual(p._producer.sent[:3], [
            ("cmds", b"j", {"op": "trigger", "id": "j"}, [("belfry-actor", b"svc@host")]),
            ("cmds", b"j", {"op": "backfill", "id": "j", "from": "2026-11-20T00:00:00Z", "to": "2026-11-21T00:00:00Z",
                            "ratePerMinute": 120, "dryRun": True, "reason": "outage replay"}, [("belfry-actor", b"svc@host")]),
            ("cmds", b"j", None, [("belfry-reason", b"customer left"), ("belfry-actor", b"svc@host")]),
        ])
        with self.assertRaises(ValidationError):  # a backfill of the future is refused before sending
            p.backfill("j", "2099-01-01T00:00:00Z", "2099-01-02T00:00:00Z")
        self.assertEqual(len(p._producer.sent), 4)


if __name__ == "__main__":
    unittest.main()
