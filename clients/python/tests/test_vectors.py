"""The client against the shared vectors: every command, report and trigger case that a client
can express is built, validated and encoded as belfry reads it."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from belfry_client import (  # noqa: E402
    Backfill, Cron, Delete, Every, ExecutionReport, Once, Rules, Trigger, Upsert, ValidationError, command_from_dict,
    parse_iso_time,
)
from belfry_client.producer import Outcome  # noqa: E402
from belfry_client.rules import normalize_cron, parse_execution_interval  # noqa: E402
import vectors  # noqa: E402

# Ops and forms this client does not build from a JSON object: bulk operations and raw bytes (a
# tombstone has no object; TombstoneVectors builds those).
CLIENT_OPS = {"upsert", "delete", "pause", "resume", "trigger", "backfill"}
# Rules that need belfry's state or the record itself: the client always keys a command by its id,
# and leaves "can this cron expression still fire" to belfry (docs/command-validation.md).
NOT_CLIENT_SIDE = {"key_mismatch", "cron_never_fires"}


def expressible(case):
    v = case.get("value")
    if "valueText" in case or not isinstance(v, dict):
        return False
    if v.get("op") is not None and v.get("op") not in CLIENT_OPS | {"UPSERT"}:
        return False
    return v.get("selector") is None or (v.get("op") or "upsert") == "upsert"


def rules_of(config):
    return Rules(intervals=tuple(config["intervals"]), max_details_bytes=config["maxDetailsBytes"],
                 forbidden_topics=tuple(config["reservedTopics"]))


def ms(text):
    return None if text is None else parse_iso_time(text)


def record_timestamp(doc, case):
    return case.get("timestampMs", doc["defaults"]["timestampMs"])


def validated(doc, rules, case):
    """The case's command, validated as belfry would at the record's timestamp."""
    cmd = command_from_dict(case["value"])
    if isinstance(cmd, Backfill):  # `to` is checked against the record's timestamp
        return cmd.validate(rules, now_ms=record_timestamp(doc, case))
    return cmd.validate(rules)


# The manual-fire cases this client must express (so a regression in expressible() fails).
MANUAL_VALID = {"trigger", "backfill_every_field", "backfill_defaults", "backfill_zone_offsets"}
MANUAL_INVALID = {"backfill_from_after_to", "backfill_to_after_timestamp", "backfill_without_to", "backfill_rate_zero",
                  "backfill_dry_run_string"}


class CommandVectors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.doc = vectors.load("commands.json")
        cls.rules = rules_of(cls.doc["config"])

    def test_valid_commands_are_accepted_and_encode_to_what_belfry_stores(self):
        checked = 0
        names = set()
        for case in self.doc["valid"]:
            if not expressible(case):
                continue
            names.add(case["name"])
            with self.subTest(case["name"]):
                cmd = validated(self.doc, self.rules, case)
                self.assertEqual(cmd.id, case["key"])
                encoded = json.loads(cmd.to_json())
                exp = case["expect"]
                self.assertEqual(encoded["op"], exp["op"])
                self.assertEqual(encoded["id"], exp["id"])
                if "headers" not in case:  # a header note is the producer's (actor=...), not the value's
                    self.assertEqual(encoded.get("reason", ""), exp["reason"])
                    self.assertEqual(encoded.get("actor", ""), exp["actor"])
                # The encoding reads back to the same command.
                self.assertEqual(command_from_dict(encoded), cmd)
                if exp["op"] == "upsert":
                    self.check_job(cmd, encoded, exp["job"])
                if exp["op"] == "backfill":
                    self.check_backfill(encoded, exp["backfill"])
                else:
                    self.assertNotIn("backfill", exp)
                checked += 1
        self.assertGreaterEqual(checked, 10)
        self.assertLessEqual(MANUAL_VALID, names)

    def check_backfill(self, encoded, backfill):
        self.assertEqual(ms(encoded["from"]), ms(backfill["from"]))
        self.assertEqual(ms(encoded["to"]), ms(backfill["to"]))
        self.assertEqual(encoded.get("ratePerMinute", 60), backfill["ratePerMinute"])  # belfry's default
        self.assertEqual(encoded.get("dryRun", False), backfill["dryRun"])

    def check_job(self, cmd, encoded, job):
        s = cmd.schedule
        for field in ("topic", "key", "owner", "maxFires"):
            self.assertEqual(encoded.get(field), job[field], field)
        self.assertEqual(encoded.get("labels", {}), job["labels"])
        self.assertEqual(encoded.get("jobDetails", {}), job["jobDetails"])
        self.assertEqual(encoded.get("priority", 0), job["priority"])
        self.assertEqual(encoded.get("maxRetries", 0), job["maxRetries"])
        rb = {"initialSeconds": 60, "multiplier": 2, **encoded.get("retryBackoff", {})}
        rb.setdefault("maxSeconds", max(3600, rb["initialSeconds"]))  # belfry's default
        self.assertEqual(rb, job["retryBackoff"])
        if isinstance(s, Every):
            minutes = s.interval_minutes or parse_execution_interval(s.execution_interval)
            self.assertEqual(minutes, job["intervalMinutes"])
            if s.offset_minutes is not None:
                self.assertEqual(s.offset_minutes, job["offsetMinutes"])
            self.assertEqual(ms(encoded.get("startDateTime")), ms(job["startDateTime"]))
            self.assertEqual(ms(encoded.get("endDateTime")), ms(job["endDateTime"]))
        elif isinstance(s, Cron):
            self.assertEqual(normalize_cron(encoded["cron"]), job["cron"])
            self.assertEqual(encoded.get("timeZone", "UTC"), job["timeZone"])
        elif isinstance(s, Once):
            self.assertEqual(job["intervalMinutes"], 0)
            self.assertEqual(ms(encoded["runAt"]), ms(job["runAt"]))

    def test_invalid_commands_are_rejected_with_belfrys_reason(self):
        checked = 0
        names = set()
        for case in self.doc["invalid"]:
            if not expressible(case) or case["reason"] in NOT_CLIENT_SIDE or "headers" in case:
                continue
            names.add(case["name"])
            with self.subTest(case["name"]):
                with self.assertRaises(ValidationError) as caught:
                    validated(self.doc, self.rules, case)
                self.assertEqual(caught.exception.reason, case["reason"], str(caught.exception))
                checked += 1
        self.assertGreaterEqual(checked, 30)
        self.assertLessEqual(MANUAL_INVALID, names)

    def test_rules_left_to_belfry_are_documented_gaps(self):
        # If the client learns one of these, move it out of NOT_CLIENT_SIDE.
        for case in self.doc["invalid"]:
            if expressible(case) and case["reason"] == "cron_never_fires":
                command_from_dict(case["value"]).validate(self.rules)


class TombstoneVectors(unittest.TestCase):
    """A record with no value: Delete(key, tombstone=True), its note from the headers."""

    @classmethod
    def setUpClass(cls):
        cls.doc = vectors.load("commands.json")

    @staticmethod
    def tombstone(case):
        headers = case.get("headers", {})
        return Delete(case["key"], headers.get("belfry-reason"), headers.get("belfry-actor"), tombstone=True)

    def test_valid_tombstones_are_the_record_belfry_reads_as_a_delete(self):
        checked = 0
        for case in self.doc["valid"]:
            if "valueText" in case or case["value"] is not None:
                continue
            with self.subTest(case["name"]):
                key, value, headers = self.tombstone(case).validate().record(actor="producer-default")
                self.assertEqual(key, case["key"].encode("utf-8"))
                self.assertIsNone(value)
                self.assertEqual({k: v.decode("utf-8") for k, v in headers or []}, case.get("headers", {}))
                exp = case["expect"]
                self.assertEqual(exp["op"], "delete")
                self.assertEqual(exp["id"], case["key"])
                self.assertEqual(dict(headers or []).get("belfry-reason", b"").decode(), exp["reason"])
                self.assertEqual(dict(headers or []).get("belfry-actor", b"").decode(), exp["actor"])
                checked += 1
        self.assertGreaterEqual(checked, 1)

    def test_invalid_tombstones_are_rejected_with_belfrys_reason(self):
        checked = 0
        for case in self.doc["invalid"]:
            if "valueText" in case or case["value"] is not None:
                continue
            with self.subTest(case["name"]):
                with self.assertRaises(ValidationError) as caught:
                    self.tombstone(case).validate()
                self.assertEqual(caught.exception.reason, case["reason"], str(caught.exception))
                checked += 1
        self.assertGreaterEqual(checked, 1)


class OutcomeVectors(unittest.TestCase):
    def test_outcomes_parse_with_their_counts(self):
        doc = vectors.load("command-outcomes.json")
        ops = set()
        for case in doc["cases"]:
            exp = case["outcome"]
            with self.subTest(case["name"]):
                o = Outcome.parse(case["value"].encode("utf-8"))
                self.assertEqual((o.id, o.op, o.status, o.error, o.partition, o.offset),
                                 (exp["id"], exp["op"], exp["status"], exp["error"], exp["partition"], exp["offset"]))
                self.assertEqual(o.applied, exp["status"] == "applied")
                self.assertEqual(o.slots, exp.get("slots"))
                self.assertEqual(o.covered, exp.get("covered"))
                self.assertEqual(o.dry_run, exp.get("dryRun"))
                if o.op in ("trigger", "backfill") and o.applied:
                    self.assertIsInstance(o.slots, int)
                    ops.add(o.op)
        self.assertEqual(ops, {"trigger", "backfill"})


class ReportVectors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.doc = vectors.load("execution-reports.json")

    def test_valid_reports_encode_to_what_belfry_stores(self):
        for case in self.doc["valid"]:
            with self.subTest(case["name"]):
                r = ExecutionReport.from_dict(case["value"]).validate()
                sent = json.loads(r.to_json())
                exp = case["expect"]
                sf = sent["scheduledFor"]
                self.assertEqual(sf if isinstance(sf, int) else parse_iso_time(sf), exp["scheduledForMs"])
                self.assertEqual(sent["jobId"], exp["jobId"])
                self.assertEqual(sent["status"], exp["status"])
                self.assertEqual(ms(sent.get("startedAt")), exp["startedAtMs"])
                self.assertEqual(ms(sent.get("finishedAt")), exp["finishedAtMs"])
                self.assertEqual(sent.get("worker", ""), exp["worker"])
                self.assertEqual(sent["attempt"], exp["attempt"])
                # belfry truncates the error to maxErrorBytes and drops NUL; the client sends it whole.
                self.assertTrue(sent.get("error", "").replace("\0", "").startswith(exp["error"]))

    def test_invalid_reports_are_rejected_with_belfrys_reason(self):
        checked = 0
        for case in self.doc["invalid"]:
            if "valueText" in case or case["value"] is None or case["reason"] in NOT_CLIENT_SIDE:
                continue
            with self.subTest(case["name"]):
                with self.assertRaises(ValidationError) as caught:
                    ExecutionReport.from_dict(case["value"]).validate()
                self.assertEqual(caught.exception.reason, case["reason"], str(caught.exception))
                checked += 1
        self.assertGreaterEqual(checked, 12)


class TriggerVectors(unittest.TestCase):
    def test_triggers_parse_to_their_job_slot_and_dedupe_key(self):
        doc = vectors.load("triggers.json")
        checked = 0
        for case in doc["cases"]:
            exp = case["expect"]
            with self.subTest(case["name"]):
                t = Trigger.parse(exp["value"].encode("utf-8"), exp["key"].encode("utf-8"), exp["topic"])
                job = case["job"]
                self.assertEqual(t.job_id, job["id"])
                self.assertEqual(t.scheduled_for_ms, exp["scheduledForMs"])
                self.assertEqual(str(t.scheduled_for_ms), exp["headers"]["belfry-scheduled-for"])
                self.assertEqual(t.interval_minutes, job["intervalMinutes"])
                self.assertEqual(t.attempt, case["attempt"])
                self.assertEqual(t.manual or "", case["manual"])
                self.assertEqual(t.job_details, job["jobDetails"])
                self.assertEqual(t.key, exp["key"])
                self.assertEqual(t.dedupe_key, (job["id"], exp["scheduledForMs"], case["attempt"]))
                # The report for it names the same slot.
                report = json.loads(ExecutionReport.for_trigger(t, "succeeded").validate().to_json())
                self.assertEqual(parse_iso_time(report["scheduledFor"]), exp["scheduledForMs"])
                self.assertEqual(report["attempt"], case["attempt"])
                checked += 1
        self.assertGreaterEqual(checked, 5)


if __name__ == "__main__":
    unittest.main()
