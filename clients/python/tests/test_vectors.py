"""The client against the shared vectors: every command, report and trigger case that a client
can express is built, validated and encoded as belfry reads it."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from belfry_client import Cron, Every, ExecutionReport, Once, Rules, Trigger, Upsert, ValidationError, command_from_dict, parse_iso_time  # noqa: E402
from belfry_client.rules import normalize_cron, parse_execution_interval  # noqa: E402
import vectors  # noqa: E402

# Ops and forms this client does not build (bulk operations, manual fires, tombstones, raw bytes).
CLIENT_OPS = {"upsert", "delete", "pause", "resume"}
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


class CommandVectors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.doc = vectors.load("commands.json")
        cls.rules = rules_of(cls.doc["config"])

    def test_valid_commands_are_accepted_and_encode_to_what_belfry_stores(self):
        checked = 0
        for case in self.doc["valid"]:
            if not expressible(case):
                continue
            with self.subTest(case["name"]):
                cmd = command_from_dict(case["value"]).validate(self.rules)
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
                checked += 1
        self.assertGreaterEqual(checked, 10)

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
        for case in self.doc["invalid"]:
            if not expressible(case) or case["reason"] in NOT_CLIENT_SIDE or "headers" in case:
                continue
            with self.subTest(case["name"]):
                with self.assertRaises(ValidationError) as caught:
                    command_from_dict(case["value"]).validate(self.rules)
                self.assertEqual(caught.exception.reason, case["reason"], str(caught.exception))
                checked += 1
        self.assertGreaterEqual(checked, 30)

    def test_rules_left_to_belfry_are_documented_gaps(self):
        # If the client learns one of these, move it out of NOT_CLIENT_SIDE.
        for case in self.doc["invalid"]:
            if expressible(case) and case["reason"] == "cron_never_fires":
                command_from_dict(case["value"]).validate(self.rules)


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
