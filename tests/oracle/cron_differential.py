#!/usr/bin/env python3
"""Differential test: belfry's cron fire computation against the brute-force oracle.

  cron_differential.py --tool PATH            next-fire mode, 2 years of minutes, all pairs
  cron_differential.py --tool PATH --tick     tick query on PostgreSQL, days around DST changes
  cron_differential.py --self-test            only the oracle's own checks
  cron_differential.py --oracle-only          self-test + oracle over the full set (timing)

The self-test runs first in every invocation. Exit 0 only if everything matched.
See README.md beside this file.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import os
import random
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cron_oracle as co  # noqa: E402

UTC = dt.timezone.utc


def epoch_min(y, mo, d, h=0, mi=0) -> int:
    return int(dt.datetime(y, mo, d, h, mi, tzinfo=UTC).timestamp()) // 60


def iso_utc(m: int) -> str:
    return dt.datetime.fromtimestamp(m * 60, UTC).strftime("%Y-%m-%dT%H:%MZ")


def iso_local(m: int, zone: str) -> str:
    t = dt.datetime.fromtimestamp(m * 60, co.load_zone(zone))
    return t.isoformat(timespec="minutes") + (" (2nd)" if t.fold else "")


def parse_iso_utc(s: str) -> int:
    return epoch_min(int(s[0:4]), int(s[5:7]), int(s[8:10]), int(s[11:13]), int(s[14:16]))


SPAN_LO = epoch_min(2026, 1, 1)   # two whole years of minutes: 2026-01-01T00:00Z ..
SPAN_HI = epoch_min(2028, 1, 1)   #                             .. 2028-01-01T00:00Z

ZONES = [
    "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata",
    "Asia/Kathmandu", "America/Santiago", "Pacific/Chatham", "Europe/Dublin",
    "UTC", "Africa/Casablanca",
]

# 2099's transitions in both hemispheres (March-April and September-November).
FAR_WINDOWS = [(epoch_min(2099, 3, 1), epoch_min(2099, 4, 15)), (epoch_min(2099, 9, 1), epoch_min(2099, 11, 15))]

# Zones whose rules changed: Moscow's last DST start (2011-03-27, then +04 all year) and its
# return to +03 (2014-10-26); Sao Paulo's last DST (2018-11-04 to 2019-02-17, none since).
RULE_CHANGES = [
    ("Europe/Moscow", [(epoch_min(2011, 3, 20), epoch_min(2011, 4, 5)),
                       (epoch_min(2014, 10, 20), epoch_min(2014, 11, 1))]),
    ("America/Sao_Paulo", [(epoch_min(2018, 10, 28), epoch_min(2018, 11, 10)),
                           (epoch_min(2019, 2, 10), epoch_min(2019, 2, 25))]),
]

SEED = 20260101

# --------------------------------------------------------------------------------------------
# expressions

# Hand-picked, DST-sensitive first: the first TICK_CURATED of these go to the tick run.
CURATED = [
    # wall time at the hours that move
    "30 2 * * *", "0 1 * * *", "59 1 * * *", "0,30 2 * * *", "15 2,3 * * *", "0 0 * * *",
    "0 2 * * *", "0 3 * * *", "30 1 * * *", "45 2 * * *", "15 3 * * *", "30 0 * * *",
    "59 23 * * *", "30 23 * * *", "* 2 * * *", "* 1 * * *", "*/10 1-3 * * *",
    "0 */1 * * *", "30 0-23 * * *", "0 */2 * * *", "0 2 * * 0", "0 2 * * SUN",
    "45 1,2 * * *", "0,15,30,45 2 * * 0", "*/5 0 * * 0,6", "30 2 8 3 *",
    # real time (hour field exactly *)
    "*/15 * * * *", "5 * * * 1-5", "0 * * * *", "30 * * * *", "45 * * * *", "@hourly",
    "59 * * * 0", "*/20 * 1 * *",
    # macros
    "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually",
    # day-of-month / day-of-week OR and AND
    "0 12 1 * 1", "0 12 13 * 5", "0 0 1,15 * MON", "0 12 */10 * 0", "0 12 1-7 * */2",
    "0 12 1-31/2 * 1", "0 12 */2 * 1", "0 0 29 2 *", "0 0 31 * *", "0 0 29 2 1",
    "0 0 30 2 1", "0 6 15 * 7", "0 6 * * 7", "0 6 * * 5-7", "0 6 * * 0,7", "0 6 * * 6-7",
    "0 9 28-31 * *",
    # name no date that exists: both sides reject them (cron_never_fires)
    "0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30 2 */2",
    # steps and ranges
    "*/7 9-17 * * MON-FRI", "10-50/10 8-18/2 * * *", "0 0 1-31/2 * *", "5/15 * * * *",
    "0 6/4 * * *", "0 0 2/3 * *", "0 0 1 2/3 *", "0 12 * * 1/3", "17 5-20/5 * * *",
    "0-59/30 4 * * *", "0 0 1-10/3,20 * *", "0 22 * * 1-5/2", "0 4 */5 */2 *",
    # names, case-insensitive, as range ends
    "0 9 * JAN-MAR MON-FRI", "0 9 * jan,jun,DEC *", "0 9 * * sun", "0 0 1 FEB *",
    "30 8 * Mar-Oct Sat,Sun", "0 7 * * mon-fri/2", "0 12 1 jul-dec/2 *", "0 18 * * Fri-7",
    "15 10 * apr *", "0 0 * * tUe",
    # plain forms of every field
    "7 8 9 10 *", "0 0 * * *", "1,2,3 4,5 6,7 8,9 1,2", "0-4 0 1 1 *", "59 23 31 12 *",
    "0 0 1 1 0", "* 3 3 3 *",
]
TICK_CURATED = 30

# Both sides must reject these (no ambiguity in the spec about any of them).
INVALID = [
    "60 * * * *", "* 24 * * *", "* * 0 * *", "* * 32 * *", "* * * 0 *", "* * * 13 *",
    "* * * * 8", "*/0 * * * *", "* * * *", "* * * * * *", "* * * FOO *", "* * * * FUNDAY",
    "@reboot", "@every", "", "a b c d e", "1,,2 * * * *", "-1 * * * *", "5- * * * *",
    "*/ * * * *", "0 0 * * MONDAY", "1/x * * * *",
]
INVALID_ZONES = ["Mars/Olympus_Mons", "Not/A_Zone", "EST5EDTX"]


def _rand_value(rng, lo, hi, names):
    v = rng.randint(lo, hi)
    if names and rng.random() < 0.35:
        inv = {n: k for k, n in names.items()}
        key = v % 7 if names is co.DOW_NAMES else v
        if key in inv:
            n = inv[key]
            return rng.choice([n, n.upper(), n.capitalize()]), key
    return str(v), v


def _rand_elem(rng, lo, hi, names, allow_star):
    kinds = ["n", "n", "range", "star_step", "range_step", "a_step"]
    if allow_star:
        kinds += ["star", "star"]
    k = rng.choice(kinds)
    span = hi - lo
    if k == "star":
        return "*"
    if k == "n":
        return _rand_value(rng, lo, hi, names)[0]
    if k == "star_step":
        return f"*/{rng.randint(2, max(2, span))}"
    if k == "a_step":
        a_txt, _ = _rand_value(rng, lo, hi - 1, names)
        return f"{a_txt}/{rng.randint(2, max(2, span // 2))}"
    a_txt, a = _rand_value(rng, lo, hi - 1, names)
    b_txt, b = _rand_value(rng, a + 1, hi, names)
    if names is co.DOW_NAMES and not b_txt.isdigit() and b < a:
        b_txt = str(b + 7 if b + 7 <= hi else hi)
    if k == "range":
        return f"{a_txt}-{b_txt}"
    return f"{a_txt}-{b_txt}/{rng.randint(2, max(2, span // 2))}"


def _rand_field(rng, lo, hi, names=None, allow_star=True):
    if rng.random() < 0.25:
        elems = [_rand_elem(rng, lo, hi, names, False) for _ in range(rng.randint(2, 3))]
        return ",".join(elems)
    return _rand_elem(rng, lo, hi, names, allow_star)


def random_expressions(rng, n):
    out = []
    while len(out) < n:
        minute = _rand_field(rng, 0, 59, allow_star=False)
        hour = _rand_field(rng, 0, 23) if rng.random() < 0.8 else rng.choice(["*", "*/3"])
        r = rng.random()
        if r < 0.45:
            dom, dow = "*", "*"
        elif r < 0.6:
            dom, dow = _rand_field(rng, 1, 31, allow_star=False), "*"
        elif r < 0.75:
            dom, dow = "*", _rand_field(rng, 0, 7, co.DOW_NAMES, allow_star=False)
        else:  # the OR (or, with a */n field, the AND) case
            dom = _rand_field(rng, 1, 31)
            dow = _rand_field(rng, 0, 7, co.DOW_NAMES)
        month = "*" if rng.random() < 0.6 else _rand_field(rng, 1, 12, co.MONTH_NAMES)
        expr = f"{minute} {hour} {dom} {month} {dow}"
        try:
            c = co.parse_cron(expr)
        except co.CronError:
            continue  # e.g. a random reversed range; the generator only wants valid ones
        # keep the hashing cheap: at most ~120 fires a day
        if len(c.minutes) * len(c.hours) > 120 or expr in out or expr in CURATED:
            continue
        out.append(expr)
    return out


def generate(seed=SEED, total=240):
    rng = random.Random(seed)
    exprs = list(dict.fromkeys(CURATED))
    exprs += random_expressions(rng, total - len(exprs))
    return exprs


def tick_subset(exprs, seed=SEED, n=40):
    rng = random.Random(seed + 1)
    head = exprs[:TICK_CURATED]
    rest = [e for e in exprs if e not in head]
    return head + rng.sample(rest, n - len(head))


# --------------------------------------------------------------------------------------------
# self-test


def naive_field_match(text, value, lo, hi, names, dow=False):
    """Arithmetic membership test written separately from the oracle's set expansion."""
    def num(tok):
        return names[tok.lower()] if names and tok.lower() in names else int(tok)
    cands = (value, 7) if dow and value == 0 else (value,)
    for part in text.split(","):
        base, slash, step = part.partition("/")
        step = int(step) if slash else 1
        if base == "*":
            a, b = lo, hi
        elif "-" in base:
            a, b = (num(x) for x in base.split("-"))
        else:
            a = num(base)
            b = hi if slash else a
        if any(a <= v <= b and (v - a) % step == 0 for v in cands):
            return True
    return False


def naive_fires(zone, expr, lo, hi):
    """Per-minute, pure-Python evaluation of the spec, straight from its wording."""
    tz = co.load_zone(zone)
    text = co.MACROS.get(expr.strip(), expr)
    f = text.split()
    hour_star = f[1] == "*"
    one = dt.timedelta(minutes=1)

    def matches(t):
        if not (naive_field_match(f[0], t.minute, 0, 59, None)
                and naive_field_match(f[1], t.hour, 0, 23, None)
                and naive_field_match(f[3], t.month, 1, 12, co.MONTH_NAMES)):
            return False
        dm = naive_field_match(f[2], t.day, 1, 31, None)
        wm = naive_field_match(f[4], (t.weekday() + 1) % 7, 0, 7, co.DOW_NAMES, dow=True)
        if f[2].startswith("*") or f[4].startswith("*"):
            return dm and wm
        return dm or wm

    out, prev, seen_max = [], None, None
    for m in range(lo - 2 * 1440, hi):
        loc = dt.datetime.fromtimestamp(m * 60, tz).replace(tzinfo=None, second=0,
                                                              microsecond=0)
        if m >= lo:
            if hour_star:
                fire = matches(loc)
            elif loc - prev > one:
                t, fire = prev + one, False
                while t <= loc and not fire:
                    fire = matches(t)
                    t += one
            elif loc <= seen_max:
                fire = False
            else:
                fire = matches(loc)
            if fire:
                out.append(m)
        prev = loc
        seen_max = loc if seen_max is None else max(seen_max, loc)
    return out


# (zone, expression, window start, window end (UTC ISO), expected fires (UTC ISO)),
# computed by hand from the tz rules in the comments.
HAND_CASES = [
    # New York: 2026-03-08 02:00 EST (07:00Z) -> 03:00 EDT;
    #           2026-11-01 02:00 EDT (06:00Z) -> 01:00 EST
    ("America/New_York", "30 2 * * *", "2026-03-07T12:00Z", "2026-03-10T12:00Z",
     ["2026-03-08T07:00Z", "2026-03-09T06:30Z", "2026-03-10T06:30Z"]),
    ("America/New_York", "30 2 * * *", "2026-10-31T12:00Z", "2026-11-02T12:00Z",
     ["2026-11-01T07:30Z", "2026-11-02T07:30Z"]),  # 02:30 EST happens once
    ("America/New_York", "30 1 * * *", "2026-11-01T00:00Z", "2026-11-02T00:00Z",
     ["2026-11-01T05:30Z"]),  # 01:30 EDT; not 01:30 EST (06:30Z)
    ("America/New_York", "*/30 * * * *", "2026-11-01T05:00Z", "2026-11-01T07:01Z",
     ["2026-11-01T05:00Z", "2026-11-01T05:30Z", "2026-11-01T06:00Z", "2026-11-01T06:30Z",
      "2026-11-01T07:00Z"]),  # real time: both 01:30s
    ("America/New_York", "*/30 * * * *", "2026-03-08T06:00Z", "2026-03-08T08:01Z",
     ["2026-03-08T06:00Z", "2026-03-08T06:30Z", "2026-03-08T07:00Z", "2026-03-08T07:30Z",
      "2026-03-08T08:00Z"]),
    ("America/New_York", "0,30 2 * * *", "2026-03-08T00:00Z", "2026-03-09T00:00Z",
     ["2026-03-08T07:00Z"]),  # two skipped matches, one fire
    ("America/New_York", "15 2,3 * * *", "2026-03-08T00:00Z", "2026-03-09T00:00Z",
     ["2026-03-08T07:00Z", "2026-03-08T07:15Z"]),
    ("America/New_York", "0 3 * * *", "2026-03-08T00:00Z", "2026-03-09T00:00Z",
     ["2026-03-08T07:00Z"]),
    ("America/New_York", "59 1 * * *", "2026-11-01T00:00Z", "2026-11-02T00:00Z",
     ["2026-11-01T05:59Z"]),
    ("America/New_York", "0 2 * * *", "2026-11-01T00:00Z", "2026-11-02T00:00Z",
     ["2026-11-01T07:00Z"]),  # 02:00 EST follows 01:59 EST: not a repeat
    ("America/New_York", "0 */1 * * *", "2026-11-01T04:00Z", "2026-11-01T08:00Z",
     ["2026-11-01T04:00Z", "2026-11-01T05:00Z", "2026-11-01T07:00Z"]),  # wall: 01:00 once
    ("America/New_York", "0 * * * *", "2026-11-01T04:00Z", "2026-11-01T08:00Z",
     ["2026-11-01T04:00Z", "2026-11-01T05:00Z", "2026-11-01T06:00Z", "2026-11-01T07:00Z"]),
    # Lord Howe: 2026-10-04 02:00 +10:30 (10-03T15:30Z) -> 02:30 +11;
    #            2026-04-05 02:00 +11 (04-04T15:00Z) -> 01:30 +10:30
    ("Australia/Lord_Howe", "15 2 * * *", "2026-10-03T12:00Z", "2026-10-04T12:00Z",
     ["2026-10-03T15:30Z"]),
    ("Australia/Lord_Howe", "30 2 * * *", "2026-10-03T12:00Z", "2026-10-04T12:00Z",
     ["2026-10-03T15:30Z"]),
    ("Australia/Lord_Howe", "45 2 * * *", "2026-10-03T12:00Z", "2026-10-04T12:00Z",
     ["2026-10-03T15:45Z"]),
    ("Australia/Lord_Howe", "*/15 * * * *", "2026-10-03T15:00Z", "2026-10-03T16:01Z",
     ["2026-10-03T15:00Z", "2026-10-03T15:15Z", "2026-10-03T15:30Z", "2026-10-03T15:45Z",
      "2026-10-03T16:00Z"]),
    ("Australia/Lord_Howe", "45 1 * * *", "2026-04-04T12:00Z", "2026-04-05T12:00Z",
     ["2026-04-04T14:45Z"]),
    ("Australia/Lord_Howe", "45 * * * *", "2026-04-04T14:00Z", "2026-04-04T16:00Z",
     ["2026-04-04T14:45Z", "2026-04-04T15:15Z"]),
    # Kathmandu +05:45, Kolkata +05:30 (2026-01-05 is a Monday)
    ("Asia/Kathmandu", "0 0 * * *", "2026-01-01T00:00Z", "2026-01-03T00:00Z",
     ["2026-01-01T18:15Z", "2026-01-02T18:15Z"]),
    ("Asia/Kathmandu", "@hourly", "2026-01-01T00:00Z", "2026-01-01T02:00Z",
     ["2026-01-01T00:15Z", "2026-01-01T01:15Z"]),
    ("Asia/Kolkata", "30 9 * * MON", "2026-01-01T00:00Z", "2026-01-08T00:00Z",
     ["2026-01-05T04:00Z"]),
    # Santiago: 2026-09-06 00:00 -04 (04:00Z) -> 01:00 -03;
    #           2026-04-05 00:00 -03 (03:00Z) -> 04-04 23:00 -04
    ("America/Santiago", "0 0 * * *", "2026-09-05T12:00Z", "2026-09-07T12:00Z",
     ["2026-09-06T04:00Z", "2026-09-07T03:00Z"]),
    ("America/Santiago", "30 23 * * *", "2026-04-04T12:00Z", "2026-04-06T12:00Z",
     ["2026-04-05T02:30Z", "2026-04-06T03:30Z"]),
    ("America/Santiago", "0 0 * * 6", "2026-09-05T00:00Z", "2026-09-07T00:00Z",
     ["2026-09-05T04:00Z"]),  # the skipped 00:00-00:59 of 09-06 are a Sunday's
    # Chatham: 2026-09-27 02:45 +12:45 (09-26T14:00Z) -> 03:45 +13:45;
    #          2026-04-05 03:45 +13:45 (04-04T14:00Z) -> 02:45 +12:45
    ("Pacific/Chatham", "0 3 * * *", "2026-09-26T12:00Z", "2026-09-27T12:00Z",
     ["2026-09-26T14:00Z"]),
    ("Pacific/Chatham", "0 3 * * *", "2026-04-04T12:00Z", "2026-04-05T12:00Z",
     ["2026-04-04T13:15Z"]),
    # Dublin (negative DST in tzdata; only the offsets matter): 03-29 01:00Z, 10-25 01:00Z
    ("Europe/Dublin", "30 1 * * *", "2026-03-28T12:00Z", "2026-03-29T12:00Z",
     ["2026-03-29T01:00Z"]),
    ("Europe/Dublin", "30 1 * * *", "2026-10-24T12:00Z", "2026-10-25T12:00Z",
     ["2026-10-25T00:30Z"]),
    # Casablanca: 2026-02-15 03:00 +01 (02:00Z) -> 02:00 +00;
    #             2026-03-22 02:00 +00 (02:00Z) -> 03:00 +01
    ("Africa/Casablanca", "30 2 * * *", "2026-02-14T12:00Z", "2026-02-15T12:00Z",
     ["2026-02-15T01:30Z"]),
    ("Africa/Casablanca", "30 2 * * *", "2026-03-21T12:00Z", "2026-03-22T12:00Z",
     ["2026-03-22T02:00Z"]),
    # day rule, 7 = Sunday, a/n through the field's max (January 2026 starts on a Thursday)
    ("UTC", "0 12 */2 * 1", "2026-01-01T00:00Z", "2026-02-01T00:00Z",
     ["2026-01-05T12:00Z", "2026-01-19T12:00Z"]),  # dom star (*/2): AND
    ("UTC", "0 0 * * 7", "2026-01-01T00:00Z", "2026-02-01T00:00Z",
     ["2026-01-04T00:00Z", "2026-01-11T00:00Z", "2026-01-18T00:00Z", "2026-01-25T00:00Z"]),
    ("UTC", "0 12 * * 1/3", "2026-01-01T00:00Z", "2026-01-08T00:00Z",
     ["2026-01-01T12:00Z", "2026-01-05T12:00Z"]),  # Mon, Thu: day-of-week a/n ends at Saturday
    ("UTC", "0 0 29 2 1", "2026-02-01T00:00Z", "2026-03-01T00:00Z",
     ["2026-02-02T00:00Z", "2026-02-09T00:00Z", "2026-02-16T00:00Z", "2026-02-23T00:00Z"]),
    ("UTC", "0 0 29 2 *", "2026-01-01T00:00Z", "2028-01-01T00:00Z", []),
    ("UTC", "0 0 30 2 1", "2026-02-01T00:00Z", "2026-03-01T00:00Z",
     ["2026-02-02T00:00Z", "2026-02-09T00:00Z", "2026-02-16T00:00Z", "2026-02-23T00:00Z"]),
    ("UTC", "0 0 31 * *", "2026-01-01T00:00Z", "2027-01-01T00:00Z",
     [f"2026-{m:02d}-31T00:00Z" for m in (1, 3, 5, 7, 8, 10, 12)]),
]

# (zone, expression, window start, window end, expected number of fires)
COUNT_CASES = [
    ("UTC", "0 12 1-31/2 * 1", "2026-01-01T00:00Z", "2026-02-01T00:00Z", 18),  # 16 odd + 12, 26
    ("UTC", "0 0 * * *", "2026-01-01T00:00Z", "2028-01-01T00:00Z", 730),
    ("America/New_York", "0 0 * * *", "2026-01-01T00:00Z", "2028-01-01T00:00Z", 730),
    ("America/New_York", "30 2 * * *", "2026-01-01T00:00Z", "2027-01-01T00:00Z", 365),
    ("America/New_York", "0 * * * *", "2026-01-01T00:00Z", "2027-01-01T00:00Z", 8760),
    ("America/New_York", "0 */1 * * *", "2026-01-01T00:00Z", "2027-01-01T00:00Z", 8759),
]

PARSE_CASES = [
    ("*/15 * * * *", "minutes", {0, 15, 30, 45}),
    ("0 0 * * MON-FRI", "dows", {1, 2, 3, 4, 5}),
    ("0 0 * * 5-7", "dows", {5, 6, 0}),
    ("0 0 * * Fri-7", "dows", {5, 6, 0}),
    ("0 0 * jan-Mar *", "months", {1, 2, 3}),
    ("0 0 * * 1/3", "dows", {1, 4}),
    ("0 0 * * 7/2", "dows", {0}),
    ("0 22/3 * * *", "hours", {22}),
    ("5/20 * * * *", "minutes", {5, 25, 45}),
    ("0 0 1-10/4,20 * *", "doms", {1, 5, 9, 20}),
    ("@weekly", "dows", {0}),
    ("@hourly", "hours", set(range(24))),
]


def self_test(oracle=None) -> bool:
    failures = []
    checks = 0

    def check(ok, what):
        nonlocal checks
        checks += 1
        if not ok:
            failures.append(what)

    # FNV-1a 64 reference vectors
    for data, want in [(b"", 0xCBF29CE484222325), (b"a", 0xAF63DC4C8601EC8C),
                       (b"foobar", 0x85944171F73967E8)]:
        check(co.fnv1a64(data) == want, f"fnv1a64({data!r})")
    check(co.fires_text(co.np.array([29453760, 29453761])) == b"29453760\n29453761\n",
          "hash input text")

    # the system tz database, not the tzdata package
    tz = co.load_zone("America/New_York")
    check(getattr(tz, "key", None) == "America/New_York", "zone key")
    check(os.path.isfile(os.path.join(co.SYSTEM_ZONEINFO, "America/New_York")),
          "system zoneinfo present")

    # parser
    for expr, attr, want in PARSE_CASES:
        try:
            got = set(getattr(co.parse_cron(expr), attr))
        except co.CronError as e:
            got = e
        check(got == want, f"parse {expr!r}.{attr}: got {got}, want {want}")
    c = co.parse_cron("*/2 0 * * *")
    check(c.dom_star and c.dow_star and not c.hour_star, "star flags of '*/2 0 * * *'")
    c = co.parse_cron("0 0 */2 * 1")
    check(c.dom_star and not c.dow_star, "'*/2' day-of-month is a star field")
    check(co.parse_cron("@hourly").hour_star and not co.parse_cron("0 */1 * * *").hour_star,
          "hour_star only for exactly '*'")
    for expr in INVALID:
        try:
            co.parse_cron(expr)
            check(False, f"accepted invalid {expr!r}")
        except co.CronError as e:
            check(e.reason == "invalid_expression", f"reason for {expr!r}")
    # names no date that exists: rejected (belfry's cron_never_fires), unless day-of-week ORs in
    for expr, never in [("0 0 30 2 *", True), ("0 0 31 4,6,9,11 *", True),
                        ("0 0 30 2 */2", True), ("0 0 30 2 1", False), ("0 0 29 2 *", False),
                        ("0 0 31 * *", False), ("0 0 */31 2 *", False)]:
        check(co.can_ever_fire(co.parse_cron(expr)) != never, f"never-fires verdict of {expr!r}")
    for zone in INVALID_ZONES + ["../zoneinfo/UTC", "/etc/localtime", "zone.tab"]:
        try:
            co.load_zone(zone)
            check(False, f"accepted invalid zone {zone!r}")
        except co.CronError as e:
            check(e.reason == "unknown_zone", f"reason for zone {zone!r}")

    # hand-computed fires
    oracle = oracle or co.Oracle(SPAN_LO, SPAN_HI)
    def fires_or_error(zone, expr, a, b):
        try:
            return oracle.fires(zone, expr, [(parse_iso_utc(a), parse_iso_utc(b))]).tolist()
        except co.CronError as e:
            return e

    for zone, expr, a, b, want in HAND_CASES:
        got = fires_or_error(zone, expr, a, b)
        got = got if isinstance(got, Exception) else [iso_utc(m) for m in got]
        check(got == want, f"{zone} {expr!r} [{a},{b}): got {got}, want {want}")
    for zone, expr, a, b, want in COUNT_CASES:
        got = fires_or_error(zone, expr, a, b)
        got = got if isinstance(got, Exception) else len(got)
        check(got == want, f"{zone} {expr!r} [{a},{b}): {got} fires, want {want}")

    # the vectorised oracle against the per-minute evaluation, over the DST weeks of 2026
    naive_pairs = [
        ("America/New_York", "30 2 * * *"),
        ("Australia/Lord_Howe", "0,15,30,45 1-2 * * *"),
        ("America/Santiago", "*/20 23,0 * * SAT,SUN"),
        ("Pacific/Chatham", "*/15 * 4,5,26,27 * 0"),
        ("Africa/Casablanca", "15 2-3 * * *"),
    ]
    for zone, expr in naive_pairs:
        trans = oracle.grid(zone).transitions(epoch_min(2026, 1, 1), epoch_min(2027, 1, 1))
        check(len(trans) == 2, f"{zone}: 2 transitions in 2026, got {len(trans)}")
        for t in trans:
            w = (t - 3 * 1440, t + 3 * 1440)
            got = oracle.fires(zone, expr, [w]).tolist()
            want = naive_fires(zone, expr, *w)
            check(got == want and len(want) > 0,
                  f"naive vs oracle {zone} {expr!r} around {iso_utc(t)}: "
                  f"only oracle {sorted(set(got) - set(want))[:5]}, "
                  f"only naive {sorted(set(want) - set(got))[:5]}")

    for f in failures:
        print(f"self-test FAIL: {f}")
    print(f"self-test: {checks - len(failures)} of {checks} checks passed")
    return not failures


# --------------------------------------------------------------------------------------------
# running and comparing


def windows_text(wins):
    return ",".join(f"{a}:{b}" for a, b in wins)


def parse_result(line):
    """('error', reason) or (count, hash, list-or-None)."""
    parts = line.rstrip("\r\n").split("\t")
    if parts[0] == "error":
        return ("error", "\t".join(parts[1:]))
    if len(parts) < 2 or not parts[0].isdigit():
        raise ValueError(f"unparseable output line {line!r}")
    lst = None
    if len(parts) >= 3:
        lst = [int(x) for x in parts[2].split(",") if x != ""]
    return (int(parts[0]), parts[1].lower(), lst)


def run_tool(tool, mode, wins, jobs, with_list=False):
    cmd = [tool, "--mode", mode, "--windows", windows_text(wins)]
    if with_list:
        cmd.append("--list")
    stdin = "".join(f"{z}\t{e}\n" for z, e in jobs)
    t0 = time.monotonic()
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    took = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}\nstderr:\n{p.stderr[-4000:]}")
    lines = p.stdout.splitlines()
    if len(lines) != len(jobs):
        raise RuntimeError(f"{' '.join(cmd)}: {len(lines)} output lines for {len(jobs)} jobs\n"
                           f"stderr:\n{p.stderr[-4000:]}")
    return [parse_result(x) for x in lines], took


_SPAN_ORACLES = {}


def oracle_for(oracle, wins):
    """`oracle` if its grid spans `wins`, else one (cached) whose grid spans exactly them."""
    lo, hi = min(a for a, _ in wins), max(b for _, b in wins)
    if oracle.lo <= lo and hi <= oracle.hi:
        return oracle
    if (lo, hi) not in _SPAN_ORACLES:
        _SPAN_ORACLES[(lo, hi)] = co.Oracle(lo, hi)
    return _SPAN_ORACLES[(lo, hi)]


def oracle_result(oracle, zone, expr, wins):
    try:
        f = oracle_for(oracle, wins).fires(zone, expr, wins)
    except co.CronError as e:
        return ("error", f"{e.reason}: {e.message}"), None
    return (len(f), f"{co.fires_hash(f):016x}", None), f


def same(a, b):
    if a[0] == "error" or b[0] == "error":
        return a[0] == b[0]  # reasons are free text; both must reject
    return a[0] == b[0] and a[1] == b[1]


def explain(tool, mode, zone, expr, wins, oracle, limit=12):
    print(f"--- mismatch: zone={zone} expr={expr!r} windows={windows_text(wins)}")
    try:
        res, _ = run_tool(tool, mode, wins, [(zone, expr)], with_list=True)
        tres = res[0]
    except Exception as e:  # noqa: BLE001 - report and go on
        print(f"    could not rerun the tool with --list: {e}")
        return
    ores, ofires = oracle_result(oracle, zone, expr, wins)
    for who, r in (("tool:  ", tres), ("oracle:", ores)):
        text = f"error {r[1]}" if r[0] == "error" else f"{r[0]} fires, hash {r[1]}"
        print(f"    {who} {text}")
    if tres[0] == "error" or ores[0] == "error":
        return
    tl = tres[2] or []
    ol = ofires.tolist()
    if tl != sorted(tl):
        print("    tool's --list is not in ascending order")
    if len(tl) != tres[0]:
        print(f"    tool's --list has {len(tl)} minutes but its count is {tres[0]}")
    if f"{co.fnv1a64(co.fires_text(co.np.array(tl, dtype=co.np.int64))):016x}" != tres[1]:
        print("    tool's hash does not match its own --list (hashing differs?)")
    ts, os_ = set(tl), set(ol)
    diff = sorted(ts ^ os_)
    print(f"    {len(ts - os_)} minutes only from the tool, {len(os_ - ts)} only from the oracle;"
          f" first {min(limit, len(diff))}:")
    for m in diff[:limit]:
        who = "tool only  " if m in ts else "oracle only"
        print(f"      {who} {m}  {iso_utc(m)}  local {iso_local(m, zone)}")


def compare(tool, mode, jobs_by_wins, oracle, max_explain=5, lists=False, workers=1):
    """jobs_by_wins: list of (windows, [(zone, expr), ...]).

    Pairs are compared on count and hash; with lists=True the tool also prints its fire lists,
    which are compared with the oracle's minute by minute (a wrong hash then shows up apart).
    The tool runs for up to `workers` batches at once (each run is a process of its own, and in
    tick mode a database of its own); the comparison then goes batch by batch, in order.
    Returns (ok, pairs, fires, seconds in the tool summed over its runs, mismatching pairs)."""
    pairs = fires = mismatches = hash_only = 0
    t_tool = 0.0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        runs = [pool.submit(run_tool, tool, mode, wins, jobs, lists) for wins, jobs in jobs_by_wins]
        results = [r.result() for r in runs]
    for (wins, jobs), (tres, took) in zip(jobs_by_wins, results):
        t_tool += took
        for (zone, expr), tr in zip(jobs, tres):
            orr, ofires = oracle_result(oracle, zone, expr, wins)
            pairs += 1
            if lists and tr[0] != "error" and orr[0] != "error":
                ok = tr[0] == orr[0] and (tr[2] or []) == ofires.tolist()
                if ok and tr[1] != orr[1]:
                    hash_only += 1
            else:
                ok = same(tr, orr)
            if ok:
                if tr[0] != "error":
                    fires += tr[0]
                continue
            mismatches += 1
            if mismatches <= max_explain:
                explain(tool, mode, zone, expr, wins, oracle)
            elif mismatches <= max_explain + 50:
                print(f"--- mismatch: zone={zone} expr={expr!r}: tool {tr[:2]}, oracle {orr[:2]}")
    if mismatches > max_explain + 50:
        print(f"... and {mismatches - max_explain - 50} more mismatching pairs")
    if hash_only:
        print(f"{hash_only} pairs have the oracle's fire list but not its hash: the tool's FNV-1a "
              f"differs (offset basis 0xcbf29ce484222325, prime 0x100000001b3)")
    return mismatches == 0 and hash_only == 0, pairs, fires, t_tool, mismatches + hash_only


def tick_windows(oracle, zone):
    """The 24 hours around each 2026 and 2027 offset change of `zone`, plus half an ordinary day
    (2026-07-15, 00:00-12:00Z). Kept short: the tool runs one real tick query per minute."""
    lo, hi = epoch_min(2026, 1, 1), epoch_min(2028, 1, 1)
    wins = [(t - 720, t + 720) for t in oracle.grid(zone).transitions(lo, hi)]
    wins.append((epoch_min(2026, 7, 15), epoch_min(2026, 7, 15) + 720))
    return co.merge_windows(wins)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tool", help="path to cron_fires_dump")
    ap.add_argument("--tick", action="store_true", help="compare belfry's tick query (PostgreSQL)")
    ap.add_argument("--self-test", action="store_true", help="only run the oracle's self-test")
    ap.add_argument("--oracle-only", action="store_true",
                    help="self-test, then compute the oracle over the full set (no tool)")
    ap.add_argument("--zones", help="comma-separated zones instead of the default set")
    ap.add_argument("--seed", type=int, default=SEED)
    # In tick mode each run mostly waits on PostgreSQL (one tick query per minute, one round trip
    # each), so several runs overlap well even on two cores.
    ap.add_argument("--jobs", type=int, default=4, help="tool runs at once (default 4)")
    ap.add_argument("--max-explain", type=int, default=5, help="mismatches shown in detail")
    ap.add_argument("--lists", action="store_true",
                    help="compare whole fire lists (tool run with --list), not only count+hash")
    args = ap.parse_args(argv)

    t0 = time.monotonic()
    oracle = co.Oracle(SPAN_LO, SPAN_HI)  # one grid per zone, shared by the self-test and the run
    if not self_test(oracle):
        return 1
    print(f"self-test took {time.monotonic() - t0:.1f}s")
    if args.self_test:
        return 0
    if not args.tool and not args.oracle_only:
        ap.error("--tool PATH is required (or --self-test / --oracle-only)")
    if args.tool and not os.access(args.tool, os.X_OK):
        print(f"cron_differential: tool {args.tool!r} is not an executable file")
        return 1

    zones = args.zones.split(",") if args.zones else ZONES
    exprs = generate(args.seed)
    if args.tick:
        mode = "tick"
        sub = tick_subset(exprs, args.seed)
        batches = [(tick_windows(oracle, z), [(z, e) for e in sub]) for z in zones]
        # rejections are checked once, in the first zone's batch
        batches[0][1].extend((zones[0], e) for e in INVALID[:5])
    else:
        mode = "next"
        if args.lists:  # one tool run per zone keeps the --list output to ~20 MB a run
            batches = [([(SPAN_LO, SPAN_HI)], [(z, e) for e in exprs]) for z in zones]
        else:
            batches = [([(SPAN_LO, SPAN_HI)], [(z, e) for z in zones for e in exprs])]
        batches[0][1].extend((zones[0], e) for e in INVALID)
        batches[0][1].extend((z, "0 0 * * *") for z in INVALID_ZONES)
        # Far ahead, past the transitions a TZif file lists (2037): its POSIX TZ footer rules.
        batches.append((FAR_WINDOWS, [(z, e) for z in zones for e in exprs]))
        # Zones that changed their rules: the listed transitions, not today's rules, apply.
        for zone, wins in RULE_CHANGES:
            batches.append((wins, [(zone, e) for e in exprs]))
    n_jobs = sum(len(j) for _, j in batches)
    n_exprs = len(sub) if args.tick else len(exprs)
    print(f"mode {mode}: {n_exprs} expressions x {len(zones)} zones + rejections = {n_jobs} pairs")

    if args.oracle_only:
        t1 = time.monotonic()
        total = 0
        for wins, jobs in batches:
            for z, e in jobs:
                r, _ = oracle_result(oracle, z, e, wins)
                total += r[0] if r[0] != "error" else 0
        print(f"oracle: {n_jobs} pairs, {total} fires in {time.monotonic() - t1:.1f}s")
        print(f"total time {time.monotonic() - t0:.1f}s")
        return 0

    t1 = time.monotonic()
    try:
        ok, pairs, fires, t_tool, bad = compare(args.tool, mode, batches, oracle,
                                                args.max_explain, args.lists, workers=args.jobs)
    except RuntimeError as e:
        print(f"cron_differential: tool failed: {e}")
        return 1
    t_all = time.monotonic() - t0
    print(f"summary: mode {mode}, {pairs} pairs compared, {bad} mismatching, {fires} fires "
          f"compared (in matching pairs); tool {t_tool:.1f}s summed over its runs "
          f"({args.jobs} at once), tool+oracle+compare {time.monotonic() - t1:.1f}s, total {t_all:.1f}s")
    print("cron_differential: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
