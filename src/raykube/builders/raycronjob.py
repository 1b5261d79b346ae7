"""What a RayCronJob makes at each tick, as KubeRay v1.6.1 makes it (``raycronjob_controller.go`` ``constructRayJob``).

Pure: no I/O, the input never mutated. The RayJob is ``<cron>-<rand5>`` in the RayCronJob's namespace, labelled
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

__all__ = ["scheduled_timestamp", "tick_rayjob"]


def scheduled_timestamp(tick: dt.datetime) -> str:
    """The annotation value: Go's ``t.UTC().Format(time.RFC3339)`` (whole seconds, ``Z``)."""
    return times.format_time(tick)


def tick_rayjob(cronjob: Mapping[str, Any], *, tick: dt.datetime, suffix: str) -> dict[str, Any]:
    """The RayJob a RayCronJob creates for the activation at ``tick``; ``suffix`` is the name's random part."""
    name = objects.name(cronjob)
    spec = cronjob.get("spec") or {}
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND_RAYJOB,
        "metadata": {
            "name": f"{name}-{suffix}",
            "namespace": objects.namespace(cronjob),
            "labels": {c.RAY_CRONJOB_NAME_LABEL: name},
            "annotations": {c.RAY_CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION: scheduled_timestamp(tick)},
            "ownerReferences": [names.owner_reference(c.KIND_RAYCRONJOB, name, objects.uid(cronjob))],
        },
        "spec": copy.deepcopy(dict(spec.get("jobTemplate") or {})),
    }
