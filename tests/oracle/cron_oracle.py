#!/usr/bin/env python3
"""Brute-force reference ("oracle") for belfry's calendar schedules.

A job is a standard 5-field cron expression plus an IANA time zone. This module decides, for
every UTC minute of some windows, whether the job fires there, by brute force over every UTC
minute, and without sharing any code or library with belfry (no croniter: the parser below is
its own). It is the other half of tests/oracle/cron_differential.py.

Semantics (from the calendar-schedules issue):
  * fields: minute 0-59, hour 0-23, day-of-month 1-31, month 1-12 or JAN-DEC, day-of-week 0-7
    (0 and 7 = Sunday) or SUN-SAT; names are case-insensitive and can be range ends. Per field:
    `*`, `n`, `a-b`, lists `x,y`, steps `*/n`, `a-b/n`, `a/n` (= a through the field's max).
    Macros @yearly @annually @monthly @weekly @daily @midnight @hourly.
  * day rule (Vixie): a field is "star" if its text begins with `*`. If neither day-of-month nor
    day-of-week is star a day matches when either matches, otherwise both must. Month always.
    An expression that matches no date at all (`0 0 30 2 *`) is rejected (cron_never_fires), as
    belfry rejects it.
  * local wall time of UTC minute M: datetime.fromtimestamp(M*60, zone), floored to the minute.
  * hour field exactly `*` ("real time"): fire at M iff local(M) matches.
  * otherwise ("wall time"): if local(M) - local(M-1) > 1 min (spring-forward gap) fire once at M
    iff any local minute in (local(M-1), local(M)] matches; else if local(M) already occurred at
    an earlier UTC minute (fall-back repeat) do not fire; else fire iff local(M) matches.

Time zones come from the system tz database (/usr/share/zoneinfo, Debian's tzdata), read
directly with ZoneInfo.from_file, so the `tzdata` PyPI package is never consulted even if it is
installed (zoneinfo would fall back to it for a key missing from the system directory).

CLI (same stdin/stdout format as belfry's `cron_fires_dump`, so the two can be diffed by hand):
  python3 cron_oracle.py --windows A:B[,C:D...] [--list] < jobs.tsv
  stdin: "<zone>\\t<cron expression>" per line; A, B: UTC epoch minutes, windows half-open.
  stdout per line: "<count>\\t<fnv1a64 hex>" [+ "\\t<m1>,<m2>,..." with --list]
                   or "error\\t<reason>: <message>".
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import re
import sys
import zoneinfo
from dataclasses import dataclass

try:
    import numpy as np
except ImportError:  # pragma: no cover - environment problem, not a test result
    sys.stderr.write("cron_oracle: numpy is required (run scripts/setup, or "
                     "`python3 -m pip install numpy`)\n")
    raise

SYSTEM_ZONEINFO = "/usr/share/zoneinfo"
# Belt and braces: even ZoneInfo(key) would now only search the system directory (and then the
# tzdata package); load_zone() below does not use the search path at all.
zoneinfo.reset_tzpath([SYSTEM_ZONEINFO])

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK64 = 0xFFFFFFFFFFFFFFFF

# How far before a window the per-zone grid starts, in minutes. The fall-back rule needs the
# local times of earlier UTC minutes, the gap rule the one just before. Real zones never move
# back by more than a day; three days is plenty.
LOOKBACK_MIN = 3 * 1440

MONTH_NAMES = {n: i + 1 for i, n in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])}
DOW_NAMES = {n: i for i, n in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

# (name, lo, hi, names). `*` runs from lo to hi and `a/n` from a to hi, except that day-of-week
# `a/n` ends at Saturday (6): `1/3` is Mon and Thu, not Sun too (7 is just another name for
# Sunday; docs/calendar-schedules.md). `*/n` is the same over 0-6 or 0-7.
FIELD_SPECS = [
    ("minute", 0, 59, None),
    ("hour", 0, 23, None),
    ("day-of-month", 1, 31, None),
    ("month", 1, 12, MONTH_NAMES),
    ("day-of-week", 0, 7, DOW_NAMES),
]

_DIGITS = re.compile(r"[0-9]+\Z")


class CronError(ValueError):
    """A rejected job. reason: 'invalid_expression', 'unknown_zone' or 'cron_never_fires'."""

    def __init__(self, reason: str, message: str):
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


# --------------------------------------------------------------------------------------------
# parsing


def _value(tok: str, field: tuple) -> int:
    name, lo, hi, names = field
    if _DIGITS.match(tok):
        v = int(tok)
    elif names is not None and tok.lower() in names:
        v = names[tok.lower()]
    else:
        raise CronError("invalid_expression", f"{name}: bad value {tok!r}")
    if not lo <= v <= hi:
        raise CronError("invalid_expression", f"{name}: {v} out of range {lo}-{hi}")
    return v


def _parse_field(text: str, field: tuple) -> frozenset:
    name, lo, hi, _ = field
    out = set()
    for elem in text.split(","):
        if elem == "":
            raise CronError("invalid_expression", f"{name}: empty list element in {text!r}")
        if "/" in elem:
            base, step_txt = elem.split("/", 1)
            if not _DIGITS.match(step_txt):
                raise CronError("invalid_expression", f"{name}: bad step in {elem!r}")
            step = int(step_txt)
            if step == 0:
                raise CronError("invalid_expression", f"{name}: step 0 in {elem!r}")
        else:
            base, step = elem, None
        if base == "*":
            a, b = lo, hi
        elif "-" in base:
            a_txt, b_txt = base.split("-", 1)
            a, b = _value(a_txt, field), _value(b_txt, field)
            if a > b:
                raise CronError("invalid_expression", f"{name}: reversed range {base!r}")
        else:
            a = _value(base, field)
            # `a/n` = a through the field's max; for day-of-week that max is Saturday (6), as in
            # docs/calendar-schedules.md: 7 is only another name for Sunday.
            b = (6 if name == "day-of-week" and a <= 6 else hi) if step is not None else a
        out.update(range(a, b + 1, step or 1))
    return frozenset(out)


@dataclass(frozen=True)
class Cron:
    text: str
    minutes: frozenset
    hours: frozenset
    doms: frozenset
    months: frozenset
    dows: frozenset  # 0-6, Sunday = 0 (7 folded into 0)
    dom_star: bool
    dow_star: bool
    hour_star: bool  # hour field text exactly "*": real-time semantics

    def tables(self):
        """Boolean lookup tables: minute[60], hour[24], dom[32], month[13], dow[7]."""
        def tab(n, vals):
            t = np.zeros(n, dtype=bool)
            t[list(vals)] = True
            return t
        return (tab(60, self.minutes), tab(24, self.hours), tab(32, self.doms),
                tab(13, self.months), tab(7, self.dows))

    def matches_fields(self, minute, hour, dom, month, dow) -> bool:
        """Scalar match of one local wall time (dow: 0 = Sunday)."""
        if minute not in self.minutes or hour not in self.hours or month not in self.months:
            return False
        dm, wm = dom in self.doms, dow in self.dows
        if self.dom_star or self.dow_star:
            return dm and wm
        return dm or wm


def parse_cron(text: str) -> Cron:
    expr = text.strip()
    if expr.startswith("@"):
        if expr not in MACROS:
            raise CronError("invalid_expression", f"unknown macro {expr!r}")
        expr = MACROS[expr]
    fields = expr.split()
    if len(fields) != 5:
        raise CronError("invalid_expression", f"expected 5 fields, got {len(fields)}")
    sets = [_parse_field(f, spec) for f, spec in zip(fields, FIELD_SPECS)]
    dows = frozenset(0 if d == 7 else d for d in sets[4])
    return Cron(text=text, minutes=sets[0], hours=sets[1], doms=sets[2], months=sets[3],
                dows=dows, dom_star=fields[2].startswith("*"),
                dow_star=fields[4].startswith("*"), hour_star=(fields[1] == "*"))


_CYCLE = None  # (dom, month, dow) of every day of a whole 400-year Gregorian cycle


def can_ever_fire(cron: Cron) -> bool:
    """Does any calendar date at all match? Brute force over 2000-01-01 .. 2399-12-31, which
    holds every (day-of-month, month, day-of-week) combination the calendar ever has."""
    global _CYCLE
    if _CYCLE is None:
        days = np.arange("2000-01-01", "2400-01-01", dtype="datetime64[D]")
        months = days.astype("datetime64[M]")
        _CYCLE = ((days - months).astype(np.intp) + 1,
                  months.astype(np.intp) % 12 + 1,
                  (days.astype(np.intp) + 4) % 7)  # 1970-01-01 was a Thursday
    dom, month, dow = _CYCLE
    _, _, dm, mo, dw = cron.tables()
    day_ok = (dm[dom] & dw[dow]) if (cron.dom_star or cron.dow_star) else (dm[dom] | dw[dow])
    return bool((day_ok & mo[month]).any())


def check_can_fire(cron: Cron) -> None:
    """belfry rejects an expression that names no date that exists (`0 0 30 2 *`) with
    reason cron_never_fires; so does the oracle, by its own brute force."""
    if not can_ever_fire(cron):
        raise CronError("cron_never_fires", f"cron {cron.text.strip()!r} matches no date")


# --------------------------------------------------------------------------------------------
# zones

_ZONE_KEY = re.compile(r"[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*\Z")
_zone_cache: dict = {}


def load_zone(key: str) -> zoneinfo.ZoneInfo:
    """The zone `key` read from the system tz database, never from the tzdata PyPI package."""
    if key in _zone_cache:
        return _zone_cache[key]
    if not _ZONE_KEY.match(key) or any(p in (".", "..") for p in key.split("/")):
        raise CronError("unknown_zone", f"bad time zone name {key!r}")
    path = os.path.join(SYSTEM_ZONEINFO, key)
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"TZif":
                raise CronError("unknown_zone", f"{key!r} is not a time zone")
            f.seek(0)
            tz = zoneinfo.ZoneInfo.from_file(f, key=key)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        raise CronError("unknown_zone", f"unknown time zone {key!r}") from None
    except ValueError as e:
        raise CronError("unknown_zone", f"unreadable time zone {key!r}: {e}") from None
    _zone_cache[key] = tz
    return tz


def offsets_seconds(tz, first: int, end: int) -> np.ndarray:
    """UTC offset in seconds of every UTC minute in [first, end), one zoneinfo call each."""
    fts = _dt.datetime.fromtimestamp
    offs = [fts(t, tz).utcoffset() for t in range(first * 60, end * 60, 60)]
    secs = {o: int(o.total_seconds()) for o in set(offs)}
    return np.fromiter(map(secs.__getitem__, offs), dtype=np.int64, count=len(offs))


_EPOCH_DATE = _dt.date(1970, 1, 1)


class ZoneGrid:
    """Local wall time of every UTC minute in [lo - LOOKBACK_MIN, hi) for one zone."""

    def __init__(self, zone: str, lo: int, hi: int):
        self.zone = zone
        self.tz = load_zone(zone)
        self.lo, self.hi = lo, hi
        self.first = lo - LOOKBACK_MIN
        utc = np.arange(self.first, hi, dtype=np.int64)
        off = offsets_seconds(self.tz, self.first, hi)
        local = (utc * 60 + off) // 60  # local wall minute since 1970-01-01T00:00 (floored)
        self.utc, self.off, self.local = utc, off, local
        day0 = int(local.min()) // 1440
        ndays = (int(local.max()) - day0 * 1440) // 1440 + 1
        self.lbase = day0 * 1440
        self.ndays = ndays
        self.idx = (local - self.lbase).astype(np.intp)
        dates = [_EPOCH_DATE + _dt.timedelta(days=day0 + d) for d in range(ndays)]
        self.day_dom = np.array([d.day for d in dates], dtype=np.intp)
        self.day_month = np.array([d.month for d in dates], dtype=np.intp)
        self.day_dow = np.array([(d.weekday() + 1) % 7 for d in dates], dtype=np.intp)
        # gap: local(M) - local(M-1) > 1 minute; index i refers to utc[i]
        self.gaps = np.flatnonzero(np.diff(local) > 1) + 1
        # repeat: local(M) <= some local(M') with M' < M
        runmax = np.maximum.accumulate(local)
        rep = np.zeros(len(local), dtype=bool)
        rep[1:] = local[1:] <= runmax[:-1]
        self.not_repeated = ~rep

    def local_match_table(self, cron: Cron) -> np.ndarray:
        """matchL[i]: does local wall minute lbase + i match the expression's fields?"""
        mi, hr, dm, mo, dw = cron.tables()
        mod_ok = (hr[:, None] & mi[None, :]).ravel()  # minute of day 0..1439
        dom_m, dow_m = dm[self.day_dom], dw[self.day_dow]
        day_ok = (dom_m & dow_m) if (cron.dom_star or cron.dow_star) else (dom_m | dow_m)
        day_ok &= mo[self.day_month]
        return (day_ok[:, None] & mod_ok[None, :]).ravel()

    def fires(self, cron: Cron, windows) -> np.ndarray:
        """Ascending UTC epoch minutes in the union of `windows` at which the job fires."""
        match_l = self.local_match_table(cron)
        parts = []
        for a, b in merge_windows(windows):
            if a < self.lo or b > self.hi:
                raise ValueError(f"window {a}:{b} outside grid {self.lo}:{self.hi}")
            s, e = a - self.first, b - self.first
            m = match_l[self.idx[s:e]]
            if not cron.hour_star:
                m &= self.not_repeated[s:e]
                g0, g1 = np.searchsorted(self.gaps, [s, e])
                for g in self.gaps[g0:g1].tolist():
                    lo_i = int(self.local[g - 1]) + 1 - self.lbase
                    hi_i = int(self.local[g]) + 1 - self.lbase
                    m[g - s] = bool(match_l[lo_i:hi_i].any())
            parts.append(np.flatnonzero(m) + a)
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate(parts).astype(np.int64)

    def transitions(self, lo=None, hi=None):
        """UTC minutes M in [lo, hi) where the offset differs from that of M-1."""
        idx = np.flatnonzero(np.diff(self.off)) + 1
        t = self.utc[idx]
        lo = self.lo if lo is None else lo
        hi = self.hi if hi is None else hi
        return [int(x) for x in t if lo <= x < hi]


def merge_windows(windows):
    out = []
    for a, b in sorted((int(a), int(b)) for a, b in windows):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [tuple(w) for w in out]


# --------------------------------------------------------------------------------------------
# hashing and output


def fnv1a64(data: bytes, h: int = FNV_OFFSET) -> int:
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & MASK64
    return h


def fires_text(fires) -> bytes:
    if len(fires) == 0:
        return b""
    return ("\n".join(map(str, fires.tolist())) + "\n").encode("ascii")


def fires_hash(fires) -> int:
    return fnv1a64(fires_text(fires))


def format_result(fires, with_list: bool) -> str:
    line = f"{len(fires)}\t{fires_hash(fires):016x}"
    if with_list:
        line += "\t" + ",".join(map(str, fires.tolist()))
    return line


class Oracle:
    """Caches one ZoneGrid per zone for a fixed span [lo, hi)."""

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi
        self._grids: dict = {}

    def grid(self, zone: str) -> ZoneGrid:
        g = self._grids.get(zone)
        if g is None:
            g = self._grids[zone] = ZoneGrid(zone, self.lo, self.hi)
        return g

    def fires(self, zone: str, expr: str, windows) -> np.ndarray:
        cron = parse_cron(expr)  # expression errors first, then the zone, then "never fires"
        grid = self.grid(zone)
        check_can_fire(cron)
        return grid.fires(cron, windows)


def parse_windows(text: str):
    wins = []
    for part in text.split(","):
        a, sep, b = part.partition(":")
        if not sep or not re.fullmatch(r"-?[0-9]+", a) or not re.fullmatch(r"-?[0-9]+", b):
            raise ValueError(f"bad window {part!r} (want A:B in UTC epoch minutes)")
        if int(b) < int(a):
            raise ValueError(f"bad window {part!r}: end before start")
        wins.append((int(a), int(b)))
    return wins


def run_lines(lines, windows, with_list=False, oracle=None):
    """One output line per input line, in the CLI format."""
    wins = merge_windows(windows)
    if oracle is None:
        lo = min((a for a, _ in wins), default=0)
        hi = max((b for _, b in wins), default=0)
        oracle = Oracle(lo, hi)
    out = []
    for line in lines:
        line = line.rstrip("\r\n")
        zone, sep, expr = line.partition("\t")
        try:
            if not sep:
                raise CronError("invalid_expression", "input line has no tab")
            if not wins:
                f = np.zeros(0, dtype=np.int64)
                cron = parse_cron(expr)
                load_zone(zone)
                check_can_fire(cron)
            else:
                f = oracle.fires(zone, expr, wins)
            out.append(format_result(f, with_list))
        except CronError as e:
            out.append(f"error\t{e.reason}: {e.message}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--windows", required=True, help="A:B[,C:D...] UTC epoch minutes, half-open")
    ap.add_argument("--list", action="store_true", help="append the fire minutes")
    ap.add_argument("--mode", choices=["next", "tick"], default="next",
                    help="accepted for drop-in use with cron_fires_dump; ignored")
    args = ap.parse_args(argv)
    try:
        wins = parse_windows(args.windows)
    except ValueError as e:
        ap.error(str(e))
    out = run_lines(sys.stdin.read().splitlines(), wins, args.list)
    sys.stdout.write("".join(x + "\n" for x in out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
