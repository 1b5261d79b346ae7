"""The RayCronJob reconciler: a RayJob at each tick of a cron schedule, as KubeRay v1.7.0 does (alpha, gated).

KubeRay's ``ray-operator/controllers/ray/raycronjob_controller.go``, re-implemented; the manager registers it only
with ``--feature-gates=RayCronJob=true``, as KubeRay does. A pass:

1. An invalid RayCronJob (``raykube.api.validation.raycronjob``: the name, the schedule, the time zone, the
   ``jobTemplate`` as a RayJob spec) gets a ``Warning InvalidRayCronJobSpec "<ns>/<name>: <error>"`` and nothing else;
   no retry until it changes.
2. ``spec.suspend`` gets ``Normal SuspendedRayCronJob`` (on every pass while suspended, as KubeRay) and nothing else.
3. The next tick after ``status.lastScheduleTime`` (or the creation time), in ``spec.timeZone`` (the operator's zone
   when unset), is computed (:mod:`raykube.api.cron`). Still ahead: look again then. Passed: create the RayJob for it
   (:func:`raykube.builders.raycronjob.tick_rayjob`, named after the tick's minute, so a RayJob that already exists
   for it, from a pass whose status write failed, is taken as made), set ``status.lastScheduleTime`` to the tick, and
   look again at the tick after it. Ticks missed while the operator was down are made up one RayJob per pass (v1.7.0;
   v1.6.1 set the time to *now* and made one RayJob for all of them).

There is no concurrency policy and no history limit (KubeRay v1.7.0 has none): each RayJob cleans up after itself
through its own ``shutdownAfterJobFinishes``/``deletionStrategy``, and deleting the RayCronJob deletes its RayJobs.
The controller no longer watches the RayJobs it owns (v1.7.0 dropped ``Owns(RayJob)``).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api import cron
from raykube.api.resources import RAYCRONJOBS, RAYJOBS
from raykube.api.validation import validate_raycronjob
from raykube.builders import gowrites
from raykube.builders.raycronjob import tick_rayjob
from raykube.controllers.base import Deps, Registration, Result
from raykube.kube import objects, times
from raykube.kube.errors import ApiError

log = logging.getLogger(__name__)

CONTROLLER = "raycronjob"  # controller-runtime's name for KubeRay's RayCronJob controller (metrics, work queue)

Obj = Mapping[str, Any]


def registration(options: object = None) -> Registration:
    """KubeRay v1.7.0 ``RayCronJobReconciler.SetupWithManager``: ``For(RayCronJob)`` only."""
    return (
        Registration.named(CONTROLLER, recorder=c.RAYCRONJOB_CONTROLLER_NAME)
        .for_(RAYCRONJOBS)
        .complete(RayCronJobReconciler)
    )


class RayCronJobReconciler:
    def __init__(self, deps: Deps) -> None:
        self.api = deps.api
        self.cache = deps.cache
        self.recorder = deps.recorder
        self.options = deps.options
        self.clock = deps.clock

    async def reconcile(self, namespace: str, name: str) -> Result:
        obj = self.cache.get(RAYCRONJOBS, namespace, name)
        if obj is None or objects.terminating(obj):
            return Result()
        errors = validate_raycronjob(obj, features=self.options.features)
        if errors:
            note = f"{namespace}/{name}: {errors[0].message}"
            self.recorder.event(obj, c.EVENT_TYPE_WARNING, c.EVENT_INVALID_RAYCRONJOB_SPEC, "Validate", note)
            return Result()
        spec = obj.get("spec") or {}
        if spec.get("suspend"):
            self.recorder.event(
                obj,
                c.EVENT_TYPE_NORMAL,
                c.EVENT_SUSPENDED_RAYCRONJOB,
                "Suspend",
                "RayCronJob suspended, no new RayJobs will be created",
            )
            return Result()
        schedule = cron.parse(str(spec.get("schedule") or ""))
        zone = cron.load_location(str(spec["timeZone"])) if spec.get("timeZone") else None
        now = self.clock()
        status = obj.get("status") or {}
        earliest = times.parse_time(status.get("lastScheduleTime")) or times.parse_time(
            objects.meta(obj).get("creationTimestamp")
        )
        tick = schedule.next(earliest or now, zone)
        if tick is None:
            log.info("RayCronJob %s/%s: schedule %r never fires", namespace, name, spec.get("schedule"))
            return Result()
        if tick > now:
            return Result(_seconds(tick - now))
        rayjob = gowrites.as_kuberay_writes("RayJob", tick_rayjob(obj, tick=tick))  # KubeRay creates its Go struct
        try:
            await self.api.create(RAYJOBS, rayjob, namespace)
            log.info("RayCronJob %s/%s: created RayJob %s", namespace, name, objects.name(rayjob))
        except ApiError as exc:
            if not exc.already_exists:
                raise
            log.info("RayCronJob %s/%s: RayJob %s for this tick exists", namespace, name, objects.name(rayjob))
        await self._write_last_schedule_time(obj, tick)
        following = schedule.next(tick, zone)
        return Result(_seconds(following - now)) if following is not None else Result()

    async def _write_last_schedule_time(self, obj: Obj, now: dt.datetime) -> None:
        """KubeRay ``updateRayCronJobStatus``: ``Status().Update`` of the whole object (its resourceVersion guards
        against a concurrent change)."""
        stamp = times.format_time(now)
        if (obj.get("status") or {}).get("lastScheduleTime") == stamp:
            return
        body = {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "metadata": dict(objects.meta(obj)),
            "status": {**(obj.get("status") or {}), "lastScheduleTime": stamp},
        }
        await self.api.replace(RAYCRONJOBS, objects.name(obj), body, objects.namespace(obj), subresource="status")


def _seconds(delta: dt.timedelta) -> float:
    return max(delta.total_seconds(), 0.0)
