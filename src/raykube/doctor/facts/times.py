"""Time facts: Kubernetes timestamps (RFC 3339, as ``metav1.Time`` serialises them) read and printed, and ages in
kubectl's short form (``45s``, ``3m``, ``2h``, ``5d``), for evidence and finding titles (docs/doctor.md, "Reading the
text output")."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    text = value.replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def seconds_since(value: object, now: datetime) -> float | None:
    moment = parse_time(value)
    return None if moment is None else (now - moment).total_seconds()


def human_age(seconds: float | None) -> str | None:
    """kubectl's short age: 45s, 3m, 2h, 5d."""
    if seconds is None:
        return None
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
