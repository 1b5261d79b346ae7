"""Cron schedules as robfig/cron v3 reads them (KubeRay v1.6.1's RayCronJob).

The expected values come from robfig/cron v3.0.1 itself: tests/vectors/cron.json is written by tools/govectors
(``make vectors``: ``cron.ParseStandard(spec)`` then ``Next(after.In(zone))``, or its error text) for 25 curated
cases and 8,000 random schedules and moments in nine zones, six of them with DST; raykube agrees on all 8,025.
Australia/Lord_Howe, whose half-hour DST shift robfig mishandles, is left out of the random zones (see
``raykube.api.cron`` and the file's header).
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raykube.api import cron
from tests.vectors import compare

VECTORS = compare.load("cron")
NOW = "2026-12-03T17:30:00Z"


def moment(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.parametrize("case", VECTORS.labelled(), ids=lambda case: case["label"])
def test_curated_case_is_robfigs(case: dict[str, Any]) -> None:
    assert compare.compare("cron", case) is None


def test_curated_cases_cover_errors_and_dst() -> None:
    labelled = VECTORS.labelled()
    assert sum(case["error"] is not None for case in labelled) >= 8
    assert {"02:30 skipped (DST gap)", "01:23 again (DST fold)"} <= {case["label"] for case in labelled}


def test_every_vector_is_robfigs() -> None:
    result = compare.assert_agrees("cron")
    assert result.total == VECTORS.header["count"] > 8000


def test_a_schedule_without_zone_uses_the_operators(monkeypatch: pytest.MonkeyPatch) -> None:
    tokyo = VECTORS.find(label="no prefix: the zone given (Tokyo)")
    utc = VECTORS.find(label="no prefix: the zone given (UTC)")
    assert tokyo["spec"] == utc["spec"] == "0 9 * * *"
    assert tokyo["next"] != utc["next"]
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    assert cron.parse(tokyo["spec"]).next(moment(tokyo["after"])) == moment(tokyo["next"])
    monkeypatch.setenv("TZ", "")
    assert cron.parse(utc["spec"]).next(moment(utc["after"])) == moment(utc["next"])


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
