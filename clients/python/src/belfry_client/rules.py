"""belfry's command rules, as far as a client can check them without belfry's configuration.

Each check raises :class:`ValidationError` with the same ``reason`` code belfry would put in the
outcome (docs/command-validation.md). What needs the server's state or configuration is left to
belfry: the topic allowlist (``commands.allowed_topics``) and belfry's own topic names, whether a
cron expression can still fire before its end (``cron_never_fires``), and anything that depends on
the stored job. The configured interval set and the details limit are parameters
(:class:`Rules`), with belfry's defaults.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Optional, Sequence

RESERVED_ID_MARKERS = ("#retry#", "#trigger#", "#backfill#")
DEFAULT_INTERVALS = (1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720, 1440)

MAX_ID_BYTES = 255
MAX_KEY_BYTES = 1024
MAX_OWNER_BYTES = 255
MAX_REASON_BYTES = 1024
MAX_ACTOR_BYTES = 255
MAX_PRIORITY = 1_000_000
MAX_RETRIES = 100
MAX_BACKOFF_SECONDS = 604_800
MAX_FIRES = 100_000
MAX_LABELS = 16
MAX_LABEL_KEY_BYTES = 63
MAX_LABEL_VALUE_BYTES = 255
MAX_CRON_BYTES = 256
MAX_TIME_ZONE_BYTES = 64
MAX_WORKER_BYTES = 255
MAX_ATTEMPT = 1000
LAST_INSTANT_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
MAX_BACKFILL_RATE = 10_000
MAX_BACKFILL_SPAN_MS = 366 * 24 * 3600 * 1000


class ValidationError(ValueError):
    """A command or report belfry would reject. ``reason`` is belfry's reason code."""

    def __init__(self, reason: str, message: str):
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class Rules:
    """The parts of belfry's configuration that validation depends on (defaults: belfry's)."""

    intervals: Sequence[int] = DEFAULT_INTERVALS  # scheduler.intervals
    max_details_bytes: int = 65536  # commands.max_details_bytes
    forbidden_topics: Sequence[str] = field(default_factory=tuple)  # belfry's own topics, if known


DEFAULT_RULES = Rules()


def _utf8_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def _control_char_at(s: str) -> Optional[int]:
    for i, c in enumerate(s):
        if ord(c) < 0x20 or ord(c) == 0x7F:
            return i
    return None


def _check_text(reason: str, what: str, s: str, max_bytes: int) -> None:
    if not isinstance(s, str):
        raise ValidationError("wrong_type", f"{what} must be a string")
    if _utf8_len(s) > max_bytes:
        raise ValidationError(reason, f"{what} is {_utf8_len(s)} bytes; the limit is {max_bytes}")
    if _control_char_at(s) is not None:
        raise ValidationError(reason, f"{what} contains a control character")
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(reason, f"{what} is not valid UTF-8 (a lone surrogate)") from None


def check_id(job_id: str, what: str = "id") -> None:
    """1-255 bytes of UTF-8, no control characters, none of belfry's reserved markers."""
    if job_id is None or job_id == "":
        raise ValidationError("missing_id", f"{what} is missing or empty")
    _check_text("invalid_id", what, job_id, MAX_ID_BYTES)
    for marker in RESERVED_ID_MARKERS:
        if marker in job_id:
            raise ValidationError("invalid_id", f"{what} contains {marker!r}, which belfry reserves")


_TOPIC_RE = re.compile(r"[A-Za-z0-9._-]{1,249}")


def check_topic(topic: Optional[str], rules: Rules = DEFAULT_RULES) -> None:
    """A valid Kafka topic name, not Kafka-internal (``__*``), not one of belfry's own topics."""
    if topic is None:
        raise ValidationError("missing_field", "upsert needs a topic")
    if not isinstance(topic, str) or not _TOPIC_RE.fullmatch(topic) or topic in (".", ".."):
        raise ValidationError(
            "invalid_topic",
            f"topic {topic!r} is not a valid Kafka topic name (1-249 characters of [a-zA-Z0-9._-], not . or ..)",
        )
    if topic.startswith("__"):
        raise ValidationError("forbidden_topic", f"topic {topic!r} is a Kafka-internal topic")
    if topic in rules.forbidden_topics:
        raise ValidationError("forbidden_topic", f"topic {topic!r} is one of belfry's own topics")


_INTERVAL_RE = re.compile(r"EVERY_(?:(MINUTE|HOUR)|([1-9][0-9]{0,8})_(MINUTES|HOURS))")


def parse_execution_interval(name: str) -> Optional[int]:
    """``EVERY_MINUTE``, ``EVERY_<N>_MINUTES``, ``EVERY_HOUR``, ``EVERY_<N>_HOURS`` -> minutes."""
    m = _INTERVAL_RE.fullmatch(name) if isinstance(name, str) else None
    if not m:
        return None
    if m.group(1):
        return 1 if m.group(1) == "MINUTE" else 60
    n = int(m.group(2)) * (1 if m.group(3) == "MINUTES" else 60)
    return n if n <= 2**31 - 1 else None


def check_int(value, reason: str, what: str, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(reason, f"{what} {value!r} must be an integer in [{lo}, {hi}]")
    if not lo <= value <= hi:
        raise ValidationError(reason, f"{what} {value} must be an integer in [{lo}, {hi}]")


_ISO_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))?"
)


def parse_iso_time(text: str) -> Optional[int]:
    """belfry's date rule (``YYYY-MM-DDTHH:MM:SS[.f{1,9}][Z|±HH:MM]``, UTC when no zone, years
    1970-9999, the instant within 1970..9999 UTC) -> epoch milliseconds, or None."""
    m = _ISO_RE.fullmatch(text) if isinstance(text, str) else None
    if not m:
        return None
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    frac = (m.group(7) or "")[:3].ljust(3, "0")
    offset = 0
    if m.group(9):
        oh, om = int(m.group(10)), int(m.group(11))
        if oh > 23 or om > 59:
            return None
        offset = (oh * 60 + om) * (-1 if m.group(9) == "-" else 1)
    if not (1970 <= year <= 9999) or hour > 23 or minute > 59 or second > 59:
        return None
    try:
        d = datetime(year, month, day, tzinfo=timezone.utc)
    except ValueError:
        return None
    days = (d - datetime(1970, 1, 1, tzinfo=timezone.utc)).days
    ms = ((days * 86400 + hour * 3600 + minute * 60 + second) * 1000 + int(frac)) - offset * 60_000
    if ms < 0 or ms > LAST_INSTANT_MS:
        return None
    return ms


def format_iso_time(epoch_ms: int) -> str:
    """belfry's own format: ``2026-11-22T13:37:32.500Z``."""
    dt = datetime.fromtimestamp(epoch_ms // 1000, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (epoch_ms % 1000)


def time_text(value, what: str) -> str:
    """A datetime (timezone-aware) or belfry date text -> the text to send, checked."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValidationError("invalid_date", f"{what} is a naive datetime; give it a time zone")
        ms = (value - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)
        if ms < 0 or ms > LAST_INSTANT_MS:
            raise ValidationError("invalid_date", f"{what} {value.isoformat()} is outside 1970-9999")
        return format_iso_time(ms)
    if parse_iso_time(value) is None:
        raise ValidationError(
            "invalid_date",
            f"{what} {value!r} is not a valid UTC time like 2026-11-22T13:00:00Z "
            "(YYYY-MM-DDTHH:MM:SS[.fff][Z|+HH:MM|-HH:MM], years 1970-9999)",
        )
    return value


def check_backfill_range(from_ms: int, to_ms: int, now_ms: int) -> None:
    """belfry's CheckBackfillRange (docs/manual-fires.md): ``from < to``, ``to`` not after the
    command's timestamp (``now_ms``), at most 366 days."""
    if from_ms >= to_ms:
        raise ValidationError("invalid_backfill", f"from {format_iso_time(from_ms)} is not before to {format_iso_time(to_ms)}")
    if to_ms > now_ms:
        raise ValidationError("invalid_backfill", f"to {format_iso_time(to_ms)} is after the command's timestamp "
                                                  f"{format_iso_time(now_ms)}: a backfill fires past slots only")
    if to_ms - from_ms > MAX_BACKFILL_SPAN_MS:
        raise ValidationError("invalid_backfill", f"from {format_iso_time(from_ms)} to {format_iso_time(to_ms)} is longer "
                                                  f"than {MAX_BACKFILL_SPAN_MS // 86_400_000} days")


# ---- cron expressions (docs/calendar-schedules.md, "Syntax") --------------------------------

_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
# name, min, max (largest value the text may name), last (where * and a/n end), names
_CRON_FIELDS = (
    ("minute", 0, 59, 59, ()),
    ("hour", 0, 23, 23, ()),
    ("day-of-month", 1, 31, 31, ()),
    ("month", 1, 12, 12, _MONTHS),
    ("day-of-week", 0, 7, 6, _WEEKDAYS),
)
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_ITEM_RE = re.compile(r"(\*|[0-9]+|[A-Za-z]+)(?:-([0-9]+|[A-Za-z]+))?(?:/(.*))?")


def _cron_value(text: str, spec) -> int:
    name, lo, hi, _last, names = spec
    if text.isdigit():
        v = int(text)
        if not lo <= v <= hi:
            raise ValidationError("invalid_cron", f"{name} field: {text} is outside {lo}-{hi}")
        return v
    for i, n in enumerate(names):
        if text.upper() == n:
            return lo + i
    raise ValidationError("invalid_cron", f"{name} field: {text!r} is not a value of the field")


def check_cron(expr: str) -> None:
    """The expression's syntax: five fields (or a macro), values, names, ranges and steps. It does
    not decide whether the expression can ever fire (``cron_never_fires``): belfry does."""
    if not isinstance(expr, str):
        raise ValidationError("wrong_type", "cron must be a string")
    if _utf8_len(expr) > MAX_CRON_BYTES:
        raise ValidationError("invalid_cron", f"cron is {_utf8_len(expr)} bytes, at most {MAX_CRON_BYTES} allowed")
    if any(not (c == "\t" or 0x20 <= ord(c) < 0x7F) for c in expr):
        raise ValidationError("invalid_cron", f"cron {expr!r} has a character other than printable ASCII or tab")
    tokens = expr.split()
    if tokens and tokens[0].startswith("@"):
        if tokens[0].lower() not in _MACROS:
            raise ValidationError("invalid_cron", f"unknown macro {tokens[0]!r}")
        if len(tokens) > 1:
            raise ValidationError("invalid_cron", f"unexpected text after {tokens[0]} (a macro stands alone)")
        return
    if len(tokens) != 5:
        raise ValidationError(
            "invalid_cron", f"cron {expr!r}: found {len(tokens)} fields, expected 5 (minute hour day-of-month month day-of-week)"
        )
    for token, spec in zip(tokens, _CRON_FIELDS):
        name, lo, _hi, last, _names = spec
        for item in token.split(","):
            m = _ITEM_RE.fullmatch(item)
            if not item or not m:
                raise ValidationError("invalid_cron", f"{name} field: {item!r} is not a value, range or step")
            start, end, step = m.group(1), m.group(2), m.group(3)
            if start == "*":
                if end is not None:
                    raise ValidationError("invalid_cron", f"{name} field: {item!r} is not a value, range or step")
            else:
                a = _cron_value(start, spec)
                if end is not None and a > _cron_value(end, spec):
                    raise ValidationError("invalid_cron", f"{name} field: range {item!r} is reversed")
            if step is not None:
                if not step.isdigit():
                    raise ValidationError("invalid_cron", f"{name} field: the step must be a number, not {step!r}")
                if not 1 <= int(step) <= last - lo + 1:
                    raise ValidationError("invalid_cron", f"{name} field: step {step} is not in 1-{last - lo + 1}")


def normalize_cron(expr: str) -> str:
    """The expression as belfry stores and shows it: a macro expanded, the five fields
    single-spaced, names and case as given."""
    tokens = expr.split()
    if len(tokens) == 1 and tokens[0].lower() in _MACROS:
        return _MACROS[tokens[0].lower()]
    return " ".join(tokens)


def check_time_zone(zone: str) -> None:
    """An IANA zone this host's tz database knows (belfry checks against its own host's)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not isinstance(zone, str):
        raise ValidationError("wrong_type", "timeZone must be a string")
    if not zone or _utf8_len(zone) > MAX_TIME_ZONE_BYTES or _control_char_at(zone) is not None:
        raise ValidationError("invalid_time_zone", f"timeZone {zone!r} is not an IANA zone name")
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValidationError("invalid_time_zone", f"timeZone {zone!r} is not a zone of the tz database") from None


_LABEL_KEY_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._/-]{0,61}[A-Za-z0-9])?")


def check_labels(labels) -> None:
    if not isinstance(labels, dict):
        raise ValidationError("invalid_labels", "labels must be an object of strings")
    if len(labels) > MAX_LABELS:
        raise ValidationError("invalid_labels", f"more than {MAX_LABELS} labels")
    for k, v in labels.items():
        if not isinstance(k, str) or not _LABEL_KEY_RE.fullmatch(k):
            raise ValidationError(
                "invalid_labels",
                f"label key {k!r} must be 1 to {MAX_LABEL_KEY_BYTES} bytes of letters, digits, '.', '_', '-', '/', "
                "beginning and ending with a letter or digit",
            )
        if not isinstance(v, str):
            raise ValidationError("invalid_labels", f"label {k!r} must be a string")
        if _utf8_len(v) > MAX_LABEL_VALUE_BYTES or _control_char_at(v) is not None:
            raise ValidationError("invalid_labels", f"label {k!r}: value over {MAX_LABEL_VALUE_BYTES} bytes or with a control character")


def _contains_nul(value) -> bool:
    if isinstance(value, str):
        return "\0" in value
    if isinstance(value, dict):
        return any("\0" in k or _contains_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_contains_nul(v) for v in value)
    return False
