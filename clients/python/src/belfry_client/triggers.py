"""Triggers (what belfry sends to a job's topic) and execution reports (what a consumer sends
back to ``belfry.executions``), by README.md's "Trigger format" and "Execution outcome format"."""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from . import rules as R
from .rules import ValidationError

STATUSES = ("running", "succeeded", "failed")


@dataclass(frozen=True)
class Trigger:
    """One trigger: job ``job_id``'s slot ``scheduled_for``. A retry has ``attempt`` >= 1; a
    trigger asked for by a ``trigger`` or ``backfill`` command has ``manual``."""

    job_id: str
    scheduled_for: str  # as belfry wrote it: 2026-11-22T13:37:32.500Z
    scheduled_for_ms: int
    interval_minutes: int
    job_details: Dict[str, Any]
    attempt: int = 0
    manual: Optional[str] = None
    key: Optional[str] = None
    topic: Optional[str] = None
    partition: Optional[int] = None
    offset: Optional[int] = None

    @property
    def dedupe_key(self) -> Tuple[str, int, int]:
        """(jobId, scheduledFor in epoch ms, attempt): a repeat of a delivery (belfry re-firing a
        shard-minute after a crash) carries the same key; a retry (attempt n) is a new delivery."""
        return (self.job_id, self.scheduled_for_ms, self.attempt)

    @staticmethod
    def parse(value: Union[bytes, str], key: Optional[bytes] = None, topic: Optional[str] = None,
              partition: Optional[int] = None, offset: Optional[int] = None) -> "Trigger":
        """Parses a trigger's value (ValidationError if it is not one)."""
        try:
            d = json.loads(value)
        except (ValueError, TypeError) as e:
            raise ValidationError("invalid_json", f"trigger value is not JSON: {e}") from None
        if not isinstance(d, dict):
            raise ValidationError("not_object", "trigger value is not an object")
        job_id, sf = d.get("jobId"), d.get("scheduledFor")
        if not isinstance(job_id, str) or not job_id:
            raise ValidationError("missing_field", "trigger has no jobId")
        ms = R.parse_iso_time(sf) if isinstance(sf, str) else None
        if ms is None:
            raise ValidationError("invalid_date", f"trigger scheduledFor {sf!r} is not a time")
        interval = d.get("intervalMinutes", 0)
        attempt = d.get("attempt", 0)
        details = d.get("jobDetails", {})
        if not isinstance(interval, int) or not isinstance(attempt, int) or not isinstance(details, dict):
            raise ValidationError("wrong_type", "trigger intervalMinutes/attempt/jobDetails have the wrong type")
        return Trigger(job_id, sf, ms, interval, details, attempt, d.get("manual"),
                       key.decode("utf-8", "replace") if isinstance(key, bytes) else key, topic, partition, offset)


@dataclass
class ExecutionReport:
    """One outcome report. Times are epoch milliseconds (sent as ISO-8601 text)."""

    job_id: str
    scheduled_for: Union[str, int]  # the trigger's text, or epoch ms
    status: str
    attempt: int = 0
    error: Optional[str] = None
    started_at_ms: Optional[int] = None
    finished_at_ms: Optional[int] = None
    worker: Optional[str] = None

    @staticmethod
    def for_trigger(t: Trigger, status: str, **kw) -> "ExecutionReport":
        return ExecutionReport(t.job_id, t.scheduled_for, status, attempt=t.attempt, **kw)

    def validate(self) -> "ExecutionReport":
        """belfry's report rules (docs/executions.md, "Validation"), in its order."""
        for name, v, types in (("jobId", self.job_id, str), ("scheduledFor", self.scheduled_for, (str, int)),
                               ("status", self.status, str), ("error", self.error, str), ("worker", self.worker, str),
                               ("startedAt", self.started_at_ms, int), ("finishedAt", self.finished_at_ms, int)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, types)):
                raise ValidationError("wrong_type", f"{name} has the wrong type {type(v).__name__}")
        if not self.job_id:
            raise ValidationError("missing_field", "report has no jobId")
        if R._utf8_len(self.job_id) > R.MAX_ID_BYTES or R._control_char_at(self.job_id) is not None:
            raise ValidationError("invalid_id", "jobId is over 255 bytes or has a control character")
        if isinstance(self.scheduled_for, bool) or (
            isinstance(self.scheduled_for, int) and not 0 <= self.scheduled_for <= R.LAST_INSTANT_MS
        ) or (isinstance(self.scheduled_for, str) and R.parse_iso_time(self.scheduled_for) is None):
            raise ValidationError("invalid_date", f"scheduledFor {self.scheduled_for!r} is not a valid time")
        if self.scheduled_for is None:
            raise ValidationError("missing_field", "report has no scheduledFor")
        if self.status is None:
            raise ValidationError("missing_field", "report has no status")
        if self.status not in STATUSES:
            raise ValidationError("invalid_status", f"status {self.status!r} is not one of succeeded, failed, running")
        for t in (self.started_at_ms, self.finished_at_ms):
            if t is not None and not 0 <= t <= R.LAST_INSTANT_MS:
                raise ValidationError("invalid_date", f"time {t} is outside years 1970-9999")
        if self.worker is not None and (R._utf8_len(self.worker) > R.MAX_WORKER_BYTES or R._control_char_at(self.worker) is not None):
            raise ValidationError("invalid_worker", "worker is over 255 bytes or has a control character")
        if isinstance(self.attempt, bool) or not isinstance(self.attempt, int) or not 0 <= self.attempt <= R.MAX_ATTEMPT:
            raise ValidationError("invalid_attempt", f"attempt {self.attempt!r} is outside 0..{R.MAX_ATTEMPT}")
        return self

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"jobId": self.job_id, "scheduledFor": self.scheduled_for, "status": self.status}
        if self.error is not None:
            d["error"] = self.error
        if self.started_at_ms is not None:
            d["startedAt"] = R.format_iso_time(self.started_at_ms)
        if self.finished_at_ms is not None:
            d["finishedAt"] = R.format_iso_time(self.finished_at_ms)
        if self.worker is not None:
            d["worker"] = self.worker
        d["attempt"] = self.attempt
        return d

    def to_json(self) -> bytes:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "ExecutionReport":
        """The report for a JSON report object (null members are absent); raises belfry's reason
        for what the typed report cannot hold. Call validate() for the rest."""
        if not isinstance(d, Mapping):
            raise ValidationError("not_object", "a report is a JSON object")
        d = {k: v for k, v in d.items() if v is not None}

        def ms(v):
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise ValidationError("wrong_type", f"a time must be ISO-8601 text or epoch ms, not {v!r}")
            if isinstance(v, int):
                if not 0 <= v <= R.LAST_INSTANT_MS:
                    raise ValidationError("invalid_date", f"{v} is outside years 1970-9999")
                return v
            parsed = R.parse_iso_time(v)
            if parsed is None:
                raise ValidationError("invalid_date", f"{v!r} is not a valid time")
            return parsed

        known = {"jobId", "scheduledFor", "status", "error", "startedAt", "finishedAt", "worker", "attempt"}
        if set(d) - known:
            raise ValidationError("unknown_field", f"unknown field(s) {sorted(set(d) - known)}")
        started = ms(d["startedAt"]) if "startedAt" in d else None
        finished = ms(d["finishedAt"]) if "finishedAt" in d else None
        return ExecutionReport(d.get("jobId"), d.get("scheduledFor"), d.get("status"), d.get("attempt", 0),
                               d.get("error"), started, finished, d.get("worker"))


class Deduper:
    """Remembers dedupe keys for ``window_s`` seconds (and at most ``max_keys``, oldest dropped
    first), so a repeat delivered within the window is recognised."""

    def __init__(self, window_s: float = 3600.0, max_keys: int = 100_000, clock=time.monotonic):
        self.window_s = window_s
        self.max_keys = max_keys
        self._clock = clock
        self._seen: "OrderedDict[Any, float]" = OrderedDict()

    def _expire(self, now: float) -> None:
        while self._seen:
            k, t = next(iter(self._seen.items()))
            if now - t < self.window_s and len(self._seen) <= self.max_keys:
                break
            self._seen.popitem(last=False)

    def seen(self, key) -> bool:
        """True iff ``key`` was remembered within the window."""
        self._expire(self._clock())
        return key in self._seen

    def remember(self, key) -> None:
        self._seen[key] = self._clock()
        self._seen.move_to_end(key)
        self._expire(self._clock())
