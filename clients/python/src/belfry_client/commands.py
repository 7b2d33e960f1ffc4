"""Typed job commands: build one, ``validate()`` it by belfry's rules, ``to_json()`` it.

>>> Upsert("shipment-42-poll", Every("EVERY_15_MINUTES"), topic="tracking.poll").to_dict()["executionInterval"]
'EVERY_15_MINUTES'

The encoding is README.md's "Command format": the Kafka key is the id, the value a JSON object
with ``op`` and the fields that are set (``None`` fields are left out), or no value at all for a
``Delete(..., tombstone=True)``. ``record()`` is the whole Kafka record: key, value and headers.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import rules as R
from .rules import DEFAULT_RULES, Rules, ValidationError

TimeLike = Union[str, datetime]


@dataclass(frozen=True)
class Every:
    """An interval schedule: ``executionInterval`` (``EVERY_15_MINUTES``) and/or ``intervalMinutes``,
    an optional ``offsetMinutes`` (0 <= offset < interval) and ``[start, end)``."""

    execution_interval: Optional[str] = None
    interval_minutes: Optional[int] = None
    offset_minutes: Optional[int] = None
    start: Optional[TimeLike] = None
    end: Optional[TimeLike] = None

    @staticmethod
    def minutes(n: int, **kw) -> "Every":
        return Every(interval_minutes=n, **kw)


@dataclass(frozen=True)
class Cron:
    """A calendar schedule: a 5-field cron expression (or macro) in an IANA zone (default UTC)."""

    expression: str
    time_zone: Optional[str] = None
    start: Optional[TimeLike] = None
    end: Optional[TimeLike] = None


@dataclass(frozen=True)
class Once:
    """A one-shot job: fires once, at its shard's second of ``run_at``'s minute."""

    run_at: TimeLike


Schedule = Union[Every, Cron, Once]


@dataclass(frozen=True)
class RetryBackoff:
    initial_seconds: Optional[int] = None
    multiplier: Optional[float] = None
    max_seconds: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        d = {"initialSeconds": self.initial_seconds, "multiplier": self.multiplier, "maxSeconds": self.max_seconds}
        return {k: v for k, v in d.items() if v is not None}


class Command:
    """Base of every command. ``id`` is also the Kafka key."""

    op: str = ""
    id: str

    def validate(self, rules: Rules = DEFAULT_RULES) -> "Command":  # pragma: no cover - overridden
        raise NotImplementedError

    def to_dict(self) -> Dict[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    def to_json(self) -> Optional[bytes]:
        """The Kafka value: compact JSON, UTF-8 (None only for a tombstone)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def record(self, actor: Optional[str] = None) -> Tuple[bytes, Optional[bytes], Optional[List[Tuple[str, bytes]]]]:
        """The Kafka record (key, value, headers): keyed by the id. ``actor`` (the producer's) is
        sent as the ``belfry-actor`` header unless the command names its own."""
        return self.id.encode("utf-8"), self.to_json(), self._headers(actor) or None

    def _headers(self, actor: Optional[str]) -> List[Tuple[str, bytes]]:
        return [("belfry-actor", actor.encode("utf-8"))] if actor and self.actor is None else []

    def _check_note(self) -> None:
        if self.reason is not None:
            R._check_text("invalid_reason", "reason", self.reason, R.MAX_REASON_BYTES)
        if self.actor is not None:
            R._check_text("invalid_actor", "actor", self.actor, R.MAX_ACTOR_BYTES)

    def _note(self, d: Dict[str, Any]) -> Dict[str, Any]:
        if self.reason is not None:
            d["reason"] = self.reason
        if self.actor is not None:
            d["actor"] = self.actor
        return d


@dataclass
class Upsert(Command):
    """Create or replace job ``id`` (an upsert keeps the job's paused flag)."""

    id: str
    schedule: Schedule
    topic: str
    key: Optional[str] = None
    owner: Optional[str] = None
    labels: Optional[Mapping[str, str]] = None
    job_details: Optional[Mapping[str, Any]] = None
    priority: Optional[int] = None
    max_retries: Optional[int] = None
    retry_backoff: Optional[RetryBackoff] = None
    max_fires: Optional[int] = None
    reason: Optional[str] = None
    actor: Optional[str] = None
    op: str = field(default="upsert", init=False)

    def validate(self, rules: Rules = DEFAULT_RULES) -> "Upsert":
        """Raises ValidationError with belfry's reason for the first rule that fails, in belfry's
        order (docs/command-validation.md, "Order of checks"); returns self."""
        _check_types(self)
        R.check_id(self.id)
        self._check_note()
        s = self.schedule
        if isinstance(s, Cron):
            if s.start is not None:
                R.time_text(s.start, "startDateTime")
            if s.end is not None:
                R.time_text(s.end, "endDateTime")
            self._check_start_end(s.start, s.end)
            R.check_cron(s.expression)
            R.check_time_zone(s.time_zone if s.time_zone is not None else "UTC")
        elif isinstance(s, Once):
            R.time_text(s.run_at, "runAt")
        elif isinstance(s, Every):
            self._check_interval(s, rules)
        else:
            raise ValidationError("missing_field", "upsert needs a schedule: Every, Cron or Once")
        if self.max_fires is not None:
            R.check_int(self.max_fires, "invalid_max_fires", "maxFires", 1, R.MAX_FIRES)
            if isinstance(s, Once):
                raise ValidationError("invalid_max_fires", "a one-shot job fires once; it takes no maxFires")
        R.check_topic(self.topic, rules)
        if self.key is not None:
            if not isinstance(self.key, str):
                raise ValidationError("wrong_type", "key must be a string")
            if R._utf8_len(self.key) > R.MAX_KEY_BYTES or "\0" in self.key:
                raise ValidationError("invalid_key", f"key is over {R.MAX_KEY_BYTES} bytes or contains NUL")
        if self.owner is not None:
            R._check_text("invalid_owner", "owner", self.owner, R.MAX_OWNER_BYTES)
        if self.priority is not None:
            R.check_int(self.priority, "invalid_priority", "priority", -R.MAX_PRIORITY, R.MAX_PRIORITY)
        if self.max_retries is not None:
            R.check_int(self.max_retries, "invalid_retries", "maxRetries", 0, R.MAX_RETRIES)
        if self.retry_backoff is not None:
            self._check_backoff(self.retry_backoff)
        if self.labels is not None:
            R.check_labels(dict(self.labels))
        if self.job_details is not None:
            if not isinstance(self.job_details, Mapping):
                raise ValidationError("invalid_details", "jobDetails must be an object")
            if R._contains_nul(self.job_details):
                raise ValidationError("invalid_details", "jobDetails contains a NUL character")
            size = len(json.dumps(self.job_details, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
            if size > rules.max_details_bytes:
                raise ValidationError("details_too_large", f"jobDetails is {size} bytes minified; the limit is {rules.max_details_bytes}")
        return self

    @staticmethod
    def _check_start_end(start, end) -> None:
        if start is not None and end is not None:
            a = R.parse_iso_time(R.time_text(start, "startDateTime"))
            b = R.parse_iso_time(R.time_text(end, "endDateTime"))
            if b <= a:
                raise ValidationError("end_before_start", "endDateTime is not after startDateTime")

    @classmethod
    def _check_interval(cls, s: Every, rules: Rules) -> None:
        from_name = None
        if s.execution_interval is not None:
            from_name = R.parse_execution_interval(s.execution_interval)
            if from_name is None:
                raise ValidationError(
                    "unsupported_interval",
                    f"executionInterval {s.execution_interval!r} is not EVERY_MINUTE, EVERY_<N>_MINUTES, EVERY_HOUR or EVERY_<N>_HOURS",
                )
        if s.interval_minutes is not None:
            if isinstance(s.interval_minutes, bool) or not isinstance(s.interval_minutes, int) or s.interval_minutes <= 0:
                raise ValidationError("unsupported_interval", f"intervalMinutes {s.interval_minutes!r} is not a positive integer")
        if from_name is None and s.interval_minutes is None:
            raise ValidationError("missing_field", "upsert needs an interval: executionInterval or intervalMinutes")
        if from_name is not None and s.interval_minutes is not None and from_name != s.interval_minutes:
            raise ValidationError("conflicting_interval", f"executionInterval {s.execution_interval} disagrees with intervalMinutes {s.interval_minutes}")
        interval = s.interval_minutes if s.interval_minutes is not None else from_name
        if interval not in rules.intervals:
            raise ValidationError(
                "unsupported_interval",
                f"{interval} minutes is not one of the configured intervals {','.join(map(str, rules.intervals))}",
            )
        if s.offset_minutes is not None:
            R.check_int(s.offset_minutes, "offset_out_of_range", "offsetMinutes", 0, interval - 1)
        for t, what in ((s.start, "startDateTime"), (s.end, "endDateTime")):
            if t is not None:
                R.time_text(t, what)
        cls._check_start_end(s.start, s.end)

    @staticmethod
    def _check_backoff(b: RetryBackoff) -> None:
        for v, what in ((b.initial_seconds, "initialSeconds"), (b.max_seconds, "maxSeconds")):
            if v is not None:
                R.check_int(v, "invalid_retry_backoff", what, 1, R.MAX_BACKOFF_SECONDS)
        if b.multiplier is not None:
            if isinstance(b.multiplier, bool) or not isinstance(b.multiplier, (int, float)) or not 1 <= b.multiplier <= 10:
                raise ValidationError("invalid_retry_backoff", f"multiplier {b.multiplier!r} must be a number in [1, 10]")
        initial = b.initial_seconds if b.initial_seconds is not None else 60
        maximum = b.max_seconds if b.max_seconds is not None else max(3600, initial)  # belfry's default
        if maximum < initial:
            raise ValidationError("invalid_retry_backoff", f"maxSeconds {maximum} is below initialSeconds {initial}")

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"op": "upsert", "id": self.id}
        s = self.schedule
        if isinstance(s, Every):
            d["executionInterval"] = s.execution_interval
            d["intervalMinutes"] = s.interval_minutes
            d["offsetMinutes"] = s.offset_minutes
            d["startDateTime"] = _time_or_none(s.start)
            d["endDateTime"] = _time_or_none(s.end)
        elif isinstance(s, Cron):
            d["cron"] = s.expression
            d["timeZone"] = s.time_zone
            d["startDateTime"] = _time_or_none(s.start)
            d["endDateTime"] = _time_or_none(s.end)
        elif isinstance(s, Once):
            d["runAt"] = _time_or_none(s.run_at)
        d.update(
            topic=self.topic,
            key=self.key,
            owner=self.owner,
            labels=dict(self.labels) if self.labels is not None else None,
            jobDetails=dict(self.job_details) if self.job_details is not None else None,
            priority=self.priority,
            maxRetries=self.max_retries,
            retryBackoff=self.retry_backoff.to_dict() if self.retry_backoff is not None else None,
            maxFires=self.max_fires,
        )
        return self._note({k: v for k, v in d.items() if v is not None})


def _check_types(c) -> None:
    """``wrong_type`` for a field of the wrong JSON type, as belfry would answer."""
    fields = [("id", c.id), ("reason", c.reason), ("actor", c.actor)]
    if isinstance(c, Backfill):
        fields += [("from", c.from_), ("to", c.to)]
    if isinstance(c, Upsert):
        s = c.schedule
        fields += [("topic", c.topic), ("key", c.key), ("owner", c.owner)]
        if isinstance(s, Every):
            fields += [("executionInterval", s.execution_interval), ("startDateTime", s.start), ("endDateTime", s.end)]
        elif isinstance(s, Cron):
            fields += [("cron", s.expression), ("timeZone", s.time_zone), ("startDateTime", s.start), ("endDateTime", s.end)]
        elif isinstance(s, Once):
            fields += [("runAt", s.run_at)]
    for name, value in fields:
        if value is not None and not isinstance(value, (str, datetime)) or (isinstance(value, datetime) and name in ("id", "topic", "key", "owner", "reason", "actor", "cron", "timeZone", "executionInterval")):
            raise ValidationError("wrong_type", f"{name} must be a string, not {type(value).__name__}")


def _time_or_none(t: Optional[TimeLike]) -> Optional[str]:
    if t is None:
        return None
    return R.time_text(t, "time") if isinstance(t, datetime) else t


@dataclass
class _IdOnly(Command):
    id: str
    reason: Optional[str] = None
    actor: Optional[str] = None

    def validate(self, rules: Rules = DEFAULT_RULES) -> "_IdOnly":
        _check_types(self)
        R.check_id(self.id)
        self._check_note()
        return self

    def to_dict(self) -> Dict[str, Any]:
        return self._note({"op": self.op, "id": self.id})


@dataclass
class Delete(_IdOnly):
    """Deletes the job (and its pending retries). ``tombstone=True`` sends it as a tombstone: the
    id as key, no value; ``reason`` and ``actor`` then travel as the ``belfry-reason`` and
    ``belfry-actor`` headers (a tombstone has no other place for them). belfry answers both forms
    with an outcome of op ``delete``."""

    tombstone: bool = False
    op: str = field(default="delete", init=False)

    def to_json(self) -> Optional[bytes]:
        return None if self.tombstone else super().to_json()

    def _headers(self, actor: Optional[str]) -> List[Tuple[str, bytes]]:
        if not self.tombstone:
            return super()._headers(actor)
        note = (("belfry-reason", self.reason), ("belfry-actor", self.actor if self.actor is not None else actor))
        return [(name, value.encode("utf-8")) for name, value in note if value]  # an empty header is no note


@dataclass
class Pause(_IdOnly):
    """Stops the job firing; ``reason``/``actor`` are stored as its pause note."""

    op: str = field(default="pause", init=False)


@dataclass
class Resume(_IdOnly):
    """Lets a paused job fire again."""

    op: str = field(default="resume", init=False)


@dataclass
class TriggerJob(_IdOnly):
    """Fires the job once, now, with its current topic, key and details, paused or not
    (docs/manual-fires.md). Its trigger's ``scheduledFor`` is the command's Kafka timestamp."""

    op: str = field(default="trigger", init=False)


@dataclass
class Backfill(Command):
    """Fires the job's slots in ``[from_, to)`` (by its schedule and its start and end dates), each
    with its original ``scheduledFor``, oldest first, at most ``rate_per_minute`` a minute (belfry's
    default 60). ``dry_run=True`` only counts. A slot an earlier backfill covered is not fired again."""

    id: str
    from_: Optional[TimeLike]
    to: Optional[TimeLike]
    rate_per_minute: Optional[int] = None
    dry_run: Optional[bool] = None
    reason: Optional[str] = None
    actor: Optional[str] = None
    op: str = field(default="backfill", init=False)

    def validate(self, rules: Rules = DEFAULT_RULES, now_ms: Optional[int] = None) -> "Backfill":
        """belfry's parse-time rules, in its order: id, note, ``from``, ``to`` (dates, both
        required), the range (``from < to``, ``to`` not after ``now_ms``, at most 366 days:
        ``invalid_backfill``), ``ratePerMinute`` (``invalid_rate``), ``dryRun``. belfry checks ``to``
        against the record's timestamp; ``now_ms`` defaults to this host's clock, which stamps the
        record (librdkafka's CreateTime) just after. Returns self."""
        _check_types(self)
        R.check_id(self.id)
        self._check_note()
        from_text, to_text = (None if t is None else R.time_text(t, what) for t, what in ((self.from_, "from"), (self.to, "to")))
        if from_text is None or to_text is None:
            raise ValidationError("missing_field", "backfill needs from and to")
        R.check_backfill_range(R.parse_iso_time(from_text), R.parse_iso_time(to_text),
                               int(time.time() * 1000) if now_ms is None else now_ms)
        rate = self.rate_per_minute
        if rate is not None:
            if isinstance(rate, bool) or not isinstance(rate, (int, float)):
                raise ValidationError("wrong_type", f"ratePerMinute must be an integer number, not {type(rate).__name__}")
            R.check_int(rate, "invalid_rate", "ratePerMinute", 1, R.MAX_BACKFILL_RATE)
        if self.dry_run is not None and not isinstance(self.dry_run, bool):
            raise ValidationError("wrong_type", f"dryRun must be a boolean, not {type(self.dry_run).__name__}")
        return self

    def to_dict(self) -> Dict[str, Any]:
        d = {"op": "backfill", "id": self.id, "from": _time_or_none(self.from_), "to": _time_or_none(self.to),
             "ratePerMinute": self.rate_per_minute, "dryRun": self.dry_run}
        return self._note({k: v for k, v in d.items() if v is not None})


_UPSERT_FIELDS = {
    "op", "id", "owner", "startDateTime", "endDateTime", "executionInterval", "intervalMinutes", "offsetMinutes",
    "topic", "key", "jobDetails", "priority", "runAt", "maxRetries", "retryBackoff", "cron", "timeZone", "reason",
    "actor", "maxFires", "labels",
}


def command_from_dict(d: Mapping[str, Any]) -> Command:
    """The typed command for a JSON command object (README.md's format, e.g. a project44 job
    object), read as belfry reads it: null means absent, an empty date or key too, ``op``
    defaults to ``upsert``. Combinations the typed commands cannot express raise belfry's reason
    (``conflicting_schedule``, ``invalid_one_shot``, ...). Bulk operations (``selector``) are not
    built by this client (ValueError). A tombstone has no JSON object: ``Delete(id, tombstone=True)``."""
    if not isinstance(d, Mapping):
        raise ValidationError("not_object", "a command is a JSON object")
    d = {k: v for k, v in d.items() if v is not None}
    for k in ("startDateTime", "endDateTime", "runAt", "key", "from", "to"):
        if d.get(k) == "":
            del d[k]
    op = d.pop("op", "upsert")
    if not isinstance(op, str):
        raise ValidationError("wrong_type", "op must be a string")
    if op not in ("upsert", "delete", "pause", "resume", "trigger", "backfill"):
        raise ValidationError("unknown_op", f"op {op!r} is not one of upsert, delete, pause, resume, trigger, backfill")
    unknown = set(d) - _UPSERT_FIELDS - {"from", "to", "ratePerMinute", "dryRun", "selector"}
    if unknown:
        raise ValidationError("unknown_field", f"unknown field(s) {sorted(unknown)}")
    note = {"reason": d.pop("reason", None), "actor": d.pop("actor", None)}
    job_id = d.pop("id", None)
    if "selector" in d:
        if op in ("upsert", "backfill"):
            raise ValidationError("invalid_selector", f"op {op} takes no selector")
        raise ValueError(f"bulk operations ({op} with a selector) are not built by this client")
    if op in ("delete", "pause", "resume", "trigger"):  # belfry ignores their other fields
        return {"delete": Delete, "pause": Pause, "resume": Resume, "trigger": TriggerJob}[op](job_id, **note)
    if op == "backfill":  # so are its other fields
        return Backfill(job_id, d.get("from"), d.get("to"), d.get("ratePerMinute"), d.get("dryRun"), **note)
    extra = set(d) - _UPSERT_FIELDS
    if extra:
        raise ValidationError("unknown_field", f"upsert takes no {sorted(extra)}")
    has = d.__contains__
    if has("cron"):
        for other in ("executionInterval", "intervalMinutes", "offsetMinutes", "runAt"):
            if has(other):
                raise ValidationError("conflicting_schedule", f"a cron job has no {other}")
        schedule: Schedule = Cron(d.pop("cron"), d.pop("timeZone", None), d.pop("startDateTime", None), d.pop("endDateTime", None))
    elif has("timeZone"):
        raise ValidationError("invalid_time_zone", "timeZone applies only to cron jobs")
    elif has("runAt") or d.get("executionInterval") == "ONCE":
        once = d.get("executionInterval") == "ONCE"
        if not once and (has("executionInterval") or has("intervalMinutes")):
            raise ValidationError("invalid_one_shot", "runAt cannot be combined with an interval")
        if once and has("intervalMinutes"):
            raise ValidationError("conflicting_interval", 'executionInterval "ONCE" cannot have intervalMinutes')
        if has("offsetMinutes") or has("endDateTime"):
            raise ValidationError("invalid_one_shot", "a one-shot job has no offsetMinutes or endDateTime")
        if has("runAt") and has("startDateTime"):
            raise ValidationError("invalid_one_shot", "a one-shot job takes runAt or startDateTime, not both")
        d.pop("executionInterval", None)
        run_at = d.pop("runAt", None) or d.pop("startDateTime", None)
        if run_at is None:
            raise ValidationError("missing_field", 'executionInterval "ONCE" needs runAt (or startDateTime)')
        schedule = Once(run_at)
    else:
        schedule = Every(d.pop("executionInterval", None), d.pop("intervalMinutes", None), d.pop("offsetMinutes", None),
                         d.pop("startDateTime", None), d.pop("endDateTime", None))
    rb = d.pop("retryBackoff", None)
    if rb is not None:
        if not isinstance(rb, Mapping):
            raise ValidationError("wrong_type", "retryBackoff must be an object")
        if set(rb) - {"initialSeconds", "multiplier", "maxSeconds"}:
            raise ValidationError("invalid_retry_backoff", f"retryBackoff has unknown member(s) {sorted(set(rb) - {'initialSeconds', 'multiplier', 'maxSeconds'})}")
        rb = RetryBackoff(rb.get("initialSeconds"), rb.get("multiplier"), rb.get("maxSeconds"))
    return Upsert(
        job_id, schedule, topic=d.pop("topic", None), key=d.pop("key", None), owner=d.pop("owner", None),
        labels=d.pop("labels", None), job_details=d.pop("jobDetails", None), priority=d.pop("priority", None),
        max_retries=d.pop("maxRetries", None), retry_backoff=rb, max_fires=d.pop("maxFires", None), **note,
    )
