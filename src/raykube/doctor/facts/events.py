"""Event facts: the count, last time and message of an event, whichever API wrote it (core/v1 ``count``/
``lastTimestamp``/``message`` or events.k8s.io/v1 ``series``/``eventTime``/``note``), as evidence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from raykube.doctor.facts.times import format_time, human_age, parse_time
from raykube.doctor.model import Evidence, ObjectRef
from raykube.doctor.snapshot import Obj
from raykube.kube import objects


def event_count(event: Mapping[str, Any]) -> int:
    series = event.get("series") or {}
    return int(series.get("count") or event.get("count") or 1)


def event_time(event: Mapping[str, Any]) -> str | None:
    series = event.get("series") or {}
    for value in (
        series.get("lastObservedTime"),
        event.get("lastTimestamp"),
        event.get("eventTime"),
        event.get("firstTimestamp"),
        objects.meta(event).get("creationTimestamp"),
    ):
        if value:
            return str(value)
    return None


def event_message(event: Mapping[str, Any]) -> str:
    return str(event.get("message") or event.get("note") or "")


def event_evidence(event: Mapping[str, Any], obj: ObjectRef, now: datetime) -> Evidence:
    last = event_time(event)
    moment = parse_time(last)
    return Evidence(
        source="event",
        object=obj,
        reason=str(event.get("reason") or ""),
        message=event_message(event),
        count=event_count(event),
        last_seen=format_time(moment) if moment else None,
        age=human_age((now - moment).total_seconds()) if moment else None,
    )


def latest_events(events: Sequence[Obj], *reasons: str) -> list[Obj]:
    """The events with one of ``reasons`` (all when none given), newest first, one per (reason, message)."""
    chosen: dict[tuple[str, str], Obj] = {}
    for event in events:
        reason = str(event.get("reason") or "")
        if reasons and reason not in reasons:
            continue
        key = (reason, event_message(event))
        if key not in chosen or (event_time(event) or "") > (event_time(chosen[key]) or ""):
            chosen[key] = event
    return sorted(chosen.values(), key=lambda e: event_time(e) or "", reverse=True)
