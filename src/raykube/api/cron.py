"""Cron schedules as KubeRay v1.6.1's RayCronJob reads them: robfig/cron v3's ``ParseStandard`` and ``Schedule.Next``.

A schedule is five fields (minute, hour, day of month, month, day of week; numbers, ranges, steps, lists, ``*``/``?``
and month/day names), or a descriptor (``@yearly``/``@annually``, ``@monthly``, ``@weekly``, ``@daily``/
``@midnight``, ``@hourly``, ``@every <Go duration>``), optionally prefixed with ``TZ=<zone> `` or ``CRON_TZ=<zone> ``.
:func:`parse` raises :class:`CronError` with robfig/cron's own error text (KubeRay prints it after
"invalid cron schedule: "). :meth:`Schedule.next` is robfig's ``Next``: the first activation strictly after a moment,
computed on the wall clock of the schedule's zone (the prefix's, else the zone given, else the operator's local zone
as Go's ``time.Local``) and returned in UTC, or ``None`` when there is none within five years (``0 0 30 2 *``).

Two details of robfig/cron that decide which days fire are kept: a day-of-month or day-of-week field that starts with
``*`` or ``?`` (with no step, or step 1) makes the day match only when *both* fields match, otherwise *either* one
(Vixie cron's rule); and ``@every`` rounds down to whole seconds (at least one), counting from the moment given
less its fraction of a second. Wall-clock times that do not exist in the zone (a DST gap) are skipped; an ambiguous
one (a DST fold) is two moments, and fires at whichever comes first after the moment given, as robfig's does. In
zones whose DST shift is not a whole hour (Australia/Lord_Howe) robfig skips some hours near the shift; this does
not. tests/vectors/cron.json holds robfig/cron v3.0.1's own answers (tools/govectors, ``make vectors``) for 25
curated cases and 8,000 random schedules and moments in nine zones (Lord_Howe left out, for that reason); this agrees
on all 8,025.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from raykube.golang.duration import parse_duration
from raykube.golang.errors import GoError
from raykube.golang.fmt import sprint_strings
from raykube.golang.strconv import atoi

__all__ = ["CronError", "Schedule", "local_zone", "parse"]

_MONTH_NAMES: Final = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1
    )
}
_DOW_NAMES: Final = {name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# minute, hour, day of month, month, day of week: robfig/cron v3's bounds and names.
_FIELDS: Final[tuple[tuple[int, int, Mapping[str, int]], ...]] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (1, 12, _MONTH_NAMES),
    (0, 6, _DOW_NAMES),
)
# Go's unicode.IsSpace, which strings.Fields splits on: Python's \s less the separators U+001C..U+001F.
_GO_SPACE_RE: Final = re.compile(r"(?:(?![\x1c-\x1f])\s)+")
_DESCRIPTORS: Final[Mapping[str, str]] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_EVERY: Final = "@every "
_NANOS_PER_SECOND: Final = 1_000_000_000
_SEARCH_DAYS: Final = 5 * 366  # robfig gives up after five years


class CronError(ValueError):
    """A schedule robfig/cron's ``ParseStandard`` rejects; the message is its error text."""


def local_zone() -> dt.tzinfo:
    """The operator's local zone, as Go's ``time.Local``: ``$TZ`` (empty means UTC), else ``/etc/localtime``."""
    name = os.environ.get("TZ")
    if name is not None:
        if name in ("", "UTC"):
            return dt.UTC
        try:
            return zoneinfo.ZoneInfo(name.removeprefix(":"))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            return dt.UTC
    try:
        with Path("/etc/localtime").open("rb") as tzfile:
            return zoneinfo.ZoneInfo.from_file(tzfile, key="Local")
    except (OSError, ValueError):
        return dt.UTC


def load_location(name: str) -> dt.tzinfo:
    """Go's ``time.LoadLocation``; raises :class:`CronError` with its error text."""
    if name in ("", "UTC"):
        return dt.UTC
    if name == "Local":
        return local_zone()
    if ".." in name or name.startswith(("/", "\\")):
        raise CronError("time: invalid location name")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise CronError(f"unknown time zone {name}") from None


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: the allowed values of each field, or a fixed delay (``@every``)."""

    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    weekdays: frozenset[int] = frozenset()  # 0 = Sunday
    days_star: bool = False  # the day-of-month field starts with * or ?: robfig's star bit
    weekdays_star: bool = False
    every_seconds: int | None = None  # @every, whole seconds
    zone: dt.tzinfo | None = None  # from a TZ=/CRON_TZ= prefix; else the zone next() is given

    def _day_matches(self, day: dt.date) -> bool:
        in_month = day.day in self.days
        in_week = (day.isoweekday() % 7) in self.weekdays
        if self.days_star or self.weekdays_star:
            return in_month and in_week
        return in_month or in_week

    def next(self, after: dt.datetime, zone: dt.tzinfo | None = None) -> dt.datetime | None:
        """The first activation strictly after ``after`` (an aware datetime), in the schedule's zone (``zone`` or
        the local zone when the schedule has no prefix); ``None`` if none comes within five years."""
        if self.every_seconds is not None:
            return after.replace(microsecond=0) + dt.timedelta(seconds=self.every_seconds)
        tz = self.zone or zone or local_zone()
        # robfig: one second later with the fraction dropped, so the first whole minute after that second.
        floor = after.replace(microsecond=0)
        day = floor.astimezone(tz).date()
        for _ in range(_SEARCH_DAYS):
            if day.month in self.months and self._day_matches(day):
                found = self._first_time_of_day(day, floor, tz)
                if found is not None:
                    return found
            day += dt.timedelta(days=1)
        return None

    def _first_time_of_day(self, day: dt.date, floor: dt.datetime, tz: dt.tzinfo) -> dt.datetime | None:
        """The earliest activation on ``day`` (wall clock) after ``floor``. A wall-clock time the zone repeats (DST
        fold) is two moments; one it skips (DST gap) is none."""
        start = dt.datetime.combine(day, dt.time())
        if _steady(start, tz):  # no fold, no gap: wall-clock order is time order, the first later wall time wins
            after = floor.astimezone(tz).replace(tzinfo=None)
            for hour in sorted(self.hours):
                if start.replace(hour=hour, minute=59) <= after:
                    continue
                for minute in sorted(self.minutes):
                    wall = start.replace(hour=hour, minute=minute)
                    if wall > after:
                        return wall.replace(tzinfo=tz).astimezone(dt.UTC)
            return None
        candidates = []
        for hour in self.hours:
            for minute in self.minutes:
                wall = dt.datetime.combine(day, dt.time(hour, minute))
                for fold in (0, 1):
                    moment = wall.replace(tzinfo=tz, fold=fold)
                    if moment.astimezone(dt.UTC).astimezone(tz).replace(tzinfo=None) != wall:
                        continue  # skipped by the zone (DST gap)
                    if moment > floor:
                        candidates.append(moment.astimezone(dt.UTC))
        return min(candidates) if candidates else None  # in UTC: a folded local time compares unequal (PEP 495)


def _steady(start: dt.datetime, tz: dt.tzinfo) -> bool:
    """The zone's offset is one from ``start`` (a naive midnight) to the next midnight, neither of them in a fold or a
    gap: the day has no DST transition. (Two transitions within one day that cancel out would pass for steady; the
    exhaustive search of ``_first_time_of_day`` is for every other day.)"""
    offsets = {
        start.replace(tzinfo=tz, fold=0).utcoffset(),
        start.replace(tzinfo=tz, fold=1).utcoffset(),
        (start + dt.timedelta(days=1)).replace(tzinfo=tz, fold=0).utcoffset(),
        (start + dt.timedelta(days=1)).replace(tzinfo=tz, fold=1).utcoffset(),
    }
    return len(offsets) == 1


def _number(text: str, names: Mapping[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    try:
        number = atoi(text)
    except GoError as error:
        raise CronError(f"failed to parse int from {text}: {error}") from None
    if number < 0:
        raise CronError(f"negative number ({number}) not allowed: {text}")
    return number


def _range(expr: str, low: int, high: int, names: Mapping[str, int]) -> tuple[range, bool]:
    """One comma-separated part of a field (``a``, ``a-b``, ``*``, each with an optional ``/step``): its values and
    whether it sets robfig's star bit (``*``/``?`` with no step above 1)."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    star = low_and_high[0] in ("*", "?")
    if star:
        start, end = low, high
    else:
        start = _number(low_and_high[0], names)
        if len(low_and_high) > 2:
            raise CronError(f"too many hyphens: {expr}")
        end = _number(low_and_high[1], names) if len(low_and_high) == 2 else start
    if len(range_and_step) > 2:
        raise CronError(f"too many slashes: {expr}")
    step = _number(range_and_step[1], {}) if len(range_and_step) == 2 else 1
    if len(range_and_step) == 2 and len(low_and_high) == 1:
        end = high
    if step > 1:
        star = False
    problems = (
        (start < low, f"beginning of range ({start}) below minimum ({low}): {expr}"),
        (end > high, f"end of range ({end}) above maximum ({high}): {expr}"),
        (start > end, f"beginning of range ({start}) beyond end of range ({end}): {expr}"),
        (step == 0, f"step of range should be a positive number: {expr}"),
    )
    for failed, message in problems:
        if failed:
            raise CronError(message)
    return range(start, end + 1, step), star


def _field(text: str, low: int, high: int, names: Mapping[str, int]) -> tuple[frozenset[int], bool]:
    values: set[int] = set()
    star = False
    for expr in (part for part in text.split(",") if part):
        numbers, part_star = _range(expr, low, high, names)
        values.update(numbers)
        star = star or part_star
    return frozenset(values), star


def _every(text: str) -> int:
    try:
        nanos = parse_duration(text[len(_EVERY) :])
    except GoError as error:
        raise CronError(f"failed to parse duration {text}: {error}") from None
    return max(nanos, _NANOS_PER_SECOND) // _NANOS_PER_SECOND


def _fields(text: str, zone: dt.tzinfo | None) -> Schedule:
    fields = [field for field in _GO_SPACE_RE.split(text) if field]
    if len(fields) != len(_FIELDS):
        raise CronError(f"expected exactly {len(_FIELDS)} fields, found {len(fields)}: {sprint_strings(fields)}")
    (minutes, _), (hours, _), (days, days_star), (months, _), (weekdays, weekdays_star) = (
        _field(field, low, high, names) for field, (low, high, names) in zip(fields, _FIELDS, strict=True)
    )
    return Schedule(minutes, hours, days, months, weekdays, days_star, weekdays_star, zone=zone)


def parse(schedule: str) -> Schedule:
    """robfig/cron v3 ``ParseStandard``; raises :class:`CronError` with its error text."""
    if not schedule:
        raise CronError("empty spec string")
    spec = schedule
    zone: dt.tzinfo | None = None
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        if space < 0:  # robfig slices past the end here (a panic); say what is missing instead
            raise CronError(f"provided bad location {spec[spec.index('=') + 1 :]}: no schedule after the time zone")
        name = spec[spec.index("=") + 1 : space]
        try:
            zone = load_location(name)
        except CronError as error:
            raise CronError(f"provided bad location {name}: {error}") from None
        spec = spec[space:].strip()
    if spec.startswith("@"):
        if spec.startswith(_EVERY):
            return Schedule(every_seconds=_every(spec), zone=zone)
        if spec not in _DESCRIPTORS:
            raise CronError(f"unrecognized descriptor: {spec}")
        return _fields(_DESCRIPTORS[spec], zone)
    return _fields(spec, zone)
