"""Time facts: Kubernetes timestamps (RFC 3339, as ``metav1.Time`` serialises them) read and printed, and ages in
kubectl's short form (``45s``, ``3m``, ``2h``, ``5d``), for evidence and finding titles (docs/doctor.md, "Reading the
text output")."""

from __future__ import annotations

from raykube.kube.times import format_time, parse_time, seconds_since

__all__ = ["format_time", "human_age", "parse_time", "seconds_since"]


def human_age(seconds: float | None) -> str | None:
    """kubectl's short age: 45s, 3m, 2h, 5d."""
    if seconds is None:
        return None
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
