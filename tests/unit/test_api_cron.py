"""Cron schedules as robfig/cron v3 reads them (KubeRay v1.6.1's RayCronJob).

Every expected value below was printed by robfig/cron v3.0.1 itself (``cron.ParseStandard(spec)`` then
``Next(t.In(zone))``, or its error text), for the same inputs; 8,000 random schedules and moments compared the same
way agreed except in Australia/Lord_Howe, whose half-hour DST shift robfig mishandles (see ``raykube.api.cron``).
"""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raykube.api import cron

NOW = "2026-12-03T17:30:00Z"

NEXT = [
    ("* * * * *", NOW, "UTC", "2026-12-03T17:31:00Z"),
    ("* * * * *", "2026-12-03T17:29:59.5Z", "UTC", "2026-12-03T17:30:00Z"),
    ("*/15 * * * *", "2026-12-03T17:31:00Z", "UTC", "2026-12-03T17:45:00Z"),
    ("0 9 1 * 1", NOW, "UTC", "2026-12-07T09:00:00Z"),  # day of month OR day of week
    ("0 9 * * 1", NOW, "UTC", "2026-12-07T09:00:00Z"),
    ("0 9 */2 * 1", NOW, "UTC", "2026-12-05T09:00:00Z"),  # */2 is no star: OR again
    ("0 0 30 2 *", NOW, "UTC", None),
    ("@weekly", NOW, "UTC", "2026-12-06T00:00:00Z"),
    ("@every 1m30s", "2026-12-03T17:30:00.7Z", "UTC", "2026-12-03T17:31:30Z"),
    ("@every 300ms", "2026-12-03T17:30:00.7Z", "UTC", "2026-12-03T17:30:01Z"),
    ("CRON_TZ=Asia/Tokyo 0 9 * * *", NOW, "UTC", "2026-12-04T00:00:00Z"),
    ("30 2 * * *", "2026-03-08T06:00:00Z", "America/New_York", "2026-03-09T06:30:00Z"),  # 02:30 skipped (DST gap)
    ("23 * * * *", "2026-11-01T05:30:00Z", "America/New_York", "2026-11-01T06:23:00Z"),  # 01:23 again (DST fold)
    ("0 12 * JAN-MAR sun", NOW, "UTC", "2027-01-03T12:00:00Z"),
]

ERRORS = [
    ("", "empty spec string"),
    ("TZ=Mars/X * * * * *", "provided bad location Mars/X: unknown time zone Mars/X"),
    ("0 0 1 1 7", "end of range (7) above maximum (6): 7"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
]


def moment(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.parametrize(("spec", "after", "zone", "expected"), NEXT)
def test_next_is_robfigs(spec: str, after: str, zone: str, expected: str | None) -> None:
    found = cron.parse(spec).next(moment(after), zoneinfo.ZoneInfo(zone))
    assert found == (moment(expected) if expected else None)


@pytest.mark.parametrize(("spec", "message"), ERRORS)
def test_errors_are_robfigs(spec: str, message: str) -> None:
    with pytest.raises(cron.CronError) as caught:
        cron.parse(spec)
    assert str(caught.value) == message


def test_the_prefix_zone_wins_over_the_zone_given() -> None:
    schedule = cron.parse("TZ=Asia/Tokyo 0 9 * * *")
    assert schedule.next(moment(NOW), zoneinfo.ZoneInfo("America/New_York")) == moment("2026-12-04T00:00:00Z")


def test_a_schedule_without_zone_uses_the_operators(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    assert cron.parse("0 9 * * *").next(moment(NOW)) == moment("2026-12-04T00:00:00Z")
    monkeypatch.setenv("TZ", "")
    assert cron.parse("0 9 * * *").next(moment(NOW)) == moment("2026-12-04T09:00:00Z")


@given(
    st.sampled_from(["* * * * *", "*/7 * * * *", "0 */5 * * *", "15 3 * * 1-5", "0 0 1,15 * *", "@hourly", "@daily"]),
    st.datetimes(min_value=dt.datetime(2020, 1, 1), max_value=dt.datetime(2035, 1, 1), timezones=st.just(dt.UTC)),
    st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"]),
)
def test_next_is_a_later_whole_minute_that_matches(spec: str, after: dt.datetime, zone: str) -> None:
    schedule = cron.parse(spec)
    tz = zoneinfo.ZoneInfo(zone)
    found = schedule.next(after, tz)
    assert found is not None
    assert found > after
    assert found.second == 0
    assert found.microsecond == 0
    assert found - after <= dt.timedelta(days=31)
    wall = found.astimezone(tz)
    assert wall.minute in schedule.minutes
    assert wall.hour in schedule.hours
    # nothing matches in between: the minute before the answer (if after `after`) is not an activation
    before = found - dt.timedelta(minutes=1)
    if before > after:
        assert schedule.next(before - dt.timedelta(seconds=1), tz) == found
