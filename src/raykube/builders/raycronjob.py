"""What a RayCronJob makes at each tick, as KubeRay v1.7.0 makes it (``raycronjob_controller.go`` ``constructRayJob``).

Pure: no I/O, the input never mutated. The RayJob is ``<cron>-<Unix minute of the tick>`` (``getRayJobName``: the
same tick always gives the same name, so a repeated create is refused as AlreadyExists, as a CronJob's Jobs) in the
RayCronJob's namespace, labelled
``ray.io/cronjob-name: <cron>``, annotated with the tick it was made for (``ray.io/cronjob-scheduled-timestamp``, UTC,
RFC 3339), owned by the RayCronJob (a controller reference, so deleting the RayCronJob deletes its RayJobs and, through
them, their clusters), and its spec is a copy of ``spec.jobTemplate``. Nothing else of the RayCronJob's metadata is
copied, as in KubeRay.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.builders import names
from raykube.kube import objects, times

__all__ = ["rayjob_name", "scheduled_timestamp", "tick_rayjob"]


def rayjob_name(cronjob_name: str, tick: dt.datetime) -> str:
    """``getRayJobName``: ``<cron>-<tick's Unix time / 60>`` (Go's integer division; ticks are after 1970)."""
    return f"{cronjob_name}-{int(tick.timestamp()) // 60}"


def scheduled_timestamp(tick: dt.datetime) -> str:
    """The annotation value: Go's ``t.UTC().Format(time.RFC3339)`` (whole seconds, ``Z``)."""
    return times.format_time(tick)


def tick_rayjob(cronjob: Mapping[str, Any], *, tick: dt.datetime) -> dict[str, Any]:
    """The RayJob a RayCronJob creates for the activation at ``tick``."""
    name = objects.name(cronjob)
    spec = cronjob.get("spec") or {}
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND_RAYJOB,
        "metadata": {
            "name": rayjob_name(name, tick),
            "namespace": objects.namespace(cronjob),
            "labels": {c.RAY_CRONJOB_NAME_LABEL: name},
            "annotations": {c.RAY_CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION: scheduled_timestamp(tick)},
            "ownerReferences": [names.owner_reference(c.KIND_RAYCRONJOB, name, objects.uid(cronjob))],
        },
        "spec": copy.deepcopy(dict(spec.get("jobTemplate") or {})),
    }
