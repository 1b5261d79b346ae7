"""Kubernetes time stamps on the wire (``metav1.Time``, ``metav1.MicroTime``) and back."""

from __future__ import annotations

import datetime as dt

UTC = dt.UTC


def now() -> dt.datetime:
    return dt.datetime.now(UTC)


def format_time(moment: dt.datetime | None = None) -> str:
    """``metav1.Time``: RFC 3339 in UTC, whole seconds. A naive datetime is taken as UTC; None is now."""
    moment = moment or now()
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(moment: dt.datetime | None = None) -> str:
    """``metav1.MicroTime``: RFC 3339 in UTC with microseconds (Events' eventTime, Leases' renewTime)."""
    moment = moment or now()
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def format_nano_time(moment: dt.datetime | None = None) -> str:
    """RFC 3339 with nanoseconds, as the CRI writes log lines and container timestamps."""
    moment = moment or now()
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond * 1000:09d}Z"


def parse_time(value: object) -> dt.datetime | None:
    """A Kubernetes time stamp (any RFC 3339 form) as an aware datetime; None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def seconds_since(value: object, moment: dt.datetime) -> float | None:
    """Seconds from the time stamp ``value`` to ``moment``; None when ``value`` is not a time stamp."""
    then = parse_time(value)
    return None if then is None else (moment - then).total_seconds()
